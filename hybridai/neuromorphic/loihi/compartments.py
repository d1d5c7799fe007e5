"""Bit-exact integer emulator of Loihi (first generation) CUBA-LIF compartments and synapses, batched in torch.

All state is int64 on the device of the input (CPU or CUDA); one call simulates every sample of a
batch at once. The rules are those of ``shared/reference/loihi.md``, checked against nengo-loihi 1.1
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
fake-quantized training (``training``) are built on these compartments in their own modules of this package.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np
import torch

from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.fixed_point import check_integer, wrap_f64
from hybridai.neuromorphic.loihi.float_lanes import abs_max, count_entering, lava_wrap_f64, scalar

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

    Speed: the integer rules run in float64 lanes that hold integers exactly (every intermediate,
    at most ``2^24 * 2^12``, is far below 2^53, and products by ``factor / 4096`` are exact dyadic
    products), because torch's float64 kernels are several times faster than its int64 ones on CPU;
    results come back as int64. Wraps and clips whose range the input provably cannot leave (bounded
    from the largest |q| and the decays before the loop) are skipped; they could not change a value.
    Each step is a dozen in-place operations on preallocated ``[B, N]`` buffers: u and v decay in one
    multiply, a refractory delay of 2 (nengo-loihi's ``tau_ref = dt``) holds v by the last step's spikes
    instead of a counter, and with a delay >= 2 everywhere v's reset is skipped unless v is recorded
    (the hold zeroes it next step anyway). Activity is counted from gathered columns at the end while
    every compartment with a bias is active by definition.
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
        self.vth = (regs["vth_mant"] << 6).to(f64)
        self.bias = (regs["bias_mant"] << regs["bias_exp"]).to(f64)
        self.has_bias = bool((self.bias != 0).any())
        if self.quirks == "nengo":
            self.refractory = regs["refractory"].to(f64)
            self.uses_refractory = bool((self.refractory > 1).any())
            self.vmin = (-(torch.ones_like(regs["vmin_exp"]) << regs["vmin_exp"]) + 1).to(f64)
            self.vmax = ((torch.ones_like(regs["vmax_exp"]) << (9 + 2 * regs["vmax_exp"])) - 1).to(f64)
        else:
            self.uses_refractory = False
            self.vmin = torch.tensor(-float(V_LIMIT), device=device)
            self.vmax = torch.tensor(float(V_LIMIT), device=device)
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
        q_max = abs_max(q)
        if self.quirks == "nengo" and q_max >= 1 << 21:
            q = wrap_f64(q.to(torch.float64), 21)
            q_max = abs_max(q)
        # float32 holds every integer below 2^24 exactly: half the memory traffic for the input
        q = q.to(torch.float32 if q_max < 2**24 else torch.float64)
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
        ([B, N] integers, read before the next call; None for no input), ``q_max`` an upper bound
        of every |q| (a looser bound only switches on wraps and clips that change nothing)."""
        loop = _Loop(self, self._guards(q_max), steps, batch, record)
        first_biased = min(max(bias_from, 0), steps) if self.has_bias else steps
        activity = _Activity(self, steps, batch, first_biased, loop.refractory.stale_v)
        for t in range(steps):
            q_t = loop.input(step_input(t))
            activity.observe(t, loop, q_t)  # what enters the update
            loop.step(t, q_t, biased=t >= first_biased)
        out = {name: trace.to(torch.int64) for name, trace in loop.traces.items()}
        return {**out, "spikes": loop.spikes, "active": activity.total(loop.spikes)}

    def _guards(self, q_max: float) -> _Guards:
        """The wraps and clips that inputs bounded by ``q_max`` can reach (|u| and |v| bounded from the decays:
        truncation only shrinks them)."""
        nengo = self.quirks == "nengo"
        wrap_q = nengo and q_max >= 1 << 21
        if wrap_q:
            q_max = float(1 << 21)
        u_bound = q_max / (1 - float(self.keep_u.max()))
        bias_max = float(self.bias.abs().max())
        keep_v_max = float(self.keep_v.max())
        v_bound = (u_bound + bias_max) / (1 - keep_v_max) if keep_v_max < 1 else float("inf")
        return _Guards(
            wrap_q=wrap_q,
            wrap_u=u_bound >= (1 << 23) - 1,
            wrap_u_bias=nengo and u_bound + bias_max >= (1 << 23) - 1,
            clip=not (v_bound <= float(self.vmax.min()) and -v_bound >= float(self.vmin.max())),
        )

    def _refractory(self, like: torch.Tensor, record: tuple[str, ...]) -> _Refractory:
        """How refractory periods act (nengo rules; Lava has none): a delay of 2 everywhere holds v at 0
        exactly one step after a spike, which the last step's spikes say; otherwise a counter. With a delay
        >= 2 everywhere, a compartment that spiked is held at 0 next step whatever its v, so v's reset is only
        needed to record it."""
        if not self.uses_refractory:
            return _Refractory(False, None, None, None, False)
        stale_v = float(self.refractory.min()) >= 2 and "v" not in record
        if bool((self.refractory == 2).all()):
            return _Refractory(True, None, None, None, stale_v)
        rest = scalar((self.refractory - 1).clamp(min=0))  # the counter after the spike's step
        return _Refractory(False, torch.zeros_like(like), torch.empty_like(like), rest, stale_v)


