"""Run a compiled ``Plan`` on a batch of parameter sets: Pauli coefficients ``[B, 4, ..., 4]`` of the noisy states.

The state holds ``c_P = tr(rho P)`` for every Pauli word ``P`` on the ``m`` simulated qubits (real; float64, or
float32 for ``dtype="complex64"``), one row per parameter set. First everything that does not touch the state is
computed for all gates at once, to keep the number of torch calls (Python overhead dominates small circuits) low:
the angles (one gather and multiply-add where they are affine in one parameter), the parametric PTMs per group,
every single-qubit chain's product (gathered from one pool, multiplied pairwise in ``log2`` levels), every block's
Kronecker product of chains. What reads no parameter that differs between rows (the trained weights, constant or
trained noise rates: the plan is made for which parameters are given per row) is computed once, as ``[D, D]``
matrices; only the rest is ``[D, D, rows]``. Then each block's matrix (a constant, or ``[B, D, D]`` when it
varies by row) is applied by moving the block's axes next to each other and one matrix product: one GEMM over the whole
batch for a constant, one batched product otherwise. Everything is a torch operation on the parameters' device, so
autograd differentiates it (twice, too).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from hybridai.core.errors import ShapeError
from hybridai.quantum.density import pennylane_channels
from hybridai.quantum.density.plan import Plan


def run(plan: Plan, values: torch.Tensor, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """The final Pauli coefficients ``[rows, 4, ..., 4]`` for the circuit parameters ``values`` (``[P, rows]``:
    ``theta[i]`` in row i). What reads no parameter that varies between rows (the plan knows which) is computed
    once, as ``[D, D]`` matrices."""
    tensors = plan.tensors(device, dtype)
    rows = values.shape[1]
    params = _parametric(plan, tensors, values)
    fixed, moving = _chains(plan, tensors, params, rows)
    krons = {key: v.unbind(2) for key, v in _krons(tensors, fixed, moving, rows).items()}  # unbind: ONE backward,
    singles = {False: () if fixed is None else fixed.unbind(2),  # not one per select
               True: () if moving is None else moving.unbind(2)}  # fmt: skip
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
                varying, position = tensors["chain_place"][what]
                factor = singles[varying][position]
            else:
                varying, position = tensors["kron_place"][what]
                factor = krons[what[0], varying][position]
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


def _parametric(plan: Plan, tensors: dict, values: torch.Tensor) -> list[torch.Tensor]:
    """Every parametric factor's PTM per group (matrix size, frequencies, whether it varies): batch-last
    ``[D, D, G, rows]`` for a group that varies between rows, ``[D, D, G]`` (made once) for one that does not."""
    rows = values.shape[1]
    names = Named(values)  # angles that are not affine in one parameter read them by name
    first = values[:, :1]  # a group that varies with no row reads any row: the first
    first_names = Named(first)
    out = []
    for g, (_, kind, members) in enumerate(plan.groups):
        varying = plan.group_varying[g]
        used, used_names, width = (values, names, rows) if varying else (first, first_names, 1)
        if kind is None:  # PennyLane channels: PTMs of their rates, kind by kind
            entries, restore = tensors["groups"][g]
            made = torch.cat([_channels(spec, rates, used) for spec, rates in entries], 2)[:, :, restore]
        else:
            made = _gates(plan, tensors["groups"][g], members, used, used_names, width)
        out.append(made if varying else made[..., 0])
    return out


def _gates(plan: Plan, group: tuple, members: list[int], values: torch.Tensor, names: Mapping[str, torch.Tensor],
           rows: int) -> torch.Tensor:  # fmt: skip
    """The PTMs ``[D, D, G, rows]`` of one group of parametric gates."""
    constant, frequencies, cos_terms, sin_terms, affine = group
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
    return matrices if frequencies else matrices.expand(-1, -1, -1, rows)


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


def _chains(
    plan: Plan, tensors: dict, params: list[torch.Tensor], rows: int
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Every single-qubit chain's product: the chains that read no varying factor as ``[4, 4, C]`` (made once),
    the others batch-last ``[4, 4, C, rows]``. Each chain's factors are gathered from one pool, then multiplied
    pairwise, level by level (``log2`` of the longest chain products for all chains together)."""
    if not plan.chains:
        return None, None
    fixed_table, moving_table = tensors["chain_tables"]
    one_qubit = [(g, p) for g, p in enumerate(params) if plan.groups[g][0] == 4]
    fixed = moving = None
    if fixed_table.shape[1]:
        pool = [tensors["chain_pool"]] + [p[..., 0] if plan.group_varying[g] else p for g, p in one_qubit]
        fixed = _pairwise(torch.cat(pool, 2)[:, :, fixed_table])  # [4, 4, L, C] -> [4, 4, C]
    if moving_table.shape[1]:
        pool = [tensors["chain_pool"][..., None].expand(-1, -1, -1, rows)]
        pool += [p if plan.group_varying[g] else p[..., None].expand(-1, -1, -1, rows) for g, p in one_qubit]
        moving = _pairwise(torch.cat(pool, 2)[:, :, moving_table])  # [4, 4, L, C, rows] -> [4, 4, C, rows]
    return fixed, moving


def _pairwise(factors: torch.Tensor) -> torch.Tensor:
    """The products of the factors ``[4, 4, L, C, ...]`` along L (the later factor on the left): ``[4, 4, C, ...]``."""
    while factors.shape[2] > 1:
        length, half = factors.shape[2], factors.shape[2] // 2
        paired = _product(factors[:, :, 1 : 2 * half : 2], factors[:, :, 0 : 2 * half : 2])
        factors = torch.cat([paired, factors[:, :, 2 * half :]], 2) if length % 2 else paired
    return factors[:, :, 0]


def _krons(
    tensors: dict, fixed: torch.Tensor | None, moving: torch.Tensor | None, rows: int
) -> dict[tuple[int, bool], torch.Tensor]:
    """The Kronecker products of chains of every k-qubit block piece, ``{(k, varies): [4^k, 4^k, N]`` for rows
    of constant chains, ``[4^k, 4^k, N, rows]`` for the others``}``."""
    out = {}
    identity = tensors["identity"][:, :, None]
    for (k, varies), table in tensors["kron_tables"].items():
        if not table.shape[0]:
            continue
        if varies:
            assert moving is not None
            parts = [moving] + ([] if fixed is None else [fixed[..., None].expand(-1, -1, -1, rows)])
            extended = torch.cat([*parts, identity[..., None].expand(-1, -1, -1, rows)], 2)
        else:
            extended = identity if fixed is None else torch.cat([fixed, identity], 2)
        picked = extended[:, :, table]  # [4, 4, N, k, ...]
        product = picked[:, :, :, 0]
        for j in range(1, k):
            product = _kron(product, picked[:, :, :, j])
        out[k, varies] = product
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


class Named(Mapping):
    """``theta[i]`` -> row i of the stacked parameters (what angles that are not affine read, by name)."""

    def __init__(self, values: torch.Tensor) -> None:
        self.stacked = values

    def __getitem__(self, name: str) -> torch.Tensor:
        if not (name.startswith("theta[") and name.endswith("]")):
            raise KeyError(name)
        return self.stacked[int(name[6:-1])]

    def __iter__(self) -> Iterator[str]:
        return (f"theta[{i}]" for i in range(len(self.stacked)))

    def __len__(self) -> int:
        return len(self.stacked)
