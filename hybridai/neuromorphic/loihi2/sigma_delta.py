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
     zeroed where something was sent (Lava adds the carried residue to ``error`` as well: kept as it is);
5. ``residue = delta - sent``; ``act_prev = act``;
6. the message is ``sent >> state_exp`` (arithmetic shift: floor for negatives; the bits shifted out are lost,
   not carried).

States start at 0. Lava keeps them in numpy int32, whose sums wrap at 32 bits: every state here is wrapped
the same way. Lava's ``spike_exp`` is used only by its ``Delta`` encoder (input ``<< spike_exp + state_exp``),
not by this model, so it is not a parameter here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from hybridai.core.errors import bounded_int, invalid
from hybridai.neuromorphic.loihi.compartments import check_integer
from hybridai.neuromorphic.loihi2.registers import integer_register, per_neuron

ACTIVATIONS = ("relu", "unit")


def _same(x: torch.Tensor) -> torch.Tensor:
    return x


def _wrap_(x: torch.Tensor) -> torch.Tensor:
    """``x`` (int64) wrapped in place to int32's range, as numpy int32 arithmetic wraps."""
    return x.add_(2**31).bitwise_and_(2**32 - 1).sub_(2**31)


@dataclass(frozen=True)
class SigmaDeltaConfig:
    """Registers of a group of sigma-delta neurons (integers; ``bias`` one value or one per neuron)."""

    vth: Any
    bias: Any = 0
    state_exp: int = 0
    cum_error: bool = False
    activation: str = "relu"

    def __post_init__(self) -> None:
        for name in ("vth", "bias"):
            object.__setattr__(self, name, integer_register(name, getattr(self, name)))
        if bool((torch.as_tensor(self.vth) < 0).any()):
            raise invalid("vth", self.vth, "integers >= 0 (a threshold on |delta|)")
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


def run_sigma_delta(config: SigmaDeltaConfig, a_in: Any) -> SigmaDeltaRun:
    """Run sigma-delta neurons ``config`` on integer input ``a_in`` ``[T, B, N]`` (module docstring)."""
    if not isinstance(config, SigmaDeltaConfig):
        raise invalid("config", type(config).__name__, "a hybridai.neuromorphic.loihi2.SigmaDeltaConfig")
    a_in = check_integer(a_in, "a_in")
    steps, batch, n = a_in.shape
    device = a_in.device
    vth, bias = (per_neuron(name, getattr(config, name), n, device) for name in ("vth", "bias"))
    # without cum_error, |act| <= the summed largest inputs + |bias| and |residue| < vth, so |delta| < 2 (that
    # + vth): when that stays in int32 the wraps change nothing and are skipped (always kept with cum_error),
    # and the integers run in float64 lanes (exact below 2^53; torch's float64 kernels are several times
    # faster than its int64 ones on CPU). Every step works in place in preallocated buffers.
    largest = float(a_in.abs().amax((1, 2)).sum()) + float(bias.abs().max()) + float(vth.max())
    wraps = config.cum_error or 2 * largest >= 2**31
    lanes = torch.int64 if wraps else torch.float64
    vth, bias = vth.to(lanes), bias.to(lanes)
    sigma, act, act_prev, delta, residue, error, sent, magnitude = (
        torch.zeros(batch, n, dtype=lanes, device=device) for _ in range(8)
    )
    over = torch.empty(batch, n, dtype=torch.bool, device=device)
    fold = _wrap_ if wraps else _same
    out = torch.empty(3, steps, batch, n, dtype=torch.int64, device=device)
    for t in range(steps):
        fold(sigma.add_(a_in[t]))
        fold(torch.add(sigma, bias, out=act))
        if config.activation == "relu":
            act.clamp_(min=0)
        fold(torch.sub(act, act_prev, out=delta).add_(residue))
        if config.cum_error:
            fold(error.add_(delta))
            torch.ge(torch.abs(error, out=magnitude), vth, out=over)
            torch.mul(delta, over, out=sent)
            error.mul_(torch.eq(sent, 0, out=over))  # zeroed where a message went out
        else:
            torch.ge(torch.abs(delta, out=magnitude), vth, out=over)
            torch.mul(delta, over, out=sent)
        fold(torch.sub(delta, sent, out=residue))
        act_prev.copy_(act)
        out[0, t].copy_(sigma)
        out[1, t].copy_(act)
        if config.state_exp:
            sent.div_(2**config.state_exp, rounding_mode="floor")  # an arithmetic right shift
        out[2, t].copy_(sent)
    return SigmaDeltaRun(out[0], out[1], out[2])
