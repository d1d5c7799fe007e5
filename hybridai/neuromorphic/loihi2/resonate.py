"""Loihi 2's resonate-and-fire neuron (Lava's ``RFZero``) in fixed point, batched in torch.

Semantics from lava-nc/lava ``src/lava/proc/resfire/process.py`` (``RFZero``: registers from frequency and
decay) and ``src/lava/proc/resfire/models.py`` (``PyRFZeroModelFixed``), read and rewritten here. Each neuron
holds a complex state ``u + i v`` that rotates and decays by ``(lct + i lst) / 2^15`` per step:

- registers: ``lct = trunc(exp(-dt / tau) cos(2 pi f dt) 2^15)``, ``lst = trunc(exp(-dt / tau) sin(2 pi f dt) 2^15)``
  (``from_frequency``);
- per step: ``u' = floor(u lct / 2^15) - floor(v lst / 2^15) + u_in``, ``v' = floor(v lct / 2^15) +
  floor(u lst / 2^15) + v_in``;
- a graded spike of payload ``u'`` when ``u' > uth``, ``v' >= 0`` and the previous ``v < 0`` (the phase crosses
  zero), else 0.

Lava keeps every register in numpy int32, whose products and sums wrap at 32 bits: they wrap here the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.fixed_point import check_integer, int32
from hybridai.neuromorphic.loihi2.registers import INT32, integer_register, per_neuron

ONE = 2**15  # lct and lst are fractions of 2^15
UTH = f"an int in [{INT32[0]}, {INT32[1]}] (one threshold for the group, an int32 register as in Lava)"


def part(x: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """``x r // 2^15`` with the int32 product wrapped (numpy int32 arithmetic) and floor division."""
    return torch.div(int32(x * r), ONE, rounding_mode="floor")


@dataclass(frozen=True)
class ResonateFireConfig:
    """Registers of resonate-and-fire neurons: ``lct``, ``lst`` (ints or 1-D integer tensors [N], fractions of
    2^15) and the threshold ``uth`` (one int for the whole group, as in Lava)."""

    lct: Any
    lst: Any
    uth: int = 1

    def __post_init__(self) -> None:
        for name in ("lct", "lst"):
            accepted = f"an int or a 1-D integer tensor [N] in [-{ONE}, {ONE}] (a fraction of 2^15)"
            object.__setattr__(self, name, integer_register(name, getattr(self, name), accepted, low=-ONE, high=ONE))
        uth = self.uth
        if torch.is_tensor(uth) or isinstance(uth, np.ndarray):  # one threshold for the group, as in Lava
            raise invalid("uth", uth, UTH)
        object.__setattr__(self, "uth", integer_register("uth", uth, UTH))

    @classmethod
    def from_frequency(cls, freqs: Any, decay_tau: Any, dt: float = 0.001, uth: int = 1) -> ResonateFireConfig:
        """Registers for oscillation frequencies ``freqs`` (Hz) decaying with ``decay_tau`` (s), ``dt`` s per step."""
        f = _reals("freqs", freqs, "finite frequencies in Hz (a number, or a sequence or tensor of numbers)")
        tau = _reals("decay_tau", decay_tau, "time constants > 0 in seconds (a number, or one per frequency)")
        if not bool(torch.isfinite(f).all()):
            raise invalid("freqs", freqs, "finite frequencies in Hz")
        if not bool((tau > 0).all()) or bool(torch.isnan(tau).any()):
            raise invalid("decay_tau", decay_tau, "time constants > 0 in seconds")
        try:
            torch.broadcast_shapes(f.shape, tau.shape)
        except RuntimeError:
            shapes = f"shape {tuple(tau.shape)} against freqs of shape {tuple(f.shape)}"
            raise invalid("decay_tau", decay_tau, f"one time constant, or one per frequency (got {shapes})") from None
        if not (isinstance(dt, int | float) and not isinstance(dt, bool) and math.isfinite(dt) and dt > 0):
            raise invalid("dt", dt, "a time step > 0 in seconds")
        decay, angle = torch.exp(-dt / tau), 2 * math.pi * f * dt
        lct = torch.trunc(decay * torch.cos(angle) * ONE).to(torch.int64)  # numpy's astype(int32) truncates
        lst = torch.trunc(decay * torch.sin(angle) * ONE).to(torch.int64)
        if lct.ndim == 0:
            return cls(int(lct), int(lst), uth)
        return cls(lct.reshape(-1), lst.reshape(-1), uth)


def _reals(argument: str, value: Any, accepted: str) -> torch.Tensor:
    """``value`` (a real number, or a sequence or tensor of them; not bools) as float64, else a ConfigError."""
    if isinstance(value, bool | np.bool_) or (
        torch.is_tensor(value) and (value.dtype == torch.bool or value.is_complex())
    ):
        raise invalid(argument, value, accepted)
    try:
        array = np.asarray(value.detach().cpu() if torch.is_tensor(value) else value)
    except (TypeError, ValueError, RuntimeError, NotImplementedError):  # NotImplementedError: a meta tensor
        raise invalid(argument, value, accepted) from None
    if array.size == 0 or array.dtype.kind not in "iuf":  # strings, None, objects, complex, bools, ragged lists
        raise invalid(argument, value, accepted)
    return torch.as_tensor(array.astype(np.float64))


class ResonateFireRun(NamedTuple):
    """Per step, ``[T, B, N]`` int64: the real and imaginary parts ``u``, ``v`` and the graded spikes (0: none)."""

    u: torch.Tensor
    v: torch.Tensor
    spikes: torch.Tensor


def run_resonate_and_fire(config: ResonateFireConfig, u_in: Any, v_in: Any = None) -> ResonateFireRun:
    """Run resonate-and-fire neurons on integer inputs ``u_in`` (and ``v_in``, default zeros) ``[T, B, N]``."""
    if not isinstance(config, ResonateFireConfig):
        raise invalid("config", type(config).__name__, "a hybridai.neuromorphic.loihi2.ResonateFireConfig")
    u_in = check_integer(u_in, "u_in")
    v_in = torch.zeros_like(u_in) if v_in is None else check_integer(v_in, "v_in")
    if v_in.shape != u_in.shape:
        raise invalid("v_in.shape", tuple(v_in.shape), f"{tuple(u_in.shape)} (the shape of u_in)", ShapeError)
    steps, batch, n = u_in.shape
    device = u_in.device
    lct, lst = (per_neuron(name, getattr(config, name), n, device) for name in ("lct", "lst"))
    u = torch.zeros(batch, n, dtype=torch.int64, device=device)
    v = torch.zeros_like(u)
    out = torch.empty(3, steps, batch, n, dtype=torch.int64, device=device)
    for t in range(steps):
        new_u = int32(part(u, lct) - part(v, lst) + u_in[t])
        new_v = int32(part(v, lct) + part(u, lst) + v_in[t])
        fire = (new_u > config.uth) & (new_v >= 0) & (v < 0)
        out[0, t], out[1, t], out[2, t] = new_u, new_v, torch.where(fire, new_u, torch.zeros_like(new_u))
        u, v = new_u, new_v
    return ResonateFireRun(out[0], out[1], out[2])
