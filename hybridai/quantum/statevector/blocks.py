"""The adjoint sweep's blocks (``adjoint.cut`` cuts a tape's steps into them), apart from one-wire runs
(``rotations.py``: the product start and rotation layers):

- *permutation runs* (``Permutation``): consecutive constant gates with one non-zero per row (a CNOT ring, CZ,
  S...) as ONE gather by a cached index (and one phase product), forward and back;
- *single steps* (``Single``): anything else, one part at a time (``apply_part``), with its own gradient.

Every block applies itself forward (``forward``) and, in the backward sweep, takes the state and ``lam`` back
through its inverse and returns its steps' gradients (``backward``); ``differentiates`` says whether it needs the
state for them. States are updated in place or written into the ``Workspace``'s spare state, which then takes the
place of the one read.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from hybridai.quantum.statevector.elementwise import apply_permutation, apply_single, apply_single_, single_gradient
from hybridai.quantum.statevector.gates import Step
from hybridai.quantum.statevector.primitives import apply_matrix, bit_positions

Grads = dict[int, torch.Tensor]


class Workspace:
    """Buffers the sweep reuses instead of allocating per gate: a half state (the one temporary of an in-place
    single-qubit gate and of its matrix gradient) and a spare full state (the target of a gather or a GEMM, which
    then takes the place of the state it came from)."""

    def __init__(self, psi: torch.Tensor) -> None:
        self.spare = torch.empty_like(psi)
        self._half: torch.Tensor | None = None

    @property
    def half(self) -> torch.Tensor:
        """Made when first asked for (only single steps use it)."""
        if self._half is None:
            self._half = torch.empty(self.spare.numel() // 2, dtype=self.spare.dtype, device=self.spare.device)
        return self._half

    def swap(self, old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
        """``new`` (written into the spare state) replaces ``old``, which becomes the spare."""
        self.spare = old
        return new


# -- single steps -------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _positions(n: int, wires: tuple[int, ...]) -> np.ndarray:
    return bit_positions(n, wires)


def _dagger(m: torch.Tensor) -> torch.Tensor:
    return m.conj().transpose(-1, -2)


def apply_part(
    psi: torch.Tensor,
    n: int,
    step: Step,
    part: int,
    tensor: torch.Tensor,
    inverse: bool,
    work: Workspace | None = None,
) -> torch.Tensor:
    """Apply one step (or wire ``part`` of a single-qubit layer) to ``psi [B, 2^n]``; ``inverse``: its adjoint.
    ``tensor``: the step's tensor (any placeholder for a constant step, which has none).
    With a ``work`` space the step works in place on ``psi`` (the sweep owns its states) or swaps it with the
    spare buffer; without, it returns a new tensor."""
    if step.kind == "sq":
        m = tensor[..., part, :, :]
        m = _dagger(m) if inverse else m
        if work is None:
            return apply_single(psi, n, step.wires[part], m)
        return apply_single_(psi, n, step.wires[part], m, work.half)
    if step.kind == "dense":
        return apply_matrix(psi, n, step.wires, _dagger(tensor) if inverse else tensor)
    if step.kind == "diag":
        index = torch.as_tensor(_positions(n, step.wires), device=psi.device)
        phase = tensor[..., index]
        phase = phase.conj() if inverse else phase
        return psi * phase if work is None else psi.mul_(phase)
    if work is None:
        return apply_permutation(psi, n, step.wires, step.const, inverse)
    out = apply_permutation(psi, n, step.wires, step.const, inverse, out=work.spare)
    return work.swap(psi, out)


def parts(step: Step) -> list[int]:
    """A single-qubit layer is applied wire by wire (its parts); any other step at once (one part, 0)."""
    return list(range(len(step.wires))) if step.kind == "sq" else [0]


class Single:
    """One step, applied part by part; its gradient in closed form for single-qubit layers
    (``kernels.single_gradient``) and by autograd through the step alone otherwise."""

    def __init__(self, i: int) -> None:
        self.indices = [i]

    def forward(self, psi: torch.Tensor, n: int, steps: list[Step], tensors: Any, work: Workspace) -> torch.Tensor:
        (i,) = self.indices
        for part in parts(steps[i]):
            psi = apply_part(psi, n, steps[i], part, tensors[i], inverse=False, work=work)
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
        (i,) = self.indices
        step, tensor = steps[i], tensors[i]
        grad = torch.zeros_like(tensor) if need[i] else None
        for part in reversed(parts(step)):
            if state or grad is not None:
                psi = apply_part(psi, n, step, part, tensor, inverse=True, work=work)  # the state before this part
            if grad is not None and step.kind == "sq":
                m = tensor[..., part, :, :]
                grad[..., part, :, :] += single_gradient(psi, lam, n, step.wires[part], m.shape, work.half)
            elif grad is not None:
                with torch.enable_grad():
                    t = tensor.detach().requires_grad_()
                    y = apply_part(psi, n, step, part, t, inverse=False)
                    (g,) = torch.autograd.grad(y, t, lam)
                grad = grad + g
            lam = apply_part(lam, n, step, part, tensor, inverse=True, work=work)
        return psi, lam, {} if grad is None else {i: grad}

    def differentiates(self, need: Any) -> bool:
        return bool(need[self.indices[0]])


# -- permutation runs ---------------------------------------------------------------------------------------


def _local_bits(index: np.ndarray, n: int, wires: tuple[int, ...]) -> np.ndarray:
    """Per basis index, its local index on ``wires`` (first wire most significant)."""
    local = np.zeros_like(index)
    for w in wires:
        local = (local << 1) | ((index >> (n - 1 - w)) & 1)
    return local


@functools.lru_cache(maxsize=8)  # 4 x 2^n entries each (64 MiB at 22 qubits): a few runs' worth
def _run_permutation(n: int, gates: tuple, device: torch.device) -> tuple[torch.Tensor, Any, torch.Tensor, Any]:
    """(gather index, phases or None) with ``(G psi)[s] = phase[s] * psi[index[s]]`` for the product ``G`` of the
    monomial ``gates`` ((wires, (local permutation, local phases)) in order), then the same for its adjoint. Per
    gate a few integer operations on 2^n indices (int32 below 31 qubits): a table of how each local basis state
    moves the bits of the basis index."""
    index = np.arange(2**n, dtype=np.int32 if n < 31 else np.int64)
    perm, phase = index, None
    for wires, (local_perm, local_phase) in gates:
        k = len(wires)

        def spread(v: int, wires: tuple[int, ...] = wires, k: int = k) -> int:
            return sum(((v >> (k - 1 - j)) & 1) << (n - 1 - w) for j, w in enumerate(wires))

        move = np.array([spread(local_perm[v]) - spread(v) for v in range(2**k)], dtype=index.dtype)
        local = _local_bits(index, n, wires)
        p = index + move[local]
        perm = perm[p]
        if phase is not None:
            phase = phase[p]
        if not np.allclose(local_phase, 1):
            factor = np.asarray(local_phase, dtype=np.complex128)[local]
            phase = factor if phase is None else factor * phase
    inverse = np.empty_like(perm)
    inverse[perm] = index
    inverse_phase = None if phase is None else phase[inverse].conj()

    def tensor(a: Any, integer: bool = False) -> Any:
        return None if a is None else torch.as_tensor(a.astype(np.int64) if integer else a, device=device)

    return tensor(perm, True), tensor(phase), tensor(inverse, True), tensor(inverse_phase)


class Permutation:
    """Consecutive constant monomial gates as one gather (and one phase product), forward and back."""

    def __init__(self, indices: list[int], steps: list[Step]) -> None:
        self.indices = indices
        self.gates = tuple((steps[i].wires, steps[i].const) for i in indices)

    def apply(self, psi: torch.Tensor, n: int, inverse: bool, work: Workspace) -> torch.Tensor:
        forward_index, forward_phase, inverse_index, inverse_phase = _run_permutation(n, self.gates, psi.device)
        index, phase = (inverse_index, inverse_phase) if inverse else (forward_index, forward_phase)
        out = torch.gather(psi, 1, index.expand(psi.shape), out=work.spare)
        if phase is not None:
            out.mul_(phase.to(psi.dtype))
        return work.swap(psi, out)

    def forward(self, psi: torch.Tensor, n: int, steps: list[Step], tensors: Any, work: Workspace) -> torch.Tensor:
        return self.apply(psi, n, False, work)

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
        return self.apply(psi, n, True, work) if state else psi, self.apply(lam, n, True, work), {}

    def differentiates(self, need: Any) -> bool:
        return False


def differentiable(indices: list[int], tensors: Any, need: Any) -> tuple[list[Any], list[int]]:
    """The tensors with the ones to differentiate replaced by detached leaves; the indices of these."""
    wanted = [i for i in indices if need[i]]
    leaves = list(tensors)
    for i in wanted:
        leaves[i] = tensors[i].detach().requires_grad_()
    return leaves, wanted
