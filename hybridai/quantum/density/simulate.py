"""Run a compiled ``Plan`` on a batch of parameter sets: Pauli coefficients ``[B, 4, ..., 4]`` of the noisy states.

The state holds ``c_P = tr(rho P)`` for every Pauli word ``P`` on the ``m`` simulated qubits (real; float64, or
float32 for ``dtype="complex64"``), one row per parameter set. First everything that does not touch the state is
computed for all gates at once, to keep the number of torch calls (Python overhead dominates small circuits) low:
the angles (one gather and multiply-add where they are affine in one parameter), the parametric PTMs per group,
every single-qubit chain's product (gathered from one pool, multiplied pairwise in ``log2`` levels), every block's
Kronecker product of chains. Then each block's matrix (a constant, or ``[B, D, D]`` when it holds parametric
gates) is applied by moving the block's axes next to each other and one matrix product: one GEMM over the whole
batch for a constant, one batched product otherwise. Everything is a torch operation on the parameters' device, so
autograd differentiates it (twice, too).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import torch

from hybridai.core.errors import ShapeError
from hybridai.quantum.density import pennylane_channels
from hybridai.quantum.density.plan import Plan


def run(plan: Plan, values: torch.Tensor, names: Mapping[str, torch.Tensor], device: torch.device,
        dtype: torch.dtype) -> torch.Tensor:  # fmt: skip
    """The final Pauli coefficients ``[rows, 4, ..., 4]`` for the circuit parameters ``values`` (``[P, rows]``:
    ``theta[i]`` in row i; ``names``: the same by name, for angles that are not affine in one of them)."""
    tensors = plan.tensors(device, dtype)
    rows = values.shape[1]
    params = _parametric(plan, tensors, values, names)
    chains = _chains(plan, tensors, params, rows)
    krons = {k: v.unbind(2) for k, v in _krons(tensors, chains, rows).items()}  # unbind: ONE backward, not one per
    singles = None if chains is None else chains.unbind(2)  # select (each would fill a gradient of the whole)
    unbound: dict[int, tuple[torch.Tensor, ...]] = {}
    state = tensors["initial"].expand(rows, -1).view(rows, *(4,) * plan.m)
    for block in plan.blocks:
        matrix: torch.Tensor | None = None
        for kind, what in block.pieces:
            if kind == "c":
                factor = tensors["constants"][what]
            elif kind == "p":
                param = plan.params[what]
                if param.group not in unbound:
                    unbound[param.group] = params[param.group].unbind(2)
                factor = unbound[param.group][param.slot]
            elif kind == "h":
                assert singles is not None  # a plan with "h" pieces has single-qubit chains
                factor = singles[what]
            else:
                factor = krons[what[0]][what[1]]
            matrix = factor if matrix is None else _product(factor, matrix)
        assert matrix is not None  # every block has at least one piece
        state = apply(
            state, matrix if matrix.dim() == 2 else matrix.permute(2, 0, 1).contiguous(), block.qubits, plan.m
        )
    return state


def expectations(plan: Plan, state: torch.Tensor) -> torch.Tensor:
    """``tr(rho O)`` of every observable of the plan's readout: ``[rows, R]``."""
    tensors = plan.tensors(state.device, state.dtype)
    flat = state.reshape(state.shape[0], -1)
    return flat[:, tensors["indices"]] @ tensors["weights"]


# Small matrices for many rows are kept batch-last, ``[D, D, ..., rows]``: their products are then elementwise
# operations on long contiguous rows (4x faster than batched matrix products of 4x4 blocks).


