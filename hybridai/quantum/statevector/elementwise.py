"""Gates applied elementwise, without a BLAS's complex matrix product.

``apply_single(psi, n, wire, m)``: a 2x2 matrix (or one per sample, ``[B, 2, 2]``) on one wire of
``psi [B, 2^n]`` as four elementwise products on the two halves ``[B, left, right]`` of the state
(no transposed copy, no GEMM); ``apply_single_`` does it in place with one half-state temporary.
``single_gradient``: the gradient of the loss with respect to that matrix from the state before the
gate and the gradient at its output (PyTorch's convention for complex tensors: ``sum(lam * conj(x))``),
without evaluating the gate. ``apply_permutation``: a gate with one non-zero per row (CNOT, SWAP,
Toffoli, CZ, S...) as ONE gather over the whole state (index cached per gate and wires) and a phase.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from hybridai.quantum.statevector.primitives import bit_positions, replace_bits


def _halves(psi: torch.Tensor, n: int, wire: int) -> torch.Tensor:
    return psi.reshape(psi.shape[0], 2**wire, 2, 2 ** (n - wire - 1))


def apply_single(psi: torch.Tensor, n: int, wire: int, m: torch.Tensor) -> torch.Tensor:
    """``m`` (``[2, 2]`` or ``[B, 2, 2]``) applied on ``wire`` of ``psi [B, 2^n]``."""
    v = _halves(psi, n, wire)
    a, b = v[:, :, 0], v[:, :, 1]
    if m.dim() == 3:
        m = m[:, None, None]  # [B, 1, 1, 2, 2] against halves [B, left, right]
    out = torch.stack([m[..., 0, 0] * a + m[..., 0, 1] * b, m[..., 1, 0] * a + m[..., 1, 1] * b], 2)
    return out.reshape(psi.shape)


def apply_single_(psi: torch.Tensor, n: int, wire: int, m: torch.Tensor, scratch: Any = None) -> torch.Tensor:
    """``apply_single`` in place on ``psi`` (one half-state temporary, ``scratch`` when given): for states the
    caller owns."""
    v = _halves(psi, n, wire)
    a, b = v[:, :, 0], v[:, :, 1]
    if m.dim() == 3:
        m = m[:, None, None]
    first = a.clone() if scratch is None else scratch.view(a.shape).copy_(a)
    a.mul_(m[..., 0, 0]).addcmul_(b, m[..., 0, 1])
    b.mul_(m[..., 1, 1]).addcmul_(first, m[..., 1, 0])
    return psi


def single_gradient(
    x: torch.Tensor, lam: torch.Tensor, n: int, wire: int, shape: torch.Size, scratch: Any = None
) -> torch.Tensor:
    """The gradient (``shape``: ``[2, 2]`` or ``[B, 2, 2]``) of the matrix of a one-wire gate whose input
    state was ``x`` and whose output gradient is ``lam`` (both ``[B, 2^n]``); ``scratch``: a half-state buffer."""
    xv, lv = _halves(x, n, wire), _halves(lam, n, wire)

    def product_sum(i: int, j: int) -> torch.Tensor:
        a, b = lv[:, :, i], xv[:, :, j].conj()
        return (a * b if scratch is None else torch.mul(a, b, out=scratch.view(a.shape))).sum((1, 2))

    rows = [[product_sum(i, j) for j in range(2)] for i in range(2)]
    g = torch.stack([torch.stack(r, -1) for r in rows], -2)  # [B, 2, 2]
    return g.sum_to_size(shape)


@functools.lru_cache(maxsize=256)
def permutation(n: int, wires: tuple[int, ...], const: tuple, inverse: bool) -> tuple[torch.Tensor, Any]:
    """(gather index, phases or None) with ``(G psi)[s] = phase[s] * psi[index[s]]`` for the monomial gate
    ``const = (local permutation, local phases)`` on ``wires`` (``inverse``: for its adjoint)."""
    local_perm, local_phase = (np.asarray(a) for a in const)
    local = bit_positions(n, wires)
    index = replace_bits(n, wires, local_perm[local])
    phase = local_phase[local]
    if inverse:
        index = np.argsort(index)
        phase = phase[index].conj()
    return torch.as_tensor(index), None if np.allclose(phase, 1) else torch.as_tensor(phase)


def apply_permutation(
    psi: torch.Tensor, n: int, wires: tuple[int, ...], const: tuple, inverse: bool, out: Any = None
) -> torch.Tensor:
    """A monomial gate (or its adjoint) on ``psi [B, 2^n]`` as one gather and, if it has phases, one product
    (into ``out``, a tensor like ``psi``, when given)."""
    index, phase = permutation(n, wires, const, inverse)
    index = index.to(psi.device)
    result = psi.index_select(1, index) if out is None else torch.index_select(psi, 1, index, out=out)
    if phase is None:
        return result
    phase = phase.to(psi.device, psi.dtype)
    return result * phase if out is None else result.mul_(phase)