class _Guards(NamedTuple):
    """Which wraps and the voltage clip can change a value in this run (the others are skipped)."""

    wrap_q: bool  # nengo: q to 22 bits
    wrap_u: bool  # u to 24 bits
    wrap_u_bias: bool  # nengo: u + bias to 24 bits before it reaches v
    clip: bool  # v to [vmin, vmax]


class _Refractory(NamedTuple):
    """``hold``: v held at 0 by the last step's spikes (a delay of 2 everywhere); else ``counter`` (None: no
    refractory period) counts down in place, ``free`` its scratch, ``rest`` its value after a spike's step;
    ``stale_v``: v is not reset after a spike (the hold zeroes it next step)."""

    hold: bool
    counter: torch.Tensor | None
    free: torch.Tensor | None
    rest: torch.Tensor | float | None
    stale_v: bool


class _Loop:
    """The state of one ``simulate_steps`` call: preallocated ``[B, N]`` buffers, updated in place each step."""

    def __init__(self, group: Compartments, guards: _Guards, steps: int, batch: int, record: tuple[str, ...]) -> None:
        f64, device, n = torch.float64, group.device, group.n
        self.nengo, self.guards = group.quirks == "nengo", guards
        # registers shared by every compartment act as Python numbers (no broadcast tensor)
        self.vth, self.bias = scalar(group.vth), scalar(group.bias)
        self.vmin, self.vmax = group.vmin, group.vmax
        # shared voltage limits as a pair of numbers (clamp_ takes two tensors or two numbers), else None
        self.v_limits: tuple[float, float] | None = None
        if group.vmin.numel() == group.vmax.numel() == 1:
            self.v_limits = (group.vmin.item(), group.vmax.item())
        self.uv = torch.zeros(2, batch, n, dtype=f64, device=device)  # u and v, decayed by one multiply
        # truncation toward zero as a round trip through int32 (C's conversion truncates; vectorised on every
        # CPU, where torch's trunc_ on float64 is 8x slower on some): exact, since |u| < 2^24 after its wrap
        # and |v| <= max(|vmin|, |vmax|) <= 2^31 - 1 after the clip, and decaying only shrinks them
        self.uv_int = torch.empty(2, batch, n, dtype=torch.int32, device=device)
        self.u, self.v = self.uv[0], self.uv[1]
        keep_uv = torch.stack([group.keep_u.expand(n), group.keep_v.expand(n)]).unsqueeze(1)
        if group.keep_u.numel() == group.keep_v.numel() == 1:
            keep_uv = keep_uv[:, :, :1].contiguous()
        self.keep_uv = keep_uv
        self.spiked = torch.zeros_like(self.u)  # the last step's spikes as 0/1
        self.q64 = torch.empty_like(self.u)
        self.traces = {name: torch.empty((steps, batch, n), dtype=f64, device=device) for name in record}
        self.spikes = torch.empty((steps, batch, n), dtype=torch.bool, device=device)
        self.refractory = group._refractory(self.u, record)

    def input(self, q_t: torch.Tensor | None) -> torch.Tensor | None:
        """One step's input as float64 (one conversion into a reused buffer: cheaper than a mixed-dtype add),
        wrapped to q's 22 bits where it can reach them."""
        if q_t is None:
            return None
        if q_t.dtype != torch.float64:
            q_t = self.q64.copy_(q_t)
        if self.guards.wrap_q:
            return wrap_f64(q_t, 21)
        return q_t

    def step(self, t: int, q_t: torch.Tensor | None, biased: bool) -> None:
        """Decay, integrate, wrap, clip, hold, spike, reset: one update of every compartment."""
        u, v, spiked, guards, refractory = self.u, self.v, self.spiked, self.guards, self.refractory
        self.uv.copy_(self.uv_int.copy_(self.uv.mul_(self.keep_uv)))  # decay, truncated toward zero
        if q_t is not None:
            u.add_(q_t)
        if guards.wrap_u:
            u.copy_(wrap_f64(u, 23) if self.nengo else lava_wrap_f64(u))
        if biased and guards.wrap_u_bias:
            v.add_(wrap_f64(u + self.bias, 23))
        else:
            v.add_(u)
            if biased:
                v.add_(self.bias)  # exact integer sums: the same as adding u + bias (nengo) or bias to v (Lava)
        if guards.clip:
            if self.v_limits is not None:
                v.clamp_(*self.v_limits)
            else:
                v.clamp_(self.vmin, self.vmax)
        counter = refractory.counter
        if refractory.hold:  # held at 0 the step after a spike
            v.addcmul_(v, spiked, value=-1.0)
        elif counter is not None:  # held at 0 while the refractory counter runs
            v.mul_(torch.le(counter, 0.0, out=refractory.free))
        if "v_pre" in self.traces:
            self.traces["v_pre"][t] = v
        torch.gt(v, self.vth, out=spiked)  # strict threshold
        self.spikes[t].copy_(spiked)
        if not refractory.stale_v:
            v.addcmul_(v, spiked, value=-1.0)  # reset to zero
        if counter is not None:  # count down to 0; a spike (never while counting) sets refractory - 1
            counter.sub_(1.0).clamp_(min=0.0)
            if isinstance(refractory.rest, float):
                counter.add_(spiked, alpha=refractory.rest)
            else:
                assert refractory.rest is not None  # set with the counter (Compartments._refractory)
                counter.addcmul_(spiked, refractory.rest)
        if "u" in self.traces:
            self.traces["u"][t] = u
        if "v" in self.traces:
            self.traces["v"][t] = v


