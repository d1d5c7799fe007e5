"""All T time steps of a LIF or CUBA layer in ONE autograd node, with an analytic backward pass.

The forward pass runs the recurrence over ``x.unbind(0)`` without recording a graph and
writes spikes and membrane potentials into preallocated ``[T, B, ...]`` tensors. The
backward pass runs the adjoint recurrence from T-1 down to 0, each step touching its own
slices once, so backward costs O(T), never O(T^2) (indexing ``x[t]`` inside autograd would
allocate a full-size gradient per step).

Saved for backward: the membrane trace ``U`` (one value per neuron-step, the same tensor
that is returned as the membrane output) and, only when the synaptic decay ``alpha`` is
learnt, the synaptic-current trace ``I``. Surrogate derivatives and reset masks are
recomputed from ``U`` step by step while the slice is hot in cache.

Recomputation (``recompute_steps=K``): the T steps run as chunks of K steps (the last one
shorter when K does not divide T). Forward keeps no trace, only the input ``x`` and the state
before each chunk (``ceil(T/K)`` states); backward recomputes one chunk's traces into a K-step
buffer and runs that chunk's adjoint, last chunk first. The recomputation repeats the
forward arithmetic exactly, so outputs and gradients are bit-identical to the single-chunk
pass; backward stays O(T) (one extra forward pass) and no [T, ...] trace is ever allocated
unless the membrane is an output.

The arithmetic follows snnTorch's ``Leaky``/``Synaptic`` (``reset_delay=True``) operation by
operation, so spikes are bit-identical for the same inputs and parameters:

* LIF, subtract: ``U_t = b U_{t-1} + x_t - thr r_t``; zero: ``U_t = b (1 - r_t) U_{t-1} + x_t``
* CUBA: ``I_t = a I_{t-1} + x_t``; subtract: ``U_t = b U_{t-1} + I_t - thr r_t``;
  zero: ``U_t = (1 - r_t)(b U_{t-1} + I_t)``
* ``r_t = H(U_{t-1} - thr)`` (the previous step's spike, no gradient), ``S_t = H(U_t - thr)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from hybridai.spiking.surrogate import Surrogate


def _chunks(steps: int, recompute_steps: int | None) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk of ``recompute_steps`` time steps (one chunk when ``None``)."""
    size = steps if recompute_steps is None else recompute_steps
    return [(start, min(start + size, steps)) for start in range(0, steps, size)]


def _accumulate(total: torch.Tensor | None, term: torch.Tensor, sign: int = 1) -> torch.Tensor:
    """``total + sign * term`` (a fresh tensor on the first call, in place afterwards)."""
    if total is None:
        return term.clone() if sign == 1 else -term
    return total.add_(term, alpha=sign)


def _reduced(total: torch.Tensor | None, parameter: torch.Tensor) -> torch.Tensor:
    """An accumulated gradient summed to ``parameter``'s shape; zeros when no step contributed."""
    return torch.zeros_like(parameter) if total is None else total.sum_to_size(parameter.shape)


def _surrogate_term(
    surrogate: Surrogate, mem_t: torch.Tensor, threshold: torch.Tensor, grad_spike: torch.Tensor, out: torch.Tensor
) -> None:
    """``out = grad_spike * dS/dU`` at ``U = mem_t`` (``out`` doubles as the scratch buffer)."""
    torch.sub(mem_t, threshold, out=out)
    result = surrogate.scaled_derivative(out, grad_spike)
    if result is not out:
        out.copy_(result)


def _steps_of(tensor: torch.Tensor | None, start: int, stop: int) -> tuple[torch.Tensor, ...] | None:
    return tensor[start:stop].unbind(0) if tensor is not None else None


