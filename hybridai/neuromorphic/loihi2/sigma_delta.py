"""Loihi 2's sigma-delta neuron in fixed point, as Lava's CPU model defines it, batched in torch.

Semantics from lava-nc/lava ``src/lava/proc/sdn/models.py`` (``PySigmaDeltaModelFixed`` and its bases
``AbstractSigmaModel``, ``AbstractDeltaModel``, ``AbstractSigmaDeltaModel``; the same at commits 174f46d and
6dd7e3b), read and rewritten here. Per neuron and step ``t``, on integer input ``a_in[t]``:

1. sigma: ``sigma += a_in[t]``
2. activation: ``act = sigma + bias`` ("unit") or ``max(sigma + bias, 0)`` ("relu")
3. delta: ``delta = act - act_prev + residue`` (what was not sent before is carried, in every mode)
4. threshold:
   - ``cum_error=False``: send ``delta`` where ``|delta| >= vth``, else 0;
   - ``cum_error=True``: ``error += delta``; send ``delta`` where ``|error| >= vth``, else 0; ``error`` is
     zeroed where ``|sent| > 0`` (Lava adds the carried residue to ``error`` as well: kept as it is);
   ``|x|`` is numpy's int32 absolute value, which leaves -2^31 negative: a delta (or error) of exactly -2^31
   is not sent and stays in the residue (and the error), and a message of -2^31 does not zero the error;
5. ``residue = delta - sent``; ``act_prev = act``;
6. the message is ``sent >> state_exp`` (arithmetic shift: floor for negatives; the bits shifted out are lost,
   not carried).

States start at 0. Lava keeps them in numpy int32, whose sums wrap at 32 bits: every state here is wrapped
the same way. Lava's ``spike_exp`` is used only by its ``Delta`` encoder (input ``<< spike_exp + state_exp``),
not by this model, so it is not a parameter here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from hybridai.core.errors import bounded_int, invalid
from hybridai.neuromorphic.fixed_point import check_integer
from hybridai.neuromorphic.loihi2.registers import INT32, integer_register, per_neuron

ACTIVATIONS = ("relu", "unit")
VTH = f"an int or a 1-D integer tensor [N] in [0, {INT32[1]}] (a threshold on |delta|, an int32 register as in Lava)"


def _wrap_(x: torch.Tensor) -> torch.Tensor:
    """``x`` (int64) wrapped in place to int32's range, as numpy int32 arithmetic wraps."""
    return x.add_(2**31).bitwise_and_(2**32 - 1).sub_(2**31)


