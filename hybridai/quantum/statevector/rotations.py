"""One-wire runs of the adjoint sweep: per wire one 2x2 matrix (the product of the run's steps on it).

- the *product start* (``Product``): the leading one-wire steps acting on |0...0> (embeddings, a first rotation
  layer), whose state is the Kronecker product of one column per wire; its gradient: ``lam`` contracted with the
  conjugates of the other columns, by halves (two passes over ``lam``), then autograd from the columns to the
  steps' tensors, once, at the end of the sweep;
- *rotation layers* (``Rotation``): consecutive one-wire steps (single-qubit layers, RZ, PhaseShift, X, H...)
  touching at least half the wires, applied as a cycle of batched GEMMs over chunks of ``KRON_CHUNK`` wires:
  ``X^T @ M^T`` with ``X = psi[b].view(2^c, -1)`` applies the chunk's Kronecker product ``M`` to the leading c
  qubits and moves them last, so after the cycle the layout is back, with no copies between and no per-wire pass.
  Gradient: gates on other wires commute with a chunk's and cancel between ``lam`` and ``psi``, so the gradient of
  the chunk's matrix ``U`` is ``K U`` with ``K = sum lam psi^H`` over the rest of the register, taken while the
  chunk leads (one GEMM per batch row); autograd carries it through the small Kronecker products to the steps'
  tensors.
"""

from __future__ import annotations

from typing import Any

import torch

from hybridai.quantum.statevector.blocks import Grads, Workspace, differentiable
from hybridai.quantum.statevector.gates import Step
from hybridai.quantum.statevector.primitives import KRON_CHUNK, kron


def one_wire(step: Step) -> bool:
    return step.kind == "sq" or (step.kind in ("dense", "diag", "mono") and len(step.wires) == 1)


def _wire_matrices(indices: list[int], steps: list[Step], tensors: Any) -> dict[int, torch.Tensor]:
    """Per wire, the product of the one-wire steps' matrices (``[2, 2]`` or ``[B, 2, 2]``), later steps left."""
    mats: dict[int, torch.Tensor] = {}
    for i in indices:
        step, t = steps[i], tensors[i]
        if step.kind == "sq":
            factors = [(w, t[..., j, :, :]) for j, w in enumerate(step.wires)]
        elif step.kind == "dense":
            factors = [(step.wires[0], t)]
        elif step.kind == "diag":
            factors = [(step.wires[0], torch.diag_embed(t))]
        else:
            perm, phases = step.const
            m = torch.zeros(2, 2, dtype=t.dtype, device=t.device)
            m[torch.arange(2), torch.as_tensor(perm)] = torch.as_tensor(phases, dtype=t.dtype, device=t.device)
            factors = [(step.wires[0], m)]
        for w, m in factors:
            mats[w] = m if w not in mats else m @ mats[w]
    return mats


def _kron_columns(columns: list[torch.Tensor]) -> torch.Tensor:
    """The Kronecker product ``[B or 1, 2^k]`` of per-wire columns ``[B or 1, 2]`` (first wire most significant)."""
    state = columns[0]
    for column in columns[1:]:
        rows = max(state.shape[0], column.shape[0])
        state = (state.unsqueeze(-1) * column.unsqueeze(-2)).reshape(rows, -1)
    return state


def _contract(t: torch.Tensor, v: torch.Tensor, last: bool) -> torch.Tensor:
    """``t [B, a, c]`` contracted with ``v [B or 1, c]`` (``last``) or ``[B or 1, a]`` over that axis."""
    if v.shape[0] == 1:
        return t @ v[0] if last else t.transpose(1, 2) @ v[0]
    return (t @ v.unsqueeze(-1)).squeeze(-1) if last else (v.unsqueeze(1) @ t).squeeze(1)


def _column_gradients(t: torch.Tensor, columns: list[torch.Tensor]) -> list[torch.Tensor]:
    """The gradient of every column of a product state whose gradient is ``t [B, 2^m]``: ``t`` contracted with the
    conjugates of all other columns, by halves (two passes over ``t``, then over tensors of 2^(m/2) entries)."""
    if len(columns) == 1:
        return [t if columns[0].shape[0] > 1 else t.sum(0, keepdim=True)]
    half = len(columns) // 2
    left, right = columns[:half], columns[half:]
    view = t.view(t.shape[0], 2**half, -1)
    on_left = _contract(view, _kron_columns(right).conj(), last=True)
    on_right = _contract(view, _kron_columns(left).conj(), last=False)
    return _column_gradients(on_left, left) + _column_gradients(on_right, right)


