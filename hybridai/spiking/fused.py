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

Checkpointing (``chunk_steps=K``): the T steps run as chunks of K steps (the last one shorter
when K does not divide T). Forward keeps no trace, only the input ``x`` and the state before
each chunk (``ceil(T/K)`` states); backward recomputes one chunk's traces into a K-step
buffer and runs that chunk's adjoint, last chunk first. The recomputation repeats the
forward arithmetic exactly, so outputs and gradients are bit-identical to the unchunked
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

from typing import Any

import torch

from .surrogate import Surrogate


def _chunks(steps: int, chunk_steps: int | None) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk of ``chunk_steps`` time steps (one chunk when ``None``)."""
    size = steps if chunk_steps is None else chunk_steps
    return [(start, min(start + size, steps)) for start in range(0, steps, size)]


def _accumulate(total: torch.Tensor | None, term: torch.Tensor, sign: int = 1) -> torch.Tensor:
    """``total + sign * term`` (a fresh tensor on the first call, in place afterwards)."""
    if total is None:
        return term.clone() if sign == 1 else -term
    return total.add_(term, alpha=sign)


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


class LIFFunction(torch.autograd.Function):
    """Fused LIF: ``(x, beta, threshold, mem0) -> (spikes, mem, last)``.

    ``spikes`` and ``mem`` are ``[T, B, ...]``; ``last`` is the final membrane ``[B, ...]`` (no
    gradient). With ``chunk_steps`` and ``keep_trace=False``, ``mem`` is an empty tensor.
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
        chunk_steps: int | None = None,
        keep_trace: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        steps, state_shape = x.shape[0], tuple(x.shape[1:])
        chunks = _chunks(steps, chunk_steps)
        checkpointed = len(chunks) > 1
        spikes = torch.empty_like(x, memory_format=torch.contiguous_format)
        full = keep_trace or not checkpointed
        mem = torch.empty_like(spikes) if full else spikes.new_empty((chunk_steps, *state_shape))
        boundaries = spikes.new_empty((len(chunks), *state_shape)) if checkpointed else None
        before = mem0
        for index, (start, stop) in enumerate(chunks):
            if boundaries is not None:
                before = boundaries[index].copy_(before)
            trace = mem[start:stop] if full else mem[: stop - start]
            _lif_run(x[start:stop], trace, spikes[start:stop], before, beta, threshold, reset_to_zero)
            before = trace[-1]
        last = before.clone()
        ctx.reset_to_zero, ctx.surrogate, ctx.chunks, ctx.state_shape = reset_to_zero, surrogate, chunks, state_shape
        ctx.checkpointed = checkpointed
        if checkpointed:
            ctx.save_for_backward(x, boundaries, beta, threshold)
        else:
            ctx.save_for_backward(mem, mem0, beta, threshold)
        ctx.set_materialize_grads(False)
        if not full:
            mem = spikes.new_empty(0)
            ctx.mark_non_differentiable(mem)
        ctx.mark_non_differentiable(last)
        return spikes, mem, last

    @staticmethod
    def backward(ctx: Any, grad_spikes: torch.Tensor | None, grad_mem: torch.Tensor | None, _: Any) -> tuple:
        need_x, need_beta, need_threshold, need_mem0 = ctx.needs_input_grad[:4]
        zero = ctx.reset_to_zero
        if ctx.checkpointed:
            x, boundaries, beta, threshold = ctx.saved_tensors
            size = ctx.chunks[0][1]
            scratch, scratch_spikes = x.new_empty((2, size, *ctx.state_shape)).unbind(0)
        else:
            mem, mem0, beta, threshold = ctx.saved_tensors
        grad_x = (x if ctx.checkpointed else mem).new_empty((ctx.chunks[-1][1], *ctx.state_shape))
        grad_beta = grad_threshold = None
        carry = None  # dL/dU_{t+1} times dU_{t+1}/dU_t
        for index in range(len(ctx.chunks) - 1, -1, -1):
            start, stop = ctx.chunks[index]
            if ctx.checkpointed:  # recompute this chunk's membrane trace
                trace, before = scratch[: stop - start], boundaries[index]
                _lif_run(x[start:stop], trace, scratch_spikes[: stop - start], before, beta, threshold, zero)
            else:
                trace, before = mem, mem0
            mems = trace.unbind(0)
            grad_spike_steps = _steps_of(grad_spikes, start, stop)
            grad_mem_steps = _steps_of(grad_mem, start, stop)
            grad_x_steps = grad_x[start:stop].unbind(0)
            for t in range(stop - start - 1, -1, -1):
                grad_t = grad_x_steps[t]  # becomes dL/dU_t, which is dL/dx_t
                if grad_spike_steps is not None:
                    _surrogate_term(ctx.surrogate, mems[t], threshold, grad_spike_steps[t], out=grad_t)
                    if need_threshold:
                        grad_threshold = _accumulate(grad_threshold, grad_t, sign=-1)
                else:
                    grad_t.zero_()
                if grad_mem_steps is not None:
                    grad_t.add_(grad_mem_steps[t])
                if carry is not None:
                    grad_t.add_(carry)
                previous = mems[t - 1] if t > 0 else before
                previous_spike = previous > threshold if (zero or need_threshold) else None
                if need_threshold and not zero:
                    grad_threshold = _accumulate(grad_threshold, grad_t * previous_spike, sign=-1)
                if need_beta:
                    previous_kept = previous * previous_spike.logical_not() if zero else previous
                    grad_beta = _accumulate(grad_beta, grad_t * previous_kept)
                carry = grad_t * beta
                if zero:
                    carry.mul_(previous_spike.logical_not())
        return (
            grad_x if need_x else None,
            grad_beta.sum_to_size(beta.shape) if need_beta else None,
            grad_threshold.sum_to_size(threshold.shape) if need_threshold else None,
            carry.sum_to_size(ctx.state_shape) if need_mem0 else None,
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


class CUBAFunction(torch.autograd.Function):
    """Fused CUBA: ``(x, alpha, beta, threshold, syn0, mem0) -> (spikes, mem, syn_last, last)``.

    ``last`` is the final membrane (no gradient); ``mem`` is empty with ``chunk_steps`` and
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
        chunk_steps: int | None = None,
        keep_trace: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        steps, state_shape = x.shape[0], tuple(x.shape[1:])
        chunks = _chunks(steps, chunk_steps)
        checkpointed = len(chunks) > 1
        spikes = torch.empty_like(x, memory_format=torch.contiguous_format)
        full = keep_trace or not checkpointed
        mem = torch.empty_like(spikes) if full else spikes.new_empty((chunk_steps, *state_shape))
        keep_syn = ctx.needs_input_grad[1] and not checkpointed
        syn_trace = torch.empty_like(spikes) if keep_syn else None
        boundaries = spikes.new_empty((len(chunks), 2, *state_shape)) if checkpointed else None
        syn, before = syn0, mem0
        for index, (start, stop) in enumerate(chunks):
            if boundaries is not None:
                boundaries[index, 0].copy_(syn)
                boundaries[index, 1].copy_(before)
                syn, before = boundaries[index].unbind(0)
            trace = mem[start:stop] if full else mem[: stop - start]
            syn_part = syn_trace[start:stop] if syn_trace is not None else None
            syn = _cuba_run(
                x[start:stop], trace, spikes[start:stop], syn_part, syn, before, alpha, beta, threshold, reset_to_zero
            )
            before = trace[-1]
        last = before.clone()
        ctx.reset_to_zero, ctx.surrogate, ctx.chunks, ctx.state_shape = reset_to_zero, surrogate, chunks, state_shape
        ctx.checkpointed = checkpointed
        if checkpointed:
            ctx.save_for_backward(x, boundaries, alpha, beta, threshold)
        else:
            ctx.save_for_backward(mem, syn_trace, syn0, mem0, alpha, beta, threshold)
        ctx.set_materialize_grads(False)
        if not full:
            mem = spikes.new_empty(0)
            ctx.mark_non_differentiable(mem)
        ctx.mark_non_differentiable(last)
        return spikes, mem, syn.clone() if keep_syn else syn, last

    @staticmethod
    def backward(
        ctx: Any,
        grad_spikes: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_syn_last: torch.Tensor | None,
        _: Any,
    ) -> tuple:
        need_x, need_alpha, need_beta, need_threshold, need_syn0, need_mem0 = ctx.needs_input_grad[:6]
        zero = ctx.reset_to_zero
        if ctx.checkpointed:
            x, boundaries, alpha, beta, threshold = ctx.saved_tensors
            size = ctx.chunks[0][1]
            scratch = x.new_empty((2 + need_alpha, size, *ctx.state_shape)).unbind(0)
        else:
            mem, syn_trace, syn0, mem0, alpha, beta, threshold = ctx.saved_tensors
        like = x if ctx.checkpointed else mem
        grad_x = like.new_empty((ctx.chunks[-1][1], *ctx.state_shape))  # dL/dI_t, which is dL/dx_t
        grad_alpha = grad_beta = grad_threshold = None
        carry_mem = None  # b * dL/dV_{t+1}
        carry_syn = grad_syn_last  # a * dL/dI_{t+1} (or the gradient of the last current)
        grad_u = like.new_empty(ctx.state_shape)
        for index in range(len(ctx.chunks) - 1, -1, -1):
            start, stop = ctx.chunks[index]
            if ctx.checkpointed:  # recompute this chunk's traces
                n = stop - start
                trace, syn_part = scratch[0][:n], scratch[2][:n] if need_alpha else None
                syn_before, before = boundaries[index].unbind(0)
                _cuba_run(
                    x[start:stop], trace, scratch[1][:n], syn_part, syn_before, before, alpha, beta, threshold, zero
                )
            else:
                trace, syn_part, syn_before, before = mem, syn_trace, syn0, mem0
            mems = trace.unbind(0)
            syn_steps = syn_part.unbind(0) if syn_part is not None else None
            grad_spike_steps = _steps_of(grad_spikes, start, stop)
            grad_mem_steps = _steps_of(grad_mem, start, stop)
            grad_x_steps = grad_x[start:stop].unbind(0)
            for t in range(stop - start - 1, -1, -1):
                if grad_spike_steps is not None:
                    _surrogate_term(ctx.surrogate, mems[t], threshold, grad_spike_steps[t], out=grad_u)
                    if need_threshold:
                        grad_threshold = _accumulate(grad_threshold, grad_u, sign=-1)
                else:
                    grad_u.zero_()
                if grad_mem_steps is not None:
                    grad_u.add_(grad_mem_steps[t])
                if carry_mem is not None:
                    grad_u.add_(carry_mem)
                previous = mems[t - 1] if t > 0 else before
                previous_spike = previous > threshold if (zero or need_threshold) else None
                if zero:
                    grad_v = grad_u * previous_spike.logical_not()
                else:
                    grad_v = grad_u
                    if need_threshold:
                        grad_threshold = _accumulate(grad_threshold, grad_u * previous_spike, sign=-1)
                if need_beta:
                    grad_beta = _accumulate(grad_beta, grad_v * previous)
                grad_i = grad_x_steps[t]
                grad_i.copy_(grad_v)
                if carry_syn is not None:
                    grad_i.add_(carry_syn)
                if need_alpha:
                    previous_syn = syn_steps[t - 1] if t > 0 else syn_before
                    grad_alpha = _accumulate(grad_alpha, grad_i * previous_syn)
                carry_mem = grad_v * beta
                carry_syn = grad_i * alpha
        return (
            grad_x if need_x else None,
            grad_alpha.sum_to_size(alpha.shape) if need_alpha else None,
            grad_beta.sum_to_size(beta.shape) if need_beta else None,
            grad_threshold.sum_to_size(threshold.shape) if need_threshold else None,
            carry_syn.sum_to_size(ctx.state_shape) if need_syn0 else None,
            carry_mem.sum_to_size(ctx.state_shape) if need_mem0 else None,
            None,
            None,
            None,
            None,
        )
