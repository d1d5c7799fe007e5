"""Loihi 2's adaptive-threshold LIF neuron (Lava's ``ATRLIF``) in fixed point, batched in torch.

Semantics from lava-nc/lava ``src/lava/proc/atrlif/process.py`` (``ATRLIF``: the intended equations) and
``src/lava/proc/atrlif/models.py`` (``PyATRLIFModelFixed``, what the fixed-point model computes; commit b6822fb),
read and rewritten here. Decays are integers ``d`` in units of 2^-12 (Lava's fraction ``delta`` times 4096);
``decay(x, d, offset) = trunc(x (2^12 - offset - d) / 2^12)`` (``hybridai.neuromorphic.fixed_point.decay``,
rounding toward zero). States start at ``i = v = r = 0``, ``theta = theta_0 << 6``. Per neuron and step ``t``, on
integer input ``a_in[t]``:

1. current: ``i = fold24(int32(decay(i, d_i, 1) + (a_in[t] << 6)))``, where ``fold24`` subtracts 2^24
   once above 2^23 and adds 2^24 once at or below -2^23 (so +2^23 survives and -2^23 becomes +2^23);
2. voltage: ``v = clip(int32(decay(v, d_v, 0) + i + bias), -(2^23 - 1), 2^23 - 1)`` with
   ``bias = int32(bias_mant << bias_exp)`` (an arithmetic right shift, floor, for a negative ``bias_exp``);
3. threshold: ``theta = int32(decay(int32(theta - (theta_0 << 6)), d_theta, 0) + (theta_0 << 6))``;
4. refractory state: ``r = decay(r, d_r, 0)``;
5. spike where ``int32(v - r) >= theta``; there (in this order) ``r = int32(r + 2 theta)``,
   ``theta = int32(theta + (theta_step << 6))``. v is never reset: r, subtracted from v, does that.

``int32`` is a wrap at 32 bits, as numpy int32 arithmetic wraps in Lava. Where models.py departs from the
equations of process.py (and its float model), this follows models.py:

- scaling: a_in, theta_0 and theta_step are shifted left by 6 (states are in units of 2^-6 of the float model)
  and the bias is ``bias_mant << bias_exp`` (the float model adds ``bias_mant`` and ignores ``bias_exp``);
- the current decays by ``(1 - delta_i) - 2^-12`` (``ds_offset = 1``), not ``1 - delta_i``; v, theta, r by
  exactly ``1 - delta``; every product is truncated toward zero;
- process.py's initial ``theta`` is ignored: the first step sets ``theta = theta_0 << 6``;
- i folds at 24 bits and v clips at 24 bits, but theta and r, declared 24-bit too, only wrap at 32 (models.py
  leaves "TODO do clipping here?"); ``v - r`` is compared in int32.

Lava quirks not reproduced: with a Python int ``delta_i = 0`` Lava multiplies the int32 ``i`` by ``4095`` in
int32, which wraps once ``|i| >= 524417``; a float ``delta_i`` (0.0, or any fraction) gives the exact product
used here. With a sender whose port is int16, numpy wraps ``a_in << 6`` at 16 bits; here it wraps at 32, as
with an int32 sender (Lava's bit-accurate Dense). Initial i, v, r other than Lava's default 0 are not offered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from hybridai.core.errors import bounded_int, invalid
from hybridai.neuromorphic.fixed_point import check_integer, decay, int32
from hybridai.neuromorphic.loihi2.registers import integer_register, per_neuron

ONE = 2**12  # decays are fractions of 2^12
V_LIMIT = 2**23 - 1
# per-group registers, in [0, high]: delta_i stops at 4095 (with the offset of 1 that is the full decay);
# theta_0 << 6 and theta_step << 6 must fit Lava's np.int32
LIMITS = {"delta_i": ONE - 1, "delta_v": ONE, "delta_theta": ONE, "delta_r": ONE}
LIMITS |= {"theta_0": 2**25 - 1, "theta_step": 2**25 - 1}


def fold24(x: torch.Tensor) -> torch.Tensor:
    """Lava's current overflow rule: one subtraction of 2^24 above 2^23, one addition at or below -2^23."""
    return torch.where(x > 2**23, x - 2**24, torch.where(x <= -(2**23), x + 2**24, x))


@dataclass(frozen=True)
class AdaptiveLIFConfig:
    """Registers of adaptive-threshold LIF neurons: ``theta_0``, ``theta_step`` (ints >= 0, one per group, shifted
    left by 6 on use), decays ``delta_*`` (ints in units of 2^-12, one per group; 0: none) and ``bias_mant``,
    ``bias_exp`` (ints or 1-D integer tensors [N])."""

    theta_0: int
    theta_step: int
    delta_i: int = 0
    delta_v: int = 0
    delta_theta: int = 0
    delta_r: int = 0
    bias_mant: Any = 0
    bias_exp: Any = 0

    def __post_init__(self) -> None:
        for name, high in LIMITS.items():
            object.__setattr__(self, name, bounded_int(name, getattr(self, name), 0, high))
        for name, low, high in (("bias_mant", -(2**15), 2**15 - 1), ("bias_exp", -31, 31)):
            value = integer_register(name, getattr(self, name), low=low, high=high)
            object.__setattr__(self, name, value)


class AdaptiveLIFRun(NamedTuple):
    """Per step, ``[T, B, N]`` int64, after the step's spikes: current, voltage, threshold, refractory state
    and the spikes (0 or 1)."""

    i: torch.Tensor
    v: torch.Tensor
    theta: torch.Tensor
    r: torch.Tensor
    spikes: torch.Tensor


def run_adaptive_lif(config: AdaptiveLIFConfig, a_in: Any) -> AdaptiveLIFRun:
    """Run adaptive-threshold LIF neurons on integer synaptic input ``a_in`` ``[T, B, N]`` (module docstring)."""
    if not isinstance(config, AdaptiveLIFConfig):
        raise invalid("config", type(config).__name__, "a hybridai.neuromorphic.loihi2.AdaptiveLIFConfig")
    a_in = check_integer(a_in, "a_in")
    steps, batch, n = a_in.shape
    device = a_in.device
    mant, exp = (per_neuron(name, getattr(config, name), n, device) for name in ("bias_mant", "bias_exp"))
    shifted = torch.where(exp >= 0, mant << exp.clamp(min=0), mant >> (-exp).clamp(min=0))
    bias = int32(shifted)
    theta_0, theta_step = config.theta_0 << 6, config.theta_step << 6
    i = torch.zeros(batch, n, dtype=torch.int64, device=device)
    v, r = torch.zeros_like(i), torch.zeros_like(i)
    theta = torch.full_like(i, theta_0)
    out = torch.empty(5, steps, batch, n, dtype=torch.int64, device=device)
    for t in range(steps):
        i = fold24(int32(decay(i, config.delta_i, 1) + (a_in[t] << 6)))
        v = (int32(decay(v, config.delta_v, 0) + i + bias)).clamp(-V_LIMIT, V_LIMIT)
        theta = int32(decay(int32(theta - theta_0), config.delta_theta, 0) + theta_0)
        r = decay(r, config.delta_r, 0)
        fire = int32(v - r) >= theta
        r = torch.where(fire, int32(r + 2 * theta), r)
        theta = torch.where(fire, int32(theta + theta_step), theta)
        out[0, t], out[1, t], out[2, t], out[3, t], out[4, t] = i, v, theta, r, fire.to(torch.int64)
    return AdaptiveLIFRun(*out)