class Product:
    """The leading one-wire steps from |0...0>: the state as the Kronecker product of one column per wire, its
    gradient by contracting ``lam`` with the other columns (``_column_gradients``) and autograd from the columns
    to the steps' tensors."""

    def __init__(self, indices: list[int]) -> None:
        self.indices = indices

    def columns(self, n: int, steps: list[Step], tensors: Any) -> list[torch.Tensor]:
        """Per wire, its state ``[B or 1, 2]``."""
        mats = _wire_matrices(self.indices, steps, tensors)
        some = next(iter(mats.values()))
        zero = torch.tensor([[1, 0]], dtype=some.dtype, device=some.device)
        return [mats[w][..., :, 0].reshape(-1, 2) if w in mats else zero for w in range(n)]

    def initial(self, n: int, b: int, steps: list[Step], tensors: Any) -> torch.Tensor:
        """The state as a new ``[B, 2^n]`` tensor the sweep owns (one product of the two halves' states)."""
        columns = self.columns(n, steps, tensors)
        if n == 1:
            return columns[0].expand(b, -1).clone()
        left, right = _kron_columns(columns[: n // 2]), _kron_columns(columns[n // 2 :])
        state = (left.unsqueeze(-1) * right.unsqueeze(-2)).reshape(max(left.shape[0], right.shape[0]), -1)
        return state if state.shape[0] == b else state.expand(b, -1).clone()

    def gradients(self, lam: torch.Tensor, n: int, steps: list[Step], tensors: Any, need: Any) -> Grads:
        leaves, wanted = differentiable(self.indices, tensors, need)
        if not wanted:
            return {}
        with torch.enable_grad():
            columns = self.columns(n, steps, leaves)
        grads = _column_gradients(lam, [c.detach() for c in columns])
        pairs = [(c, g) for c, g in zip(columns, grads, strict=True) if c.requires_grad]
        found = torch.autograd.grad([c for c, _ in pairs], [leaves[i] for i in wanted], [g for _, g in pairs],
                                    allow_unused=True)  # fmt: skip
        return {i: g for i, g in zip(wanted, found, strict=True) if g is not None}


def chunk_sizes(n: int) -> list[int]:
    return [KRON_CHUNK] * (n // KRON_CHUNK) + ([n % KRON_CHUNK] if n % KRON_CHUNK else [])


def _rotate(psi: torch.Tensor, m_t: torch.Tensor, work: Workspace) -> torch.Tensor:
    """``M`` (given as ``M^T``, ``[d, d]`` or ``[B, d, d]``) applied to the leading log2(d) qubits of every row
    of ``psi [B, 2^n]``, which then come last (one batched GEMM into the spare state)."""
    b, d = psi.shape[0], m_t.shape[-1]
    out = work.spare.view(b, -1, d)
    torch.bmm(psi.view(b, d, -1).transpose(1, 2), m_t.expand(b, d, d), out=out)
    return work.swap(psi, out.view(b, -1))


class Rotation:
    """Consecutive one-wire steps touching at least half the wires: per wire one 2x2 matrix, per chunk of
    ``KRON_CHUNK`` wires their Kronecker product, applied as a cycle of batched GEMMs (see the module's doc)."""

    def __init__(self, indices: list[int], steps: list[Step], n: int) -> None:
        self.indices = indices
        self.chunks: list[tuple[int, ...]] = []
        start = 0
        for size in chunk_sizes(n):
            self.chunks.append(tuple(range(start, start + size)))
            start += size
        touched = {w for i in indices for w in steps[i].wires}
        self.touched = [any(w in touched for w in chunk) for chunk in self.chunks]

    def differentiates(self, need: Any) -> bool:
        return any(need[i] for i in self.indices)

    def matrices(self, steps: list[Step], tensors: Any, chunks: list[int]) -> list[torch.Tensor]:
        mats = _wire_matrices(self.indices, steps, tensors)
        some = next(iter(mats.values()))
        eye = torch.eye(2, dtype=some.dtype, device=some.device)
        return [kron([mats.get(w, eye) for w in self.chunks[j]]) for j in chunks]

    def forward(self, psi: torch.Tensor, n: int, steps: list[Step], tensors: Any, work: Workspace) -> torch.Tensor:
        for u in self.matrices(steps, tensors, list(range(len(self.chunks)))):
            psi = _rotate(psi, u.transpose(-1, -2), work)
        return psi

    def backward(
        self,
        psi: torch.Tensor,
        lam: torch.Tensor,
        n: int,
        steps: list[Step],
        tensors: Any,
        need: Any,
        work: Workspace,
        state: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, Grads]:
        """``psi`` and ``lam`` taken back through the block and its steps' gradients; ``state=False``: ``psi`` is
        not needed before the block (no earlier block differentiates), taken back only as far as the block's own
        gradients need it."""
        differentiate = any(need[i] for i in self.indices)
        us = self.matrices(steps, tensors, list(range(len(self.chunks))))
        ks: dict[int, torch.Tensor] = {}
        last = max((j for j, t in enumerate(self.touched) if t), default=-1) if differentiate else -1
        for j, u in enumerate(us):
            if differentiate and self.touched[j]:
                ks[j] = _cross(lam, psi, u.shape[-1], batched=u.dim() == 3) @ u  # gradient of the chunk's matrix
            inverse_t = u.conj().resolve_conj()  # (U^dagger)^T
            if state or j < last:
                psi = _rotate(psi, inverse_t, work)
            lam = _rotate(lam, inverse_t, work)
        if not ks:
            return psi, lam, {}
        leaves, wanted = differentiable(self.indices, tensors, need)
        with torch.enable_grad():
            built = self.matrices(steps, leaves, list(ks))
            found = torch.autograd.grad(built, [leaves[i] for i in wanted], list(ks.values()), allow_unused=True)
        return psi, lam, {i: g for i, g in zip(wanted, found, strict=True) if g is not None}


def _cross(lam: torch.Tensor, psi: torch.Tensor, d: int, batched: bool) -> torch.Tensor:
    """``K = lam psi^H`` on the leading log2(d) qubits, summed over the rest of the register (and over the batch
    unless ``batched``): ``[d, d]`` or ``[B, d, d]``. One GEMM per batch row (a batched GEMM would copy the
    conjugate)."""
    b = psi.shape[0]
    xl, xp = lam.view(b, d, -1), psi.view(b, d, -1)
    if batched:
        k = torch.empty(b, d, d, dtype=psi.dtype, device=psi.device)
        for r in range(b):
            torch.mm(xl[r], xp[r].mH, out=k[r])
        return k
    k = torch.zeros(d, d, dtype=psi.dtype, device=psi.device)
    for r in range(b):
        k.addmm_(xl[r], xp[r].mH)
    return k
