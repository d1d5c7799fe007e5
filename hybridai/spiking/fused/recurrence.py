"""What every fused neuron model shares: chunks of time steps, output buffers and the adjoint's base.

A neuron model (``lif``, ``cuba``) writes its forward recurrence into the ``Buffers`` that
``allocate`` gives, yields its traces chunk by chunk as ``Chunk``s (saved, or recomputed from the
input and the state at the chunk's start) and subclasses ``Adjoint`` with its own ``step``: the
gradient of one time step, from the membrane's gradient to its synapse and parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from hybridai.spiking.surrogate import Surrogate


def chunk_bounds(steps: int, recompute_steps: int | None) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk of ``recompute_steps`` time steps (one chunk when ``None``)."""
    size = steps if recompute_steps is None else recompute_steps
    return [(start, min(start + size, steps)) for start in range(0, steps, size)]


def accumulate(total: torch.Tensor | None, term: torch.Tensor, sign: int = 1) -> torch.Tensor:
    """``total + sign * term`` (a fresh tensor on the first call, in place afterwards)."""
    if total is None:
        return term.clone() if sign == 1 else -term
    return total.add_(term, alpha=sign)


def reduced(total: torch.Tensor | None, parameter: torch.Tensor) -> torch.Tensor:
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
class Buffers:
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


def allocate(
    x: torch.Tensor, recompute_steps: int | None, keep_trace: bool, boundary_shape: tuple[int, ...]
) -> Buffers:
    """Output and scratch tensors for ``x`` ``[T, B, ...]``; ``boundary_shape`` is one chunk-boundary state."""
    chunks = chunk_bounds(x.shape[0], recompute_steps)
    recompute = len(chunks) > 1
    spikes = torch.empty_like(x, memory_format=torch.contiguous_format)
    full = keep_trace or not recompute
    mem = torch.empty_like(spikes) if full else spikes.new_empty((chunks[0][1], *x.shape[1:]))  # one chunk
    boundaries = spikes.new_empty((len(chunks), *boundary_shape)) if recompute else None
    return Buffers(chunks, spikes, mem, boundaries, full)


def finish_forward(
    ctx: Any, buffers: Buffers, reset_to_zero: bool, surrogate: Surrogate, last: torch.Tensor
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
class Chunk:
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
        """``I_{t-1}``; only for a model whose chunks carry the synaptic trace."""
        if t == 0:
            assert self.syn_before is not None, "a chunk without a synaptic state"
            return self.syn_before
        assert self.syns is not None, "a chunk without a synaptic trace"
        return self.syns[t - 1]


class Adjoint:
    """The backward recurrence every neuron model shares, run chunk by chunk from the last step to the first.

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

    def run(self, chunk: Chunk) -> None:
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
        chunk: Chunk,
        t: int,
        grad_spike: torch.Tensor | None,
        grad_mem: torch.Tensor | None,
        grad_x: torch.Tensor,
    ) -> None:
        """One time step's gradient: writes ``dL/dx_t`` into ``grad_x`` and updates the carries and sums."""
        raise NotImplementedError

    def membrane_gradient(
        self, out: torch.Tensor, mem_t: torch.Tensor, grad_spike: torch.Tensor | None, grad_mem: torch.Tensor | None
    ) -> torch.Tensor:
        """``out = dL/dU_t``: the spike output's surrogate term, the membrane output's gradient and the carry."""
        if grad_spike is not None:
            _surrogate_term(self.surrogate, mem_t, self.threshold, grad_spike, out=out)
            if self.need_threshold:
                self.grad_threshold = accumulate(self.grad_threshold, out, sign=-1)
        else:
            out.zero_()
        if grad_mem is not None:
            out.add_(grad_mem)
        if self.carry_mem is not None:
            out.add_(self.carry_mem)
        return out

    def spiked(self, previous: torch.Tensor) -> torch.Tensor:
        """``r_t``: whether ``U_{t-1}`` spiked (for a reset to zero or the threshold's gradient), as booleans."""
        return previous > self.threshold

    def carried_state(self, carry: torch.Tensor | None, state_shape: tuple[int, ...]) -> torch.Tensor:
        """The gradient of an initial state: what the adjoint carried past step 0."""
        assert carry is not None, "the adjoint ran no step"
        return carry.sum_to_size(state_shape)
