"""Batched adjoint differentiation (``diff_method="adjoint"``): memory of a few states, not of every gate.

``cut`` cuts the steps (``gates.py``) into blocks: a product start (leading one-wire steps on |0...0>, built as a
Kronecker product of columns) and rotation layers (one-wire steps on at least half the wires, as a cycle of
batched GEMMs over chunks of wires), both in ``rotations.py``; permutation runs (a CNOT ring as one gather) and
single steps, in ``blocks.py``.
Forward: the blocks are applied to the whole batch without recording a graph; only the final state is kept, with
the measurements' graph. Backward: ``lam`` = the gradient of the loss with respect to the final state (autograd
through the measurements alone: ONE bra, ``sum_i g_i O_i |psi>``, whatever the number of observables), then ONE
sweep from the last block to the first: ``lam`` and the state are taken back through each block's inverse
(unitary steps only; the state only as far as the first block that differentiates) and each block's gradient
comes from the two (for a rotation layer, ``lam psi^H`` on each chunk of wires, one GEMM per batch row); the
product start's by contracting ``lam`` with its columns. Autograd then carries the step tensors' gradients to the
weights and inputs that built them. States are updated in place or swapped with one spare state (``Workspace``).
Peak memory: the final state, ``lam``, the spare and the measurements' backward, whatever the depth (measured with
``benchmarks/quantum_adjoint.py``).
A gradient asked for with ``create_graph=True`` (second derivatives) comes from the forward pass re-run under
autograd instead, as ``"backprop"`` computes it, with backprop's memory (checked against ``max_memory``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from hybridai.quantum.statevector.blocks import Permutation, Single, Workspace, apply_part, parts
from hybridai.quantum.statevector.gates import Step
from hybridai.quantum.statevector.memory import MIN_STATES, check_size
from hybridai.quantum.statevector.rotations import Product, Rotation, one_wire

ADJOINT_STATES = 8  # states counted for the memory check: state, lam, buffers, the measurements' backward


def _measured(problem: AdjointProblem, psi: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(a leaf sharing ``psi``, the measurements of it with their graph)."""
    with torch.enable_grad():
        leaf = psi.detach().requires_grad_()
        return leaf, problem.measure(leaf)


class _Adjoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, problem: AdjointProblem, *tensors: torch.Tensor):
        psi = problem.run(tensors)
        leaf, measured = _measured(problem, psi)  # the measurements' graph, kept for ``lam``
        results = tuple(r.detach() for r in measured)
        ctx.problem, ctx.measured = problem, (leaf, measured)
        # the final state, taken back in place by the sweep unless a result shares it (a measured state)
        ctx.shared = any(r.untyped_storage().data_ptr() == psi.untyped_storage().data_ptr() for r in results)
        ctx.save_for_backward(*tensors)
        return results

    @staticmethod
    def backward(ctx, *grads: torch.Tensor):
        problem: AdjointProblem = ctx.problem
        tensors = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a gradient that is differentiable in turn
            return (None, *_differentiable_gradients(problem, tensors, grads, ctx.needs_input_grad[1:]))
        measured, ctx.measured = ctx.measured, None  # the sweep's own from here (freed with it)
        leaf, results = measured if measured is not None else _measured(problem, problem.run(tensors))
        pairs = [(r, g) for r, g in zip(results, grads, strict=True) if g is not None and r.requires_grad]
        lam = None
        if pairs:
            (lam,) = torch.autograd.grad([r for r, _ in pairs], leaf, [g for _, g in pairs], allow_unused=True)
        psi = leaf.detach().clone() if ctx.shared else leaf.detach()
        del measured, leaf, results, pairs
        lam = torch.zeros_like(psi) if lam is None else lam.contiguous()
        return (None, *problem.sweep_back(psi, lam, tensors, ctx.needs_input_grad[1:]))


