"""The fused LIF layer: snnTorch's ``Leaky`` (``reset_delay=True``) over all T steps in one autograd node.

* subtract: ``U_t = b U_{t-1} + x_t - thr r_t``; zero: ``U_t = b (1 - r_t) U_{t-1} + x_t``
* ``r_t = H(U_{t-1} - thr)`` (the previous step's spike, no gradient), ``S_t = H(U_t - thr)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from hybridai.spiking.fused.recurrence import Adjoint, Chunk, accumulate, allocate, finish_forward, reduced
from hybridai.spiking.surrogate import Surrogate


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


def _lif_chunks(ctx: Any, saved: list[torch.Tensor], beta: torch.Tensor, threshold: torch.Tensor) -> Iterator[Chunk]:
    """The chunks' membrane traces, last chunk first: the saved trace, or each chunk recomputed from the input."""
    if not ctx.recompute:
        mem, mem0 = saved
        start, stop = ctx.chunks[0]
        yield Chunk(start, stop, mem.unbind(0), mem0)
        return
    x, boundaries = saved
    scratch, scratch_spikes = x.new_empty((2, ctx.chunks[0][1], *ctx.state_shape)).unbind(0)
    for index in range(len(ctx.chunks) - 1, -1, -1):
        start, stop = ctx.chunks[index]
        trace, before = scratch[: stop - start], boundaries[index]
        _lif_run(x[start:stop], trace, scratch_spikes[: stop - start], before, beta, threshold, ctx.reset_to_zero)
        yield Chunk(start, stop, trace.unbind(0), before)


class _LIFAdjoint(Adjoint):
    """dL/dU_t of LIF; it is also dL/dx_t, so it is computed in place in ``grad_x``."""

    def __init__(self, ctx: Any, beta: torch.Tensor, threshold: torch.Tensor, *grads: Any) -> None:
        need_beta, need_threshold = ctx.needs_input_grad[1:3]
        super().__init__(ctx, threshold, need_threshold, *grads)
        self.beta, self.need_beta = beta, need_beta
        self.grad_beta: torch.Tensor | None = None

    def step(
        self,
        chunk: Chunk,
        t: int,
        grad_spike: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_x: torch.Tensor,
    ) -> None:
        grad_u = self.membrane_gradient(grad_x, chunk.mems[t], grad_spike, grad_mem)
        previous = chunk.previous_mem(t)
        if self.zero:  # U_t = b (1 - r_t) U_{t-1} + x_t
            kept = self.spiked(previous).logical_not()
            if self.need_beta:
                self.grad_beta = accumulate(self.grad_beta, grad_u * (previous * kept))
            self.carry_mem = grad_u * self.beta
            self.carry_mem.mul_(kept)
            return
        if self.need_threshold:  # U_t = b U_{t-1} + x_t - thr r_t
            self.grad_threshold = accumulate(self.grad_threshold, grad_u * self.spiked(previous), sign=-1)
        if self.need_beta:
            self.grad_beta = accumulate(self.grad_beta, grad_u * previous)
        self.carry_mem = grad_u * self.beta


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
        buffers = allocate(x, recompute_steps, keep_trace, state_shape)
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
        mem = finish_forward(ctx, buffers, reset_to_zero, surrogate, last)
        return buffers.spikes, mem, last

    @staticmethod
    def backward(
        ctx: Any, grad_spikes: torch.Tensor | None, grad_mem: torch.Tensor | None, _: Any
    ) -> tuple[torch.Tensor | None, ...]:
        need_x, need_beta, need_threshold, need_mem0 = ctx.needs_input_grad[:4]
        *saved, beta, threshold = ctx.saved_tensors  # (x, boundaries) when recomputing, else (mem, mem0)
        adjoint = _LIFAdjoint(ctx, beta, threshold, grad_spikes, grad_mem, saved[0])
        for chunk in _lif_chunks(ctx, saved, beta, threshold):
            adjoint.run(chunk)
        return (
            adjoint.grad_x if need_x else None,
            reduced(adjoint.grad_beta, beta) if need_beta else None,
            reduced(adjoint.grad_threshold, threshold) if need_threshold else None,
            adjoint.carried_state(adjoint.carry_mem, ctx.state_shape) if need_mem0 else None,
            None,
            None,
            None,
            None,
        )