@dataclass
class _Buffers:
    """What a fused forward pass writes into.

    ``mem`` holds all T steps (``full``) or, when the membrane is recomputed in backward and is
    not an output, one chunk's worth of scratch; ``boundaries`` holds the state before each
    chunk (only when there is more than one chunk).
    """

    chunks: list[tuple[int, int]]
    spikes: torch.Tensor
    mem: torch.Tensor
    boundaries: torch.Tensor | None
    full: bool

    @property
    def recompute(self) -> bool:
        return len(self.chunks) > 1

    def trace(self, start: int, stop: int) -> torch.Tensor:
        """Where the membrane of steps ``start:stop`` goes."""
        return self.mem[start:stop] if self.full else self.mem[: stop - start]


def _allocate(
    x: torch.Tensor, recompute_steps: int | None, keep_trace: bool, boundary_shape: tuple[int, ...]
) -> _Buffers:
    """Output and scratch tensors for ``x`` ``[T, B, ...]``; ``boundary_shape`` is one chunk-boundary state."""
    chunks = _chunks(x.shape[0], recompute_steps)
    recompute = len(chunks) > 1
    spikes = torch.empty_like(x, memory_format=torch.contiguous_format)
    full = keep_trace or not recompute
    mem = torch.empty_like(spikes) if full else spikes.new_empty((recompute_steps, *x.shape[1:]))
    boundaries = spikes.new_empty((len(chunks), *boundary_shape)) if recompute else None
    return _Buffers(chunks, spikes, mem, boundaries, full)


def _finish_forward(
    ctx: Any, buffers: _Buffers, reset_to_zero: bool, surrogate: Surrogate, last: torch.Tensor
) -> torch.Tensor:
    """Record on ``ctx`` what backward needs besides the saved tensors; return the membrane output.

    The membrane output is the whole trace, or an empty tensor when only one chunk's scratch was
    kept. It and ``last`` carry no gradient then (one ``mark_non_differentiable`` call: a second
    one would replace the first).
    """
    ctx.reset_to_zero, ctx.surrogate = reset_to_zero, surrogate
    ctx.chunks, ctx.recompute, ctx.state_shape = buffers.chunks, buffers.recompute, tuple(buffers.spikes.shape[1:])
    ctx.set_materialize_grads(False)
    if buffers.full:
        ctx.mark_non_differentiable(last)
        return buffers.mem
    mem = buffers.spikes.new_empty(0)
    ctx.mark_non_differentiable(mem, last)
    return mem


@dataclass(frozen=True)
class _Chunk:
    """One chunk's forward values, as the adjoint reads them: ``U_t`` (and ``I_t``) per step and the state before."""

    start: int
    stop: int
    mems: tuple[torch.Tensor, ...]
    before: torch.Tensor
    syns: tuple[torch.Tensor, ...] | None = None
    syn_before: torch.Tensor | None = None

    def previous_mem(self, t: int) -> torch.Tensor:
        return self.mems[t - 1] if t > 0 else self.before

    def previous_syn(self, t: int) -> torch.Tensor:
        return self.syns[t - 1] if t > 0 else self.syn_before