def _abs32(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``|x|`` of int32 values (held in int64) as numpy int32 computes it, into ``out``: ``|-2^31|`` wraps back to
    -2^31, so that Lava's ``|x| >= vth`` (with ``vth >= 0``) fails there and ``|x| > 0`` too."""
    return _wrap_(torch.abs(x, out=out))


@dataclass(frozen=True)
class SigmaDeltaConfig:
    """Registers of a group of sigma-delta neurons (integers; ``vth`` and ``bias`` one value or one per neuron,
    each within int32, the width of Lava's registers)."""

    vth: Any
    bias: Any = 0
    state_exp: int = 0
    cum_error: bool = False
    activation: str = "relu"

    def __post_init__(self) -> None:
        object.__setattr__(self, "vth", integer_register("vth", self.vth, VTH, low=0))
        object.__setattr__(self, "bias", integer_register("bias", self.bias))
        bounded_int("state_exp", self.state_exp, 0, 31)
        if not isinstance(self.cum_error, bool):
            raise invalid("cum_error", self.cum_error, "True or False")
        if self.activation not in ACTIVATIONS:
            raise invalid("activation", self.activation, f"one of {ACTIVATIONS}")


class SigmaDeltaRun(NamedTuple):
    """Per step, ``[T, B, N]`` int64: sigma, the activation, and the graded messages sent (0: none)."""

    sigma: torch.Tensor
    activation: torch.Tensor
    messages: torch.Tensor


def exact_lanes(bound: float) -> torch.dtype | None:
    """The cheapest float dtype holding every integer up to ``bound`` exactly (None: beyond float64's 2^53)."""
    if bound < 2**24:
        return torch.float32
    return torch.float64 if bound < 2**53 else None


def sigma_delta_lanes(config: SigmaDeltaConfig, largest: float, product: float = 0.0) -> torch.dtype | None:
    """The float dtype a run of ``config`` can step in (``SigmaDeltaLanes``), or None for the int64 rules: the
    rule carries no separate error (``cum_error=False``), nothing wraps (``2 largest`` below 2^31, ``largest``
    bounding |sigma|, |activation| and |residue|) and every value and synaptic ``product`` is exact in it."""
    if config.cum_error or 2 * largest >= 2**31:
        return None
    return exact_lanes(max(2 * largest, product))


def run_sigma_delta(config: SigmaDeltaConfig, a_in: Any) -> SigmaDeltaRun:
    """Run sigma-delta neurons ``config`` on integer input ``a_in`` ``[T, B, N]`` (module docstring)."""
    if not isinstance(config, SigmaDeltaConfig):
        raise invalid("config", type(config).__name__, "a hybridai.neuromorphic.loihi2.SigmaDeltaConfig")
    a_in = check_integer(a_in, "a_in")
    n = a_in.shape[2]
    vth, bias = (per_neuron(name, getattr(config, name), n, a_in.device) for name in ("vth", "bias"))
    lanes = sigma_delta_lanes(config, _largest(a_in, vth, bias))
    if lanes is None:
        return _stepwise(config, a_in, vth, bias)
    x = a_in.to(lanes)
    group = SigmaDeltaLanes(config, vth, bias, x.shape[1:], x)
    out = torch.empty(3, *x.shape, dtype=lanes, device=x.device)
    for t in range(x.shape[0]):
        group.step(x[t], out[2, t])
        group.traces(out[0, t], out[1, t])
    return SigmaDeltaRun(*out.long())


def _largest(a_in: torch.Tensor, vth: torch.Tensor, bias: torch.Tensor) -> float:
    """A bound on |sigma|, |activation| and |residue| over the run; |delta| stays below twice it."""
    return float(a_in.abs().sum(0, dtype=torch.float64).max()) + float(bias.abs().max()) + float(vth.max())


class SigmaDeltaLanes:
    """One group of ``cum_error=False`` sigma-delta neurons stepped in float lanes (a dtype holding every value
    of the run exactly: ``exact_lanes``), for runs that cannot wrap. Built per run: it holds that run's state.

    Lava's rule carries the residue, so the receiver's reference ``ref = act - residue`` follows
    ``ref_t = act_t`` where ``|act_t - ref_(t-1)| >= vth``, else ``ref_(t-1)``: the message is
    ``(act_t - ref_(t-1)) * mask`` with ``mask = clamp(|act_t - ref_(t-1)| - vth + 1, 0, 1)`` (0 or 1 on integers).
    The state holds ``sigma + bias``; a step works in place on ``[B, ...]`` buffers that stay in cache.
    ``synapses=(deliver, weight_exp)`` makes the input of a step the incoming messages, summed by
    ``deliver(messages, out)`` (a Dense product or a convolution, in the lanes) and shifted by ``weight_exp``,
    without Dense's one-step buffer (the caller aligns the clocks); ``count`` keeps per neuron the number of
    non-zero delivered inputs (``active()``: their total)."""

    def __init__(
        self,
        config: SigmaDeltaConfig,
        vth: torch.Tensor,
        bias: torch.Tensor,
        shape: tuple[int, ...],
        like: torch.Tensor,
        synapses: tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], int] | None = None,
        count: bool = False,
    ) -> None:
        self.relu, self.state_exp, self.synapses = config.activation == "relu", config.state_exp, synapses

        def zeros() -> torch.Tensor:
            return torch.zeros(shape, dtype=like.dtype, device=like.device)

        def buffer(needed: bool) -> torch.Tensor | None:
            return zeros() if needed else None

        # non-zero inputs per neuron, as clamp(|x|, max=1) summed: three cheap operations on whole numbers
        self.inputs = buffer(count)
        self.bias, self.below = bias.to(like), vth.to(like) - 1
        self.state, self.act, self.gap, self.mask, self.reference = (zeros() for _ in range(5))
        self.synaptic, self.sent = buffer(synapses is not None), buffer(bool(self.state_exp))
        self.state.add_(self.bias)

    def step(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """Advance one step on input ``x`` and write the messages into ``out`` ``[B, ...]`` (returned)."""
        if self.synapses is None:
            delivered = x
        else:
            assert self.synaptic is not None  # allocated with the synapses
            delivered = _deliver(x, self.synapses, self.synaptic)
        self.state.add_(delivered)
        if self.inputs is not None:
            self.inputs.add_(torch.abs(delivered, out=self.gap).clamp_(max=1))
        active = torch.clamp(self.state, min=0, out=self.act) if self.relu else self.state
        torch.sub(active, self.reference, out=self.gap)
        torch.abs(self.gap, out=self.mask).sub_(self.below).clamp_(0, 1)
        if not self.state_exp:
            self.reference.add_(torch.mul(self.gap, self.mask, out=out))
            return out
        assert self.sent is not None  # allocated when state_exp != 0
        self.reference.add_(torch.mul(self.gap, self.mask, out=self.sent))
        return torch.div(self.sent, 2**self.state_exp, rounding_mode="floor", out=out)  # an arithmetic shift

    def active(self) -> int:
        """The non-zero inputs delivered so far (``count=True``)."""
        assert self.inputs is not None, "SigmaDeltaLanes.active: built with count=True"
        return int(self.inputs.sum(dtype=torch.float64))

    def traces(self, sigma: torch.Tensor, activation: torch.Tensor) -> None:
        """Write this step's sigma and activation into ``sigma`` and ``activation`` ``[B, N]``."""
        torch.sub(self.state, self.bias, out=sigma)
        activation.copy_(self.act if self.relu else self.state)


def _deliver(messages: torch.Tensor, synapses: tuple, out: torch.Tensor) -> torch.Tensor:
    """The synaptic sums of ``messages`` into ``out``, ``<< weight_exp`` (``>> -weight_exp``: floor), exact in the
    lanes' dtype."""
    deliver, weight_exp = synapses
    out = deliver(messages, out)
    if weight_exp:
        out.mul_(2.0**weight_exp)
        if weight_exp < 0:
            out.floor_()
    return out


def _stepwise(config: SigmaDeltaConfig, a_in: torch.Tensor, vth: torch.Tensor, bias: torch.Tensor) -> SigmaDeltaRun:
    """The rule step by step in int64, wrapped to int32 (``cum_error``, or sums that may leave int32)."""
    steps, batch, n = a_in.shape
    sigma, act, act_prev, delta, residue, error, sent, magnitude = (
        torch.zeros(batch, n, dtype=torch.int64, device=a_in.device) for _ in range(8)
    )
    over = torch.empty(batch, n, dtype=torch.bool, device=a_in.device)
    out = torch.empty(3, steps, batch, n, dtype=torch.int64, device=a_in.device)
    for t in range(steps):
        _wrap_(sigma.add_(a_in[t]))
        _wrap_(torch.add(sigma, bias, out=act))
        if config.activation == "relu":
            act.clamp_(min=0)
        _wrap_(torch.sub(act, act_prev, out=delta).add_(residue))
        if config.cum_error:
            _wrap_(error.add_(delta))
            torch.ge(_abs32(error, magnitude), vth, out=over)
            torch.mul(delta, over, out=sent)
            error.mul_(torch.le(_abs32(sent, magnitude), 0, out=over))  # zeroed where int32 |sent| > 0
        else:
            torch.ge(_abs32(delta, magnitude), vth, out=over)
            torch.mul(delta, over, out=sent)
        _wrap_(torch.sub(delta, sent, out=residue))
        act_prev.copy_(act)
        out[0, t].copy_(sigma)
        out[1, t].copy_(act)
        if config.state_exp:
            sent.div_(2**config.state_exp, rounding_mode="floor")  # an arithmetic right shift
        out[2, t].copy_(sent)
    return SigmaDeltaRun(out[0], out[1], out[2])
