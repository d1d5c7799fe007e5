"""Bit-exact integer emulator of Loihi (first generation) CUBA-LIF compartments and synapses, batched in torch.

All state is integer (int32 where every value of the run provably fits, else int64: ``lanes``) on the
device of the input (CPU or CUDA), returned as int64; one call simulates every sample of a batch at once.
The rules are those of ``shared/reference/loihi.md``, checked against nengo-loihi 1.1
(``emulator/interface.py``, ``builder/discretize.py``, ``block.py``) and Lava 0.10
(``proc/lif/models.py`` ``PyLifModelBitAcc``, ``proc/dense/models.py`` ``PyDenseModelBitAcc``,
``utils/weightutils.py``). Where the two differ, ``quirks=`` picks one:

``"nengo"`` (default)
    q wrapped to 22-bit signed, u wrapped two's-complement to 24 bits, bias added to u (and wrapped),
    v clipped to [vmin, vmax] from ``vmin_exp``/``vmax_exp``, refractory counter holds v at 0.
    Weights: nengo-loihi always uses the mixed-sign synapse format, 7-bit magnitudes doubled, so a
    mantissa must be even and in [-254, 254]; a negative weight exponent shifts each weight right
    (floor) before the activity shift of 6 (the chip's two-part, lossy shift).
``"lava"``
    no q wrap, u wrapped as ``u > 2^23 -> u - 2^24``, ``u <= -2^23 -> u + 2^24`` (so +2^23 survives),
    bias added straight to v, v clipped to +-(2^23 - 1) (``vmin_exp``/``vmax_exp``/``refractory``
    are ignored), no refractory period. Weights: [-256, 255] for a mixed-sign matrix, whose
    mantissas lose their least significant bit (``(w >> 1) << 1``), [0, 255] all excitatory,
    [-255, 0] all inhibitory; the weight exponent shifts the summed input (floor for negative).

Both: ``decay(x, d, off) = sign(x) * ((|x| * (4096 - off - d)) >> 12)`` (rounds toward zero;
``hybridai.neuromorphic.fixed_point.decay``) with offset 1 for u and 0 for v; spike when
``v > vth_mant << 6`` (strict); reset v to 0; one input spike through weight mantissa ``w`` adds
``w << (6 + weight_exp)`` to q. Synaptic delay: both references deliver a spike one step after it is
sent (nengo-loihi's input queue, Lava's Dense outputs the previous step's accumulation), so
``run_network`` feeds layer l at step t with layer l-1's spikes of step t-1.

Registers from trained models (``plan``), synapses (``synapses``), the runner (``network``) and
fake-quantized training (``training``) are built on these compartments in their own modules of this package;
the time loop itself is ``lanes``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np
import torch

from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.fixed_point import check_integer, wrap
from hybridai.neuromorphic.loihi.float_lanes import abs_max
from hybridai.neuromorphic.loihi.lanes import INT32_LIMIT, Activity, Guards, Loop

QUIRKS = ("nengo", "lava")
V_LIMIT = (1 << 23) - 1  # Lava's voltage clip, and the widest vmin/vmax nengo-loihi can express
WEIGHT_EXP_RANGE = (-8, 7)

# register: (low, high) inclusive
RANGES: dict[str, tuple[int, int]] = {
    "du": (0, 4095),
    "dv": (0, 4095),
    "vth_mant": (0, 2**17 - 1),
    "bias_mant": (-4095, 4095),
    "bias_exp": (0, 7),
    "refractory": (0, 2**6 - 1),
    "vmin_exp": (0, 31),
    "vmax_exp": (0, 7),
}


def _register_tensor(name: str, value: Any) -> torch.Tensor:
    """Register ``name`` as an int64 tensor (scalar or per compartment), or a ConfigError naming the register, the
    value and its range (checked before any conversion: an int beyond int64 or an unsigned tensor never wraps)."""
    low, high = RANGES[name]
    accepted = f"an int or integer tensor (per compartment) in [{low}, {high}]"
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        if not low <= int(value) <= high:  # int(): exact, and numbers.Integral declares no order
            raise invalid(name, value, accepted)
        return torch.tensor(int(value), dtype=torch.int64)
    if not torch.is_tensor(value):
        raise invalid(name, value, accepted)
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool or value.numel() == 0:
        raise invalid(name, f"tensor of dtype {value.dtype} and shape {tuple(value.shape)}", accepted)
    if value.ndim > 1:
        raise invalid(f"{name}.shape", tuple(value.shape), "a scalar or one value per compartment (N,)", ShapeError)
    # every range lies far inside float64's exact integers: the check is exact for any integer dtype
    wide = value.detach().to(torch.float64)
    if (wide < low).any() or (wide > high).any():
        shown = int(value.item()) if value.numel() == 1 else f"tensor with range [{int(wide.min())}, {int(wide.max())}]"
        raise invalid(name, shown, accepted)
    return value.detach().to(torch.int64)


@dataclass(frozen=True)
class CompartmentConfig:
    """The registers of a group of compartments; each an int or a tensor ``(N,)`` broadcast over neurons.

    du, dv: current and voltage decay (0..4095; u decays by (4095 - du)/4096, v by (4096 - dv)/4096).
    vth_mant: threshold mantissa (0..2^17-1); the effective threshold is ``vth_mant << 6``.
    bias_mant, bias_exp: bias = ``bias_mant << bias_exp`` (-4095..4095, 0..7), added every step.
    refractory: refractory delay in steps (nengo-loihi: ``round(tau_ref/dt) + 1``; 0 or 1 = none).
    vmin_exp, vmax_exp: vmin = -(2^vmin_exp) + 1 (0..31), vmax = 2^(9 + 2 vmax_exp) - 1 (0..7).
    """

    du: Any = 4095
    dv: Any = 0
    vth_mant: Any = 1
    bias_mant: Any = 0
    bias_exp: Any = 0
    refractory: Any = 1
    vmin_exp: Any = 0
    vmax_exp: Any = 7

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _register_tensor(f.name, getattr(self, f.name)))

    def registers(self, device: torch.device | str) -> dict[str, torch.Tensor]:
        """Every register as an int64 tensor on ``device``."""
        return {f.name: getattr(self, f.name).to(device) for f in fields(self)}


class Trace(NamedTuple):
    """What ``run_compartments`` returns: integer u, v (after reset) and boolean spikes, each ``[T, B, N]``."""

    u: torch.Tensor
    v: torch.Tensor
    spikes: torch.Tensor


def check_quirks(quirks: Any) -> str:
    """``quirks`` if it names a rule set, else a ConfigError listing them."""
    if not isinstance(quirks, str) or quirks not in QUIRKS:
        raise invalid("quirks", quirks, f"one of {QUIRKS} (nengo-loihi's or Lava's rules where they differ)")
    return quirks


class Compartments:
    """A group of N compartments with fixed registers, stepped over a batch ``[B, N]``.

    Speed: the run is one time loop in integer lanes (``lanes``): int32 wherever the bounds before the loop
    (from the largest |q|, the decays and the voltage limits) show that every value fits, else int64; the
    decays multiply in float64, exactly, and convert back with truncation toward zero. Wraps and clips whose
    range the input provably cannot leave are skipped; they could not change a value. Each step is about ten
    in-place operations on preallocated ``[B, N]`` buffers: u and v decay together, a refractory delay of 2
    (nengo-loihi's ``tau_ref = dt``) holds v by the last step's spikes instead of a counter, and with a delay
    >= 2 everywhere v's reset is skipped unless v is recorded (the hold zeroes it next step anyway). Activity
    is counted from gathered columns at the end while every compartment with a bias is active by definition.
    """

    def __init__(self, config: CompartmentConfig, n: int, device: torch.device | str, quirks: str = "nengo") -> None:
        if not isinstance(config, CompartmentConfig):
            raise invalid("config", type(config).__name__, "a hybridai.neuromorphic.loihi.CompartmentConfig")
        self.quirks = check_quirks(quirks)
        self.n = n
        regs = config.registers(device)
        for name, tensor in regs.items():
            if tensor.numel() not in (1, n):
                raise invalid(
                    f"{name}.shape", tuple(tensor.shape), f"a scalar or one value per compartment ({n},)", ShapeError
                )
        f64 = torch.float64
        self.keep_u = (4095 - regs["du"]).to(f64) / 4096  # (4096 - 1 - du) / 4096: du applies with offset 1
        self.keep_v = (4096 - regs["dv"]).to(f64) / 4096
        self.vth = regs["vth_mant"] << 6
        self.bias = regs["bias_mant"] << regs["bias_exp"]
        self.has_bias = bool((self.bias != 0).any())
        self.refractory = regs["refractory"]  # nengo-loihi's delay; Lava has none
        if self.quirks == "nengo":
            self.uses_refractory = bool((self.refractory > 1).any())
            self.vmin = -(torch.ones_like(regs["vmin_exp"]) << regs["vmin_exp"]) + 1
            self.vmax = (torch.ones_like(regs["vmax_exp"]) << (9 + 2 * regs["vmax_exp"])) - 1
        else:
            self.uses_refractory = False
            self.vmin = torch.tensor(-V_LIMIT, device=device)
            self.vmax = torch.tensor(V_LIMIT, device=device)
        self.device = device

    def simulate(
        self,
        q: torch.Tensor,
        *,
        bias_from: int = 0,
        record: tuple[str, ...] = ("u", "v", "v_pre"),
    ) -> dict[str, Any]:
        """Run the integer input ``q`` [T, B, N] (int64, or integers in a float dtype); biases act from
        step ``bias_from`` on.

        Returns a dict of ``spikes`` (bool ``[T, B, N]``), ``active`` (int: the updates whose compartment
        had non-zero u, v or q entering the step, or a bias acting) and, as named in ``record``, int64
        ``[T, B, N]`` traces ``u``, ``v`` (after reset) and ``v_pre`` (before reset, what a membrane
        probe of the float model reads).
        """
        q = q.to(torch.int64)
        q_max = abs_max(q)
        if self.quirks == "nengo" and q_max >= 1 << 21:
            q = wrap(q, 21)
            q_max = abs_max(q)
        q = q.to(self._guards(q_max).dtype)  # the lanes of the run: every |q| fits
        steps, batch = q.shape[0], q.shape[1]
        return self.simulate_steps(q.unbind(0).__getitem__, q_max, steps, batch, bias_from=bias_from, record=record)

    def simulate_steps(
        self,
        step_input: Callable[[int], torch.Tensor | None],
        q_max: float,
        steps: int,
        batch: int,
        *,
        bias_from: int,
        record: tuple[str, ...],
    ) -> dict[str, Any]:
        """``simulate`` on inputs asked for step by step: ``step_input(t)`` is q at step t
        ([B, N] integers in any dtype, read before the next call; None for no input), ``q_max`` an upper bound
        of every |q| (a looser bound only switches on wraps, clips and wider lanes that change nothing)."""
        loop = Loop(self, self._guards(q_max), steps, batch, record)
        first_biased = min(max(bias_from, 0), steps) if self.has_bias else steps
        activity = Activity(self, loop, steps, first_biased)
        for t in range(steps):
            q_t = loop.input(step_input(t))
            activity.observe(t, loop, q_t)  # what enters the update
            loop.step(t, q_t, biased=t >= first_biased)
        out = {name: trace.to(torch.int64) for name, trace in loop.traces.items()}
        return {**out, "spikes": loop.spikes, "active": activity.total(loop.spikes)}

    def _guards(self, q_max: float) -> Guards:
        """The wraps and clips that inputs bounded by ``q_max`` can reach (|u| and |v| bounded from the decays:
        truncation only shrinks them), and the lanes every value fits in: int32 where the widest intermediate
        (v before its clip, plus a wrap's offset) stays below 2^31, else int64."""
        nengo = self.quirks == "nengo"
        wrap_q = nengo and q_max >= 1 << 21
        if wrap_q:
            q_max = float(1 << 21)
        u_bound = q_max / (1 - float(self.keep_u.max()))
        bias_max = float(self.bias.abs().max())
        keep_v_max = float(self.keep_v.max())
        v_bound = (u_bound + bias_max) / (1 - keep_v_max) if keep_v_max < 1 else float("inf")
        wrap_u = u_bound >= (1 << 23) - 1
        clip = not (v_bound <= float(self.vmax.min()) and -v_bound >= float(self.vmin.max()))
        # |u| before its wrap: at most 2^23 decayed plus one input once wraps can happen
        u_reach = max(u_bound, float(1 << 23)) + q_max if wrap_u else u_bound
        v_reach = max(float(self.vmax.max()), -float(self.vmin.min())) if clip else v_bound
        widest = max(q_max, v_reach + u_reach + bias_max + (1 << 23))
        return Guards(
            wrap_q=wrap_q,
            wrap_u=wrap_u,
            wrap_u_bias=nengo and u_bound + bias_max >= (1 << 23) - 1,
            clip=clip,
            dtype=torch.int32 if widest < INT32_LIMIT else torch.int64,
            integer_decay=max(u_reach, v_reach) >= 2**41,
        )


def run_compartments(config: CompartmentConfig, q: torch.Tensor, quirks: str = "nengo") -> Trace:
    """Run compartments with registers ``config`` on the integer input ``q`` [T, B, N].

    ``q`` is what the synapses deliver at each step (already ``w << (6 + weight_exp)`` per spike).
    Returns integer ``u``, ``v`` (int64, v after the reset) and boolean ``spikes``, each ``[T, B, N]``,
    on ``q``'s device.
    """
    if torch.is_tensor(q) and q.is_floating_point():
        raise invalid("q.dtype", q.dtype, "an integer dtype (int32, int64, ...)", ShapeError)
    q = check_integer(q, "q")
    if abs_max(q) >= 2**52:
        raise invalid("q", f"tensor with |q| up to {int(q.abs().max())}", "|q| < 2^52", ShapeError)
    out = Compartments(config, q.shape[2], q.device, quirks).simulate(q, record=("u", "v"))
    return Trace(out["u"], out["v"], out["spikes"])