class _Adjoint:
    """The backward recurrence shared by LIF and CUBA, run chunk by chunk from the last step to the first.

    Holds what carries from step ``t`` to step ``t - 1``: the gradient flowing back through the
    membrane decay (``carry_mem``) and the parameter-gradient sums. Subclasses add their
    synapse and parameters in ``step``.
    """

    def __init__(
        self,
        ctx: Any,
        threshold: torch.Tensor,
        need_threshold: bool,
        grad_spikes: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        like: torch.Tensor,
    ) -> None:
        self.surrogate, self.zero = ctx.surrogate, ctx.reset_to_zero
        self.threshold, self.need_threshold = threshold, need_threshold
        self.grad_spikes, self.grad_mem = grad_spikes, grad_mem
        self.grad_x = like.new_empty((ctx.chunks[-1][1], *ctx.state_shape))  # dL/dx_t
        self.grad_threshold: torch.Tensor | None = None
        self.carry_mem: torch.Tensor | None = None  # dL/dU_{t+1} times dU_{t+1}/dU_t

    def run(self, chunk: _Chunk) -> None:
        """The adjoint over one chunk's steps, last step first."""
        grad_spike_steps = _steps_of(self.grad_spikes, chunk.start, chunk.stop)
        grad_mem_steps = _steps_of(self.grad_mem, chunk.start, chunk.stop)
        grad_x_steps = self.grad_x[chunk.start : chunk.stop].unbind(0)
        for t in range(chunk.stop - chunk.start - 1, -1, -1):
            grad_spike = grad_spike_steps[t] if grad_spike_steps is not None else None
            grad_mem = grad_mem_steps[t] if grad_mem_steps is not None else None
            self.step(chunk, t, grad_spike, grad_mem, grad_x_steps[t])

    def step(
        self,
        chunk: _Chunk,
        t: int,
        grad_spike: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_x: torch.Tensor,
    ) -> None:
        raise NotImplementedError

    def membrane_gradient(
        self, out: torch.Tensor, mem_t: torch.Tensor, grad_spike: torch.Tensor | None, grad_mem: torch.Tensor | None
    ) -> torch.Tensor:
        """``out = dL/dU_t``: the spike output's surrogate term, the membrane output's gradient and the carry."""
        if grad_spike is not None:
            _surrogate_term(self.surrogate, mem_t, self.threshold, grad_spike, out=out)
            if self.need_threshold:
                self.grad_threshold = _accumulate(self.grad_threshold, out, sign=-1)
        else:
            out.zero_()
        if grad_mem is not None:
            out.add_(grad_mem)
        if self.carry_mem is not None:
            out.add_(self.carry_mem)
        return out

    def previous(self, chunk: _Chunk, t: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``U_{t-1}`` and, when a reset or the threshold gradient needs it, the spike ``r_t`` it gave."""
        previous = chunk.previous_mem(t)
        return previous, previous > self.threshold if (self.zero or self.need_threshold) else None


def _lif_run(
    x: torch.Tensor,
    mem: torch.Tensor,
    spikes: torch.Tensor,
    before: torch.Tensor,
    beta: torch.Tensor,
    threshold: torch.Tensor,
    reset_to_zero: bool,
) -> None:
    """The LIF recurrence over ``x`` ``[K, B, ...]`` from the membrane ``before``, into ``mem`` and ``spikes``."""
    previous = before
    previous_spike = (before > threshold).to(x.dtype)
    keep = 1 - previous_spike if reset_to_zero else None
    for x_t, mem_t, spike_t in zip(x.unbind(0), mem.unbind(0), spikes.unbind(0), strict=True):
        if keep is None:
            torch.mul(previous, beta, out=mem_t)
        else:  # snnTorch zeroes the previous membrane before the decay: (1 - r) * U, then beta * that
            torch.mul(keep * previous, beta, out=mem_t)
        mem_t.add_(x_t)
        if not reset_to_zero:
            mem_t.addcmul_(previous_spike, threshold, value=-1)
        torch.gt(mem_t, threshold, out=spike_t)
        if reset_to_zero:
            keep = torch.le(mem_t, threshold).to(x.dtype)
        previous, previous_spike = mem_t, spike_t


def _lif_chunks(
    ctx: Any, saved: tuple[torch.Tensor, ...], beta: torch.Tensor, threshold: torch.Tensor
) -> Iterator[_Chunk]:
    """The chunks' membrane traces, last chunk first: the saved trace, or each chunk recomputed from the input."""
    if not ctx.recompute:
        mem, mem0 = saved
        start, stop = ctx.chunks[0]
        yield _Chunk(start, stop, mem.unbind(0), mem0)
        return
    x, boundaries = saved
    scratch, scratch_spikes = x.new_empty((2, ctx.chunks[0][1], *ctx.state_shape)).unbind(0)
    for index in range(len(ctx.chunks) - 1, -1, -1):
        start, stop = ctx.chunks[index]
        trace, before = scratch[: stop - start], boundaries[index]
        _lif_run(x[start:stop], trace, scratch_spikes[: stop - start], before, beta, threshold, ctx.reset_to_zero)
        yield _Chunk(start, stop, trace.unbind(0), before)


class _LIFAdjoint(_Adjoint):
    """dL/dU_t of LIF; it is also dL/dx_t, so it is computed in place in ``grad_x``."""

    def __init__(self, ctx: Any, beta: torch.Tensor, threshold: torch.Tensor, *grads: Any) -> None:
        need_beta, need_threshold = ctx.needs_input_grad[1:3]
        super().__init__(ctx, threshold, need_threshold, *grads)
        self.beta, self.need_beta = beta, need_beta
        self.grad_beta: torch.Tensor | None = None

    def step(
        self,
        chunk: _Chunk,
        t: int,
        grad_spike: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_x: torch.Tensor,
    ) -> None:
        grad_u = self.membrane_gradient(grad_x, chunk.mems[t], grad_spike, grad_mem)
        previous, previous_spike = self.previous(chunk, t)
        if self.need_threshold and not self.zero:
            self.grad_threshold = _accumulate(self.grad_threshold, grad_u * previous_spike, sign=-1)
        if self.need_beta:
            previous_kept = previous * previous_spike.logical_not() if self.zero else previous
            self.grad_beta = _accumulate(self.grad_beta, grad_u * previous_kept)
        self.carry_mem = grad_u * self.beta
        if self.zero:
            self.carry_mem.mul_(previous_spike.logical_not())


class LIFFunction(torch.autograd.Function):
    """Fused LIF: ``(x, beta, threshold, mem0) -> (spikes, mem, last)``.

    ``spikes`` and ``mem`` are ``[T, B, ...]``; ``last`` is the final membrane ``[B, ...]`` (no
    gradient). With ``recompute_steps`` and ``keep_trace=False``, ``mem`` is an empty tensor.
    """

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        beta: torch.Tensor,
        threshold: torch.Tensor,
        mem0: torch.Tensor,
        reset_to_zero: bool,
        surrogate: Surrogate,
        recompute_steps: int | None = None,
        keep_trace: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        state_shape = tuple(x.shape[1:])
        buffers = _allocate(x, recompute_steps, keep_trace, state_shape)
        before = mem0
        for index, (start, stop) in enumerate(buffers.chunks):
            if buffers.boundaries is not None:
                before = buffers.boundaries[index].copy_(before)
            trace = buffers.trace(start, stop)
            _lif_run(x[start:stop], trace, buffers.spikes[start:stop], before, beta, threshold, reset_to_zero)
            before = trace[-1]
        last = before.clone()
        if buffers.recompute:
            ctx.save_for_backward(x, buffers.boundaries, beta, threshold)
        else:
            ctx.save_for_backward(buffers.mem, mem0, beta, threshold)
        mem = _finish_forward(ctx, buffers, reset_to_zero, surrogate, last)
        return buffers.spikes, mem, last

    @staticmethod
    def backward(ctx: Any, grad_spikes: torch.Tensor | None, grad_mem: torch.Tensor | None, _: Any) -> tuple:
        need_x, need_beta, need_threshold, need_mem0 = ctx.needs_input_grad[:4]
        *saved, beta, threshold = ctx.saved_tensors  # (x, boundaries) when recomputing, else (mem, mem0)
        adjoint = _LIFAdjoint(ctx, beta, threshold, grad_spikes, grad_mem, saved[0])
        for chunk in _lif_chunks(ctx, saved, beta, threshold):
            adjoint.run(chunk)
        return (
            adjoint.grad_x if need_x else None,
            _reduced(adjoint.grad_beta, beta) if need_beta else None,
            _reduced(adjoint.grad_threshold, threshold) if need_threshold else None,
            adjoint.carry_mem.sum_to_size(ctx.state_shape) if need_mem0 else None,
            None,
            None,
            None,
            None,
        )


def _cuba_run(
    x: torch.Tensor,
    mem: torch.Tensor,
    spikes: torch.Tensor,
    syn_trace: torch.Tensor | None,
    syn_before: torch.Tensor,
    before: torch.Tensor,
    alpha: torch.Tensor,
    beta: torch.Tensor,
    threshold: torch.Tensor,
    reset_to_zero: bool,
) -> torch.Tensor:
    """The CUBA recurrence over ``x`` ``[K, B, ...]`` from ``(syn_before, before)``; returns the last current."""
    syn = syn_before
    previous = before
    previous_spike = (before > threshold).to(x.dtype)
    syn_steps = syn_trace.unbind(0) if syn_trace is not None else [None] * x.shape[0]
    for x_t, mem_t, spike_t, syn_t in zip(x.unbind(0), mem.unbind(0), spikes.unbind(0), syn_steps, strict=True):
        syn = torch.mul(syn, alpha, out=syn_t) if syn_t is not None else syn * alpha
        syn.add_(x_t)
        torch.mul(previous, beta, out=mem_t)
        mem_t.add_(syn)
        if reset_to_zero:
            mem_t.mul_(1 - previous_spike)
        else:
            mem_t.addcmul_(previous_spike, threshold, value=-1)
        torch.gt(mem_t, threshold, out=spike_t)
        previous, previous_spike = mem_t, spike_t
    return syn


def _cuba_chunks(
    ctx: Any,
    saved: tuple[torch.Tensor, ...],
    alpha: torch.Tensor,
    beta: torch.Tensor,
    threshold: torch.Tensor,
    keep_syn: bool,
) -> Iterator[_Chunk]:
    """The chunks' membrane (and, with ``keep_syn``, current) traces, last chunk first, saved or recomputed."""
    if not ctx.recompute:
        mem, syn_trace, syn0, mem0 = saved
        start, stop = ctx.chunks[0]
        yield _Chunk(start, stop, mem.unbind(0), mem0, syn_trace.unbind(0) if syn_trace is not None else None, syn0)
        return
    x, boundaries = saved
    scratch = x.new_empty((2 + keep_syn, ctx.chunks[0][1], *ctx.state_shape)).unbind(0)
    for index in range(len(ctx.chunks) - 1, -1, -1):
        start, stop = ctx.chunks[index]
        n = stop - start
        trace, syn_part = scratch[0][:n], scratch[2][:n] if keep_syn else None
        syn_before, before = boundaries[index].unbind(0)
        _cuba_run(
            x[start:stop],
            trace,
            scratch[1][:n],
            syn_part,
            syn_before,
            before,
            alpha,
            beta,
            threshold,
            ctx.reset_to_zero,
        )
        syns = syn_part.unbind(0) if syn_part is not None else None
        yield _Chunk(start, stop, trace.unbind(0), before, syns, syn_before)


class _CUBAAdjoint(_Adjoint):
    """dL/dU_t, dL/dV_t (V = b U_{t-1} + I_t, before the reset) and dL/dI_t of CUBA; dL/dI_t is dL/dx_t."""

    def __init__(
        self,
        ctx: Any,
        alpha: torch.Tensor,
        beta: torch.Tensor,
        threshold: torch.Tensor,
        grad_syn_last: Any,
        *grads: Any,
    ) -> None:
        need_alpha, need_beta, need_threshold = ctx.needs_input_grad[1:4]
        super().__init__(ctx, threshold, need_threshold, *grads)
        self.alpha, self.beta, self.need_alpha, self.need_beta = alpha, beta, need_alpha, need_beta
        self.grad_alpha: torch.Tensor | None = None
        self.grad_beta: torch.Tensor | None = None
        self.carry_syn = grad_syn_last  # a * dL/dI_{t+1} (or the gradient of the last current)
        self.grad_u = self.grad_x.new_empty(ctx.state_shape)

    def step(
        self,
        chunk: _Chunk,
        t: int,
        grad_spike: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_x: torch.Tensor,
    ) -> None:
        grad_u = self.membrane_gradient(self.grad_u, chunk.mems[t], grad_spike, grad_mem)
        previous, previous_spike = self.previous(chunk, t)
        if self.zero:
            grad_v = grad_u * previous_spike.logical_not()
        else:
            grad_v = grad_u
            if self.need_threshold:
                self.grad_threshold = _accumulate(self.grad_threshold, grad_u * previous_spike, sign=-1)
        if self.need_beta:
            self.grad_beta = _accumulate(self.grad_beta, grad_v * previous)
        grad_i = grad_x
        grad_i.copy_(grad_v)
        if self.carry_syn is not None:
            grad_i.add_(self.carry_syn)
        if self.need_alpha:
            self.grad_alpha = _accumulate(self.grad_alpha, grad_i * chunk.previous_syn(t))
        self.carry_mem = grad_v * self.beta
        self.carry_syn = grad_i * self.alpha


class CUBAFunction(torch.autograd.Function):
    """Fused CUBA: ``(x, alpha, beta, threshold, syn0, mem0) -> (spikes, mem, syn_last, last)``.

    ``last`` is the final membrane (no gradient); ``mem`` is empty with ``recompute_steps`` and
    ``keep_trace=False``, as for ``LIFFunction``.
    """

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        alpha: torch.Tensor,
        beta: torch.Tensor,
        threshold: torch.Tensor,
        syn0: torch.Tensor,
        mem0: torch.Tensor,
        reset_to_zero: bool,
        surrogate: Surrogate,
        recompute_steps: int | None = None,
        keep_trace: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        state_shape = tuple(x.shape[1:])
        buffers = _allocate(x, recompute_steps, keep_trace, (2, *state_shape))
        keep_syn = ctx.needs_input_grad[1] and not buffers.recompute
        syn_trace = torch.empty_like(buffers.spikes) if keep_syn else None
        syn, before = syn0, mem0
        for index, (start, stop) in enumerate(buffers.chunks):
            if buffers.boundaries is not None:
                buffers.boundaries[index, 0].copy_(syn)
                buffers.boundaries[index, 1].copy_(before)
                syn, before = buffers.boundaries[index].unbind(0)
            trace = buffers.trace(start, stop)
            syn_part = syn_trace[start:stop] if syn_trace is not None else None
            spikes = buffers.spikes[start:stop]
            syn = _cuba_run(x[start:stop], trace, spikes, syn_part, syn, before, alpha, beta, threshold, reset_to_zero)
            before = trace[-1]
        last = before.clone()
        if buffers.recompute:
            ctx.save_for_backward(x, buffers.boundaries, alpha, beta, threshold)
        else:
            ctx.save_for_backward(buffers.mem, syn_trace, syn0, mem0, alpha, beta, threshold)
        mem = _finish_forward(ctx, buffers, reset_to_zero, surrogate, last)
        return buffers.spikes, mem, syn.clone() if keep_syn else syn, last

    @staticmethod
    def backward(
        ctx: Any,
        grad_spikes: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_syn_last: torch.Tensor | None,
        _: Any,
    ) -> tuple:
        need_x, need_alpha, need_beta, need_threshold, need_syn0, need_mem0 = ctx.needs_input_grad[:6]
        *saved, alpha, beta, threshold = ctx.saved_tensors  # (x, boundaries) or (mem, syn_trace, syn0, mem0)
        adjoint = _CUBAAdjoint(ctx, alpha, beta, threshold, grad_syn_last, grad_spikes, grad_mem, saved[0])
        for chunk in _cuba_chunks(ctx, saved, alpha, beta, threshold, need_alpha):
            adjoint.run(chunk)
        return (
            adjoint.grad_x if need_x else None,
            _reduced(adjoint.grad_alpha, alpha) if need_alpha else None,
            _reduced(adjoint.grad_beta, beta) if need_beta else None,
            _reduced(adjoint.grad_threshold, threshold) if need_threshold else None,
            adjoint.carry_syn.sum_to_size(ctx.state_shape) if need_syn0 else None,
            adjoint.carry_mem.sum_to_size(ctx.state_shape) if need_mem0 else None,
            None,
            None,
            None,
            None,
        )
