"""The fused CUBA layer: snnTorch's ``Synaptic`` (``reset_delay=True``) over all T steps in one autograd node.

* ``I_t = a I_{t-1} + x_t``; subtract: ``U_t = b U_{t-1} + I_t - thr r_t``;
  zero: ``U_t = (1 - r_t)(b U_{t-1} + I_t)``
* ``r_t = H(U_{t-1} - thr)`` (the previous step's spike, no gradient), ``S_t = H(U_t - thr)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from hybridai.spiking.fused.recurrence import Adjoint, Chunk, accumulate, allocate, finish_forward, reduced
from hybridai.spiking.surrogate import Surrogate


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
    saved: list[torch.Tensor],
    alpha: torch.Tensor,
    beta: torch.Tensor,
    threshold: torch.Tensor,
    keep_syn: bool,
) -> Iterator[Chunk]:
    """The chunks' membrane (and, with ``keep_syn``, current) traces, last chunk first, saved or recomputed."""
    if not ctx.recompute:
        mem, syn_trace, syn0, mem0 = saved
        start, stop = ctx.chunks[0]
        yield Chunk(start, stop, mem.unbind(0), mem0, syn_trace.unbind(0) if syn_trace is not None else None, syn0)
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
        yield Chunk(start, stop, trace.unbind(0), before, syns, syn_before)


class _CUBAAdjoint(Adjoint):
    """dL/dU_t, dL/dV_t (V = b U_{t-1} + I_t, before the reset) and dL/dI_t of CUBA; dL/dI_t is dL/dx_t."""

    def __init__(
        self,
        ctx: Any,
        alpha: torch.Tensor,
        beta: torch.Tensor,
        threshold: torch.Tensor,
        grad_syn_last: torch.Tensor | None,
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
        chunk: Chunk,
        t: int,
        grad_spike: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_x: torch.Tensor,
    ) -> None:
        grad_u = self.membrane_gradient(self.grad_u, chunk.mems[t], grad_spike, grad_mem)
        previous = chunk.previous_mem(t)
        if self.zero:
            grad_v = grad_u * self.spiked(previous).logical_not()
        else:
            grad_v = grad_u
            if self.need_threshold:
                self.grad_threshold = accumulate(self.grad_threshold, grad_u * self.spiked(previous), sign=-1)
        if self.need_beta:
            self.grad_beta = accumulate(self.grad_beta, grad_v * previous)
        grad_i = grad_x
        grad_i.copy_(grad_v)
        if self.carry_syn is not None:
            grad_i.add_(self.carry_syn)
        if self.need_alpha:
            self.grad_alpha = accumulate(self.grad_alpha, grad_i * chunk.previous_syn(t))
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
        buffers = allocate(x, recompute_steps, keep_trace, (2, *state_shape))
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
        mem = finish_forward(ctx, buffers, reset_to_zero, surrogate, last)
        return buffers.spikes, mem, syn.clone() if keep_syn else syn, last

    @staticmethod
    def backward(
        ctx: Any,
        grad_spikes: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_syn_last: torch.Tensor | None,
        _: Any,
    ) -> tuple[torch.Tensor | None, ...]:
        need_x, need_alpha, need_beta, need_threshold, need_syn0, need_mem0 = ctx.needs_input_grad[:6]
        *saved, alpha, beta, threshold = ctx.saved_tensors  # (x, boundaries) or (mem, syn_trace, syn0, mem0)
        adjoint = _CUBAAdjoint(ctx, alpha, beta, threshold, grad_syn_last, grad_spikes, grad_mem, saved[0])
        for chunk in _cuba_chunks(ctx, saved, alpha, beta, threshold, need_alpha):
            adjoint.run(chunk)
        return (
            adjoint.grad_x if need_x else None,
            reduced(adjoint.grad_alpha, alpha) if need_alpha else None,
            reduced(adjoint.grad_beta, beta) if need_beta else None,
            reduced(adjoint.grad_threshold, threshold) if need_threshold else None,
            adjoint.carried_state(adjoint.carry_syn, ctx.state_shape) if need_syn0 else None,
            adjoint.carried_state(adjoint.carry_mem, ctx.state_shape) if need_mem0 else None,
            None,
            None,
            None,
            None,
        )
