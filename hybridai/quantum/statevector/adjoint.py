"""Batched adjoint differentiation (``diff_method="adjoint"``): memory of a few states, not of every gate.

Forward: the steps (``gates.py``) are applied one by one to the whole batch without recording a graph;
only the final state is kept. Backward: ``lam`` = the gradient of the loss with respect to the final state
(autograd through the measurements alone), then ONE sweep from the last step to the first: the state is
taken back through each step by its inverse (``U^dagger``: unitary steps only), the gradient of the step's
matrix comes in closed form for single-qubit layers (one wire at a time, ``kernels.single_gradient``) and
from autograd through that ONE step otherwise, and ``lam`` is taken back by the same inverse. Autograd then
carries the step matrices' gradients to the weights and inputs that built them. States are updated in place
with reused buffers (``Workspace``). Peak memory: a handful of batched states whatever the depth (measured:
about 8.5 states above the imports at 20 qubits, batch 16; ``benchmarks/quantum_adjoint.py``).
A gradient asked for with ``create_graph=True`` (second derivatives) comes from the forward pass re-run under
autograd instead, as ``"backprop"`` computes it, with backprop's memory (checked against ``max_memory``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch

from hybridai.quantum.statevector.gates import Step
from hybridai.quantum.statevector.kernels import apply_permutation, apply_single, apply_single_, single_gradient
from hybridai.quantum.statevector.planning import MIN_STATES, apply_matrix, bit_positions, check_size

ADJOINT_STATES = 8  # states counted for the memory check: state, lam, buffers, the measurements' backward


@functools.lru_cache(maxsize=256)
def _positions(n: int, wires: tuple[int, ...]) -> np.ndarray:
    return bit_positions(n, wires)


def _dagger(m: torch.Tensor) -> torch.Tensor:
    return m.conj().transpose(-1, -2)


class Workspace:
    """Buffers the sweep reuses instead of allocating per gate: a half state (the one temporary of an in-place
    single-qubit gate and of its matrix gradient) and a spare full state (the target of a permutation's gather,
    which then takes the place of the state it came from)."""

    def __init__(self, psi: torch.Tensor) -> None:
        self.half = torch.empty(psi.numel() // 2, dtype=psi.dtype, device=psi.device)
        self.spare = torch.empty_like(psi)


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
    work.spare = psi
    return out


def _parts(step: Step) -> list[int]:
    """A single-qubit layer is applied wire by wire (its parts); any other step at once (one part, 0)."""
    return list(range(len(step.wires))) if step.kind == "sq" else [0]


class _Adjoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, problem: AdjointProblem, *tensors: torch.Tensor):
        psi = problem.initial(tensors)
        work = Workspace(psi)
        for step, tensor in zip(problem.steps[problem.start :], tensors[problem.start :], strict=True):
            for part in _parts(step):
                psi = apply_part(psi, problem.n, step, part, tensor, inverse=False, work=work)
        ctx.problem = problem
        ctx.save_for_backward(psi, *tensors)
        return tuple(problem.measure(psi))

    @staticmethod
    def backward(ctx, *grads: torch.Tensor):
        problem: AdjointProblem = ctx.problem
        psi, *tensors = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a gradient that is differentiable in turn
            return (None, *_differentiable_gradients(problem, tensors, grads, ctx.needs_input_grad[1:]))
        n = problem.n
        psi = psi.clone()  # taken back step by step, in place
        with torch.enable_grad():
            leaf = psi.detach().requires_grad_()
            pairs = [(r, g) for r, g in zip(problem.measure(leaf), grads, strict=True) if g is not None]
            (lam,) = torch.autograd.grad([r for r, _ in pairs], leaf, [g for _, g in pairs], allow_unused=True)
        lam = torch.zeros_like(psi) if lam is None else lam.clone()  # taken back in place as well
        work = Workspace(psi)
        out: list[torch.Tensor | None] = [None] * len(tensors)
        need = ctx.needs_input_grad[1:]
        for i in range(len(tensors) - 1, problem.start - 1, -1):
            step, tensor = problem.steps[i], tensors[i]
            grad = torch.zeros_like(tensor) if need[i] else None
            for part in reversed(_parts(step)):
                psi = apply_part(psi, n, step, part, tensor, inverse=True, work=work)  # the state before this part
                if grad is not None and step.kind == "sq":
                    m = tensor[..., part, :, :]
                    g = single_gradient(psi, lam, n, step.wires[part], m.shape, work.half)
                    grad[..., part, :, :] += g
                elif grad is not None:
                    with torch.enable_grad():
                        t = tensor.detach().requires_grad_()
                        y = apply_part(psi, n, step, part, t, inverse=False)
                        (g,) = torch.autograd.grad(y, t, lam)
                    grad = grad + g
                lam = apply_part(lam, n, step, part, tensor, inverse=True, work=work)
            out[i] = grad
        if problem.start == 1 and need[0]:
            out[0] = lam if tensors[0].dim() == 2 else lam.sum(0)
        return (None, *out)


def _differentiable_gradients(
    problem: AdjointProblem, tensors: list[torch.Tensor], grads: tuple[torch.Tensor, ...], need: tuple[bool, ...]
) -> list[torch.Tensor | None]:
    """The step tensors' gradients as backprop computes them, with a graph (second derivatives, Hessians): the
    forward pass re-run under autograd, out of place. It keeps one state per step, as ``"backprop"`` does; the
    in-place sweep above cannot be differentiated again."""
    if problem.limit is not None:  # refused before re-running, as backprop's own plan would be
        check_size(problem.n, problem.b, problem.cdtype, problem.limit, len(problem.steps) + MIN_STATES)
    psi = problem.initial(tuple(tensors))
    for step, tensor in zip(problem.steps[problem.start :], tensors[problem.start :], strict=True):
        for part in _parts(step):
            psi = apply_part(psi, problem.n, step, part, tensor, inverse=False)
    pairs = [(r, g) for r, g in zip(problem.measure(psi), grads, strict=True) if g is not None]
    wanted = [t for t, n in zip(tensors, need, strict=True) if n]
    if not wanted or not pairs:
        return [None] * len(need)
    found = iter(torch.autograd.grad([r for r, _ in pairs], wanted, [g for _, g in pairs], create_graph=True,
                                     allow_unused=True))  # fmt: skip
    return [next(found) if n else None for n in need]


class AdjointProblem:
    """One tape's steps, register size, batch and measurement function, for ``_Adjoint``."""

    def __init__(
        self,
        steps: list[Step],
        n: int,
        b: int,
        measure: Callable[[torch.Tensor], list[torch.Tensor]],
        cdtype: torch.dtype = torch.complex128,
        limit: int | None = None,
    ):
        self.steps, self.n, self.b, self.measure = steps, n, b, measure
        self.cdtype, self.limit = cdtype, limit  # limit: max_memory (bytes) of a second derivative's re-run
        self.start = 1 if steps and steps[0].kind == "init" else 0

    def initial(self, tensors: tuple[torch.Tensor, ...]) -> torch.Tensor:
        if self.start:
            state = tensors[0]
            return (state if state.dim() == 2 else state.expand(self.b, -1)).clone()
        cdtype = next((t.dtype for t in tensors if t is not None and t.is_complex()), torch.complex128)
        device = next((t.device for t in tensors if t is not None), torch.device("cpu"))
        psi = torch.zeros(self.b, 2**self.n, dtype=cdtype, device=device)
        psi[:, 0] = 1
        return psi


def run_adjoint(
    steps: list[Step],
    n: int,
    b: int,
    cdtype: torch.dtype,
    device: torch.device,
    measure: Callable,
    limit: int | None = None,
) -> list[torch.Tensor]:
    """Measurement results of the steps on ``b`` states, differentiable by one adjoint sweep (and twice, with
    ``create_graph=True``, by a re-run under autograd whose states must fit ``limit`` bytes)."""
    placeholder = torch.zeros((), dtype=cdtype, device=device)  # steps without a tensor (monomials)
    tensors = [placeholder if s.tensor_or_none is None else s.tensor for s in steps]
    if not steps:
        tensors = [placeholder]
        steps = [Step("diag", (), torch.ones(1, dtype=cdtype, device=device), False)]
    return list(_Adjoint.apply(AdjointProblem(steps, n, b, measure, cdtype, limit), *tensors))