def _product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` of ``[D, D]`` constants and batch-last ``[D, D, ...]`` matrices."""
    if a.dim() == 2 and b.dim() == 2:
        return a @ b
    if a.dim() == 2:
        return (a @ b.reshape(b.shape[0], -1)).view(b.shape)
    if b.dim() == 2:
        return torch.tensordot(b, a, dims=([0], [1])).movedim(0, 1)  # out[i, k] = sum_j a[i, j] b[j, k]
    return (a[:, :, None] * b[None]).sum(1)


def _parametric(
    plan: Plan, tensors: dict, values: torch.Tensor, names: Mapping[str, torch.Tensor]
) -> list[torch.Tensor]:
    """Every parametric gate's PTM, batch-last ``[D, D, G, rows]`` per group (matrix size, frequencies)."""
    rows = values.shape[1]
    out = []
    for g, (_, kind, members) in enumerate(plan.groups):
        if kind is None:  # PennyLane channels: PTMs of their rates, kind by kind
            entries, restore = tensors["groups"][g]
            out.append(torch.cat([_channels(spec, rates, values) for spec, rates in entries], 2)[:, :, restore])
            continue
        constant, frequencies, cos_terms, sin_terms, affine = tensors["groups"][g]
        if affine is not None:
            index, scale, shift = affine
            angles = values[index] * scale[:, None] + shift[:, None]  # [G, rows]
        else:
            angles = torch.stack([_rows(_angle(plan.params[i], names), rows, values) for i in members])
        matrices = constant[..., None]  # [D, D, G, 1]
        for f, frequency in enumerate(frequencies):
            phase = angles if frequency == 1.0 else angles * frequency
            matrices = matrices + cos_terms[f][..., None] * torch.cos(phase)
            matrices = matrices + sin_terms[f][..., None] * torch.sin(phase)
        out.append(matrices if frequencies else matrices.expand(-1, -1, -1, rows))
    return out


def _angle(param: Any, names: Mapping[str, torch.Tensor]) -> Any:
    """A gate's angle for the parameters ``names``."""
    assert param.angle is not None  # gates have angles (channels have rates)
    return param.angle(names)


def _channels(spec: Any, rates: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """The PTMs ``[D, D, G, rows]`` of G channels of one kind (``spec``'s) whose rates are the rows ``rates [G, R]``
    of ``values``, after checking the rates' ranges."""
    columns = [values[rates[:, j]] for j in range(rates.shape[1])]  # each [G, rows]
    pennylane_channels.check_rates(spec, columns)
    return pennylane_channels.ptm(spec, columns)


def _rows(value: Any, rows: int, like: torch.Tensor) -> torch.Tensor:
    """An angle as ``[rows]``."""
    value = torch.as_tensor(value, dtype=like.dtype, device=like.device)
    if value.dim() == 0:
        return value.expand(rows)
    if value.shape != (rows,):
        raise ShapeError(f"a gate angle of shape {tuple(value.shape)}; accepted: a scalar or [{rows}] (one per row)")
    return value


def _chains(plan: Plan, tensors: dict, params: list[torch.Tensor], rows: int) -> torch.Tensor | None:
    """Every single-qubit chain's product, batch-last ``[4, 4, C, rows]``: its factors gathered from one pool, then
    multiplied pairwise, level by level (``log2`` of the longest chain products for all chains together)."""
    if not plan.chains:
        return None
    pool = [tensors["chain_pool"][..., None].expand(-1, -1, -1, rows)]
    pool += [params[g] for g, (d, _, _) in enumerate(plan.groups) if d == 4]
    factors = torch.cat(pool, 2)[:, :, tensors["chain_table"]]  # [4, 4, L, C, rows]
    while factors.shape[2] > 1:
        length, half = factors.shape[2], factors.shape[2] // 2
        paired = _product(factors[:, :, 1 : 2 * half : 2], factors[:, :, 0 : 2 * half : 2])  # later factor left
        factors = torch.cat([paired, factors[:, :, 2 * half :]], 2) if length % 2 else paired
    return factors[:, :, 0]


def _krons(tensors: dict, chains: torch.Tensor | None, rows: int) -> dict[int, torch.Tensor]:
    """The Kronecker products of chains of every k-qubit block piece: ``{k: [4^k, 4^k, table rows, rows]}``."""
    if chains is None:
        return {}
    identity = tensors["identity"][:, :, None, None].expand(-1, -1, 1, rows)
    extended = torch.cat([chains, identity], 2)  # index -1: the identity
    out = {}
    for k, table in tensors["kron_tables"].items():
        picked = extended[:, :, table]  # [4, 4, N, k, rows]
        product = picked[:, :, :, 0]
        for j in range(1, k):
            product = _kron(product, picked[:, :, :, j])
        out[k] = product
    return out


def _kron(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Kronecker product of batch-last ``[p, p, ...]`` and ``[q, q, ...]``."""
    p, q = a.shape[0], b.shape[0]
    out = a[:, None, :, None] * b[None, :, None, :]
    return out.reshape(p * q, p * q, *out.shape[4:])


@functools.lru_cache(maxsize=4096)
def _permutations(m: int, qubits: tuple[int, ...], batched: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The axis order that puts ``qubits`` first (after the batch axis when ``batched``), and its inverse."""
    targets = [q + 1 for q in qubits]
    rest = [a + 1 for a in range(m) if a not in qubits]
    order = [0, *targets, *rest] if batched else [*targets, 0, *rest]
    inverse = [0] * len(order)
    for i, a in enumerate(order):
        inverse[a] = i
    return tuple(order), tuple(inverse)


def apply(state: torch.Tensor, matrix: torch.Tensor, qubits: tuple[int, ...], m: int) -> torch.Tensor:
    """``matrix`` (``[D, D]`` or ``[rows, D, D]``) on the Pauli axes of ``qubits`` of ``state [rows, 4, ..., 4]``."""
    rows, d = state.shape[0], matrix.shape[-1]
    batched = matrix.dim() == 3
    order, inverse = _permutations(m, qubits, batched)
    moved = state.permute(order)
    if batched:
        out = torch.bmm(matrix, moved.reshape(rows, d, -1))
    else:
        out = matrix @ moved.reshape(d, -1)
    return out.view([moved.shape[i] for i in range(len(order))]).permute(inverse)
