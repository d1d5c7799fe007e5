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


class LIFFunction(torch.autograd.Function):
    """Fused LIF: ``(x, beta, threshold, mem0) -> (spikes, mem)``, both ``[T, B, ...]``."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        beta: torch.Tensor,
        threshold: torch.Tensor,
        mem0: torch.Tensor,
        reset_to_zero: bool,
        surrogate: Surrogate,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        spikes = torch.empty_like(x, memory_format=torch.contiguous_format)
        mem = torch.empty_like(spikes)
        previous = mem0
        previous_spike = (mem0 > threshold).to(x.dtype)
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
        ctx.reset_to_zero = reset_to_zero
        ctx.surrogate = surrogate
        ctx.save_for_backward(mem, beta, threshold, mem0)
        ctx.set_materialize_grads(False)
        return spikes, mem

    @staticmethod
    def backward(ctx: Any, grad_spikes: torch.Tensor | None, grad_mem: torch.Tensor | None) -> tuple:
        mem, beta, threshold, mem0 = ctx.saved_tensors
        need_x, need_beta, need_threshold, need_mem0 = ctx.needs_input_grad[:4]
        zero = ctx.reset_to_zero
        grad_x = torch.empty_like(mem)
        grad_beta = grad_threshold = None
        mems = mem.unbind(0)
        grad_spike_steps = grad_spikes.unbind(0) if grad_spikes is not None else None
        grad_mem_steps = grad_mem.unbind(0) if grad_mem is not None else None
        grad_x_steps = grad_x.unbind(0)
        carry = None  # dL/dU_{t+1} times dU_{t+1}/dU_t
        for t in range(mem.shape[0] - 1, -1, -1):
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
            previous = mems[t - 1] if t > 0 else mem0
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
            carry.sum_to_size(mem0.shape) if need_mem0 else None,
            None,
            None,
        )


class CUBAFunction(torch.autograd.Function):
    """Fused CUBA: ``(x, alpha, beta, threshold, syn0, mem0) -> (spikes, mem, syn_last)``."""

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
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        spikes = torch.empty_like(x, memory_format=torch.contiguous_format)
        mem = torch.empty_like(spikes)
        keep_syn = ctx.needs_input_grad[1]
        syn_trace = torch.empty_like(spikes) if keep_syn else None
        syn = syn0
        previous = mem0
        previous_spike = (mem0 > threshold).to(x.dtype)
        syn_steps = syn_trace.unbind(0) if keep_syn else [None] * x.shape[0]
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
        ctx.reset_to_zero = reset_to_zero
        ctx.surrogate = surrogate
        ctx.save_for_backward(mem, syn_trace, alpha, beta, threshold, syn0, mem0)
        ctx.set_materialize_grads(False)
        return spikes, mem, syn.clone() if keep_syn else syn

    @staticmethod
    def backward(
        ctx: Any, grad_spikes: torch.Tensor | None, grad_mem: torch.Tensor | None, grad_syn_last: torch.Tensor | None
    ) -> tuple:
        mem, syn_trace, alpha, beta, threshold, syn0, mem0 = ctx.saved_tensors
        need_x, need_alpha, need_beta, need_threshold, need_syn0, need_mem0 = ctx.needs_input_grad[:6]
        zero = ctx.reset_to_zero
        grad_x = torch.empty_like(mem)  # dL/dI_t, which is dL/dx_t
        grad_alpha = grad_beta = grad_threshold = None
        mems = mem.unbind(0)
        grad_spike_steps = grad_spikes.unbind(0) if grad_spikes is not None else None
        grad_mem_steps = grad_mem.unbind(0) if grad_mem is not None else None
        carry_mem = None  # b * dL/dV_{t+1}
        carry_syn = grad_syn_last  # a * dL/dI_{t+1} (or the gradient of the last current)
        grad_u = torch.empty_like(mems[0])
        grad_x_steps = grad_x.unbind(0)
        syn_steps = syn_trace.unbind(0) if syn_trace is not None else None
        for t in range(mem.shape[0] - 1, -1, -1):
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
            previous = mems[t - 1] if t > 0 else mem0
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
                previous_syn = syn_steps[t - 1] if t > 0 else syn0
                grad_alpha = _accumulate(grad_alpha, grad_i * previous_syn)
            carry_mem = grad_v * beta
            carry_syn = grad_i * alpha
        return (
            grad_x if need_x else None,
            grad_alpha.sum_to_size(alpha.shape) if need_alpha else None,
            grad_beta.sum_to_size(beta.shape) if need_beta else None,
            grad_threshold.sum_to_size(threshold.shape) if need_threshold else None,
            carry_syn.sum_to_size(syn0.shape) if need_syn0 else None,
            carry_mem.sum_to_size(mem0.shape) if need_mem0 else None,
            None,
            None,
        )