def _differentiable_gradients(
    problem: AdjointProblem, tensors: tuple[torch.Tensor, ...], grads: tuple[torch.Tensor, ...], need: tuple[bool, ...]
) -> list[torch.Tensor | None]:
    """The step tensors' gradients as backprop computes them, with a graph (second derivatives, Hessians): the
    forward pass re-run under autograd, out of place, step by step. It keeps one state per step, as
    ``"backprop"`` does; the in-place sweep cannot be differentiated again."""
    if problem.limit is not None:  # refused before re-running, as backprop's own plan would be
        check_size(problem.n, problem.b, problem.cdtype, problem.limit, len(problem.steps) + MIN_STATES)
    psi = problem.initial(tensors)
    for step, tensor in zip(problem.steps[problem.start :], tensors[problem.start :], strict=True):
        for part in parts(step):
            psi = apply_part(psi, problem.n, step, part, tensor, inverse=False)
    pairs = [(r, g) for r, g in zip(problem.measure(psi), grads, strict=True) if g is not None]
    wanted = [t for t, n in zip(tensors, need, strict=True) if n]
    if not wanted or not pairs:
        return [None] * len(need)
    found = iter(torch.autograd.grad([r for r, _ in pairs], wanted, [g for _, g in pairs], create_graph=True,
                                     allow_unused=True))  # fmt: skip
    return [next(found) if n else None for n in need]


Block = Single | Permutation | Rotation


def cut(steps: list[Step], n: int, start: int) -> tuple[Product | None, list[Block]]:
    """The product start (None where the tape begins with a given state or with a step on several wires) and the
    blocks of the remaining steps, in order: one-wire runs on at least half the wires as rotation layers, runs of
    constant monomial gates as permutations, anything else step by step."""
    i, product = start, None
    if start == 0:
        while i < len(steps) and one_wire(steps[i]):
            i += 1
        product = Product(list(range(i))) if i else None
    blocks: list[Block] = []
    while i < len(steps):
        j = i
        while j < len(steps) and one_wire(steps[j]):
            j += 1
        if j > i and 2 * len({w for s in steps[i:j] for w in s.wires}) >= n:
            blocks.append(Rotation(list(range(i, j)), steps, n))
            i = j
            continue
        j = i
        while j < len(steps) and steps[j].kind == "mono":
            j += 1
        blocks.append(Permutation(list(range(i, j)), steps) if j > i else Single(i))
        i = max(j, i + 1)
    return product, blocks


class AdjointProblem:
    """One tape's steps (cut into blocks), register size, batch and measurement function, for ``_Adjoint``."""

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
        self.product: Product | None
        self.blocks: list[Block]
        self.product, self.blocks = cut(steps, n, self.start)

    def initial(self, tensors: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """The state before the steps (a given state, or |0...0>), a new ``[B, 2^n]`` tensor."""
        if self.start:
            state = tensors[0]
            return (state if state.dim() == 2 else state.expand(self.b, -1)).clone()
        cdtype = next((t.dtype for t in tensors if t is not None and t.is_complex()), torch.complex128)
        device = next((t.device for t in tensors if t is not None), torch.device("cpu"))
        psi = torch.zeros(self.b, 2**self.n, dtype=cdtype, device=device)
        psi[:, 0] = 1
        return psi

    def run(self, tensors: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """The final state (no graph), a tensor of its own."""
        if self.product is not None:
            psi = self.product.initial(self.n, self.b, self.steps, tensors)
        else:
            psi = self.initial(tensors)
        work = Workspace(psi)
        for block in self.blocks:
            psi = block.forward(psi, self.n, self.steps, tensors, work)
        return psi

    def sweep_back(
        self, psi: torch.Tensor, lam: torch.Tensor, tensors: tuple[torch.Tensor, ...], need: tuple[bool, ...]
    ) -> list[torch.Tensor | None]:
        """The step tensors' gradients: ``psi`` (the final state) and ``lam`` (its gradient), both the sweep's
        own, taken back block by block."""
        out: list[torch.Tensor | None] = [None] * len(tensors)
        work = Workspace(psi)
        # the state is taken back only as far as the first block that differentiates (the product start needs lam)
        first = next((k for k, block in enumerate(self.blocks) if block.differentiates(need)), len(self.blocks))
        for k in range(len(self.blocks) - 1, -1, -1):
            block = self.blocks[k]
            psi, lam, found = block.backward(psi, lam, self.n, self.steps, tensors, need, work, state=first < k)
            for i, g in found.items():
                out[i] = g
        del psi, work
        if self.product is not None:
            for i, g in self.product.gradients(lam, self.n, self.steps, tensors, need).items():
                out[i] = g
        elif self.start == 1 and need[0]:
            out[0] = lam if tensors[0].dim() == 2 else lam.sum(0)
        return out


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