class _Activity:
    """Counts active updates: those whose compartment has a non-zero u, v or q entering the update, or a
    bias acting on it. Before the biases act, counted step by step; while they act, every compartment with a
    bias is active, and the others' u, v and q are gathered step by step and counted at the end."""

    def __init__(self, group: Compartments, steps: int, batch: int, first_biased: int, stale_v: bool) -> None:
        f64, device = torch.float64, group.device
        self.steps, self.first_biased, self.stale_v = steps, first_biased, stale_v
        self.counted = torch.zeros((), dtype=f64, device=device)
        self.scratch = torch.empty(batch, group.n, dtype=f64, device=device)
        unbiased = (group.bias == 0).nonzero().flatten() if group.bias.numel() > 1 else None
        gather = unbiased is not None and 0 < unbiased.numel() and first_biased < steps
        # the compartments without a bias, whose u, v and q are gathered while the biases act (None: no gathering)
        self.unbiased = unbiased if gather else None
        if self.unbiased is not None:
            self.gathered_uv = torch.empty(
                steps - first_biased, 2, batch, self.unbiased.numel(), dtype=f64, device=device
            )
        self.gathered_q: torch.Tensor | None = None
        per_sample = int((group.bias != 0).sum()) * (1 if group.bias.numel() > 1 else group.n)
        self.bias_active = per_sample * batch

    def observe(self, t: int, loop: _Loop, q_t: torch.Tensor | None) -> None:
        """Note what enters step ``t``'s update (before it)."""
        if t < self.first_biased:
            spiked = loop.spiked if self.stale_v else None
            self.counted += count_entering(loop.u, loop.v, q_t, spiked, self.scratch)
        elif self.unbiased is not None:
            row = t - self.first_biased
            torch.index_select(loop.uv, 2, self.unbiased, out=self.gathered_uv[row])
            if q_t is not None:
                if self.gathered_q is None:
                    shape = (len(self.gathered_uv), *self.gathered_uv.shape[2:])
                    self.gathered_q = torch.zeros(shape, dtype=q_t.dtype, device=q_t.device)
                torch.index_select(q_t, 1, self.unbiased, out=self.gathered_q[row])

    def total(self, spikes: torch.Tensor) -> int:
        """The active updates of the run whose spikes are ``spikes`` ``[T, B, N]``."""
        first, steps = self.first_biased, self.steps
        active = (steps - first) * self.bias_active + int(self.counted)
        if self.unbiased is None:
            return active
        entering = self.gathered_uv[:, 0] != 0
        v_entering = self.gathered_uv[:, 1] != 0
        if self.stale_v:  # v not reset after a spike enters as 0
            before = torch.zeros_like(v_entering)
            start = max(first, 1)
            before[start - first :] = spikes[start - 1 : steps - 1].index_select(2, self.unbiased)
            v_entering &= ~before
        entering |= v_entering
        if self.gathered_q is not None:
            entering |= self.gathered_q != 0
        return active + int(entering.sum())


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
