"""Encoders (values -> spike trains), decoders (spike trains -> values) and adapters.

The layout rule: spiking tensors are time-major ``[T, B, ...]``; classical and quantum layers take
``[B, F]``. These modules are the explicit adapters at that seam, so that a spiking block sits in the
middle of an ``nn.Sequential``::

    nn.Sequential(nn.Linear(64, 8), nn.Sigmoid(),
                  RateEncoder(num_steps=20, seed=0),      # [B, 8] -> [T, B, 8] spikes
                  nn.Linear(8, 8), LIF(beta=0.9),         # Linear broadcasts over T
                  RateDecoder(),                          # [T, B, 8] -> [B, 8] rates
                  QuantumLayer(...))

- encoders (``RateEncoder``, ``RepeatEncoder``, ``LatencyEncoder``): ``[B, ...]`` -> ``[T, B, ...]``;
  ``DeltaEncoder`` turns a time-major signal into time-major spikes;
- decoders (``SpikeCountDecoder``, ``RateDecoder``, ``MembraneDecoder``): ``[T, B, ...]`` -> ``[B, ...]``;
- ``TimeDistributed(module)``: runs a per-sample ``[B, ...]`` layer (``nn.Conv2d``) on every step of
  ``[T, B, ...]``; spiking layers go next to it, never inside it.

Random encoders take a seed and draw from their own generator, so a model gives the same spikes for
the same seed and call order.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from hybridai.core.errors import ConfigError, ShapeError, bounded_int, invalid, positive_int
from hybridai.core.module import HybridModule
from hybridai.spiking.layer_kind import LayerKind
from hybridai.spiking.layout import check_time_major


def _finite_number(argument: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise invalid(argument, value, "a finite number" + (" > 0" if positive else ""))
    if positive and value <= 0:
        raise invalid(argument, value, "a finite number > 0")
    return float(value)


SEED_MAX = 2**64 - 1  # torch.Generator.manual_seed takes seeds up to an unsigned 64-bit int


def _seed(value: Any) -> int:
    """A seed torch's generators accept: an int in [0, 2**64 - 1] (numpy ints too, not a bool)."""
    return bounded_int("seed", value, 0, SEED_MAX)


def _check_static(x: Any, argument: str = "x") -> torch.Tensor:
    """A non-time-major input ``[B, ...]`` with finite floating values."""
    if not torch.is_tensor(x):
        raise invalid(argument, type(x).__name__, "a torch.Tensor of shape [B, ...]", ShapeError)
    if x.ndim < 1 or x.numel() == 0:
        raise invalid(f"{argument}.shape", tuple(x.shape), "[B, ...] with at least one element", ShapeError)
    x = x if x.is_floating_point() else x.to(torch.get_default_dtype())
    if not torch.isfinite(x).all():
        raise invalid(argument, "a tensor containing NaN or inf", "finite values")
    return x


class _Encoder(HybridModule):
    domain = "spiking"
    default_backend = "torch"

    def __init__(self) -> None:
        super().__init__()
        self.set_backend(self.default_backend)


class _StraightThroughRate(torch.autograd.Function):
    """Bernoulli spikes whose gradient is the straight-through estimate d spikes_t / d p = 1."""

    @staticmethod
    def forward(ctx: Any, probabilities: torch.Tensor, num_steps: int, generator: torch.Generator) -> torch.Tensor:
        expanded = probabilities.unsqueeze(0).expand(num_steps, *probabilities.shape)
        return torch.bernoulli(expanded, generator=generator)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        return grad.sum(0), None, None


class RateEncoder(_Encoder):
    """Rate (Bernoulli/Poisson) coding: ``[B, ...]`` values -> ``[T, B, ...]`` spikes.

    An adapter from ``[B, F]`` layers (classical, quantum) into the spiking, time-major domain.

    At each of ``num_steps`` steps a neuron spikes with probability ``p = gain * x``, which
    must lie in [0, 1] (``clamp=True`` clips instead of raising). Seeded: ``seed`` (an int in
    [0, 2**64 - 1], the range torch's generators take) starts the encoder's own generator;
    ``reseed()`` restarts it. Gradients pass straight through (d spike / d x = gain per step),
    so layers before the encoder still train.
    """

    def __init__(self, num_steps: int, *, gain: float = 1.0, seed: int = 0, clamp: bool = False) -> None:
        super().__init__()
        self.num_steps = positive_int("num_steps", num_steps)
        self.gain = _finite_number("gain", gain, positive=True)
        self.seed = _seed(seed)
        self.clamp = bool(clamp)
        self._generators: dict[str, torch.Generator] = {}

    def reseed(self, seed: int | None = None) -> None:
        """Restart the random stream (from ``seed``, or the constructor's seed)."""
        if seed is not None:
            self.seed = _seed(seed)
        self._generators.clear()

    def _generator(self, device: torch.device) -> torch.Generator:
        key = str(device)
        if key not in self._generators:
            self._generators[key] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _check_static(x)
        probabilities = x * self.gain
        if self.clamp:
            probabilities = probabilities.clamp(0, 1)
        else:
            low, high = float(probabilities.detach().min()), float(probabilities.detach().max())
            if low < 0 or high > 1:
                raise invalid(
                    "x",
                    f"values with gain * x in [{low:.4g}, {high:.4g}]",
                    "gain * x in [0, 1] (a spike probability per step); put nn.Sigmoid() before the "
                    "encoder or pass clamp=True",
                )
        return _StraightThroughRate.apply(probabilities, self.num_steps, self._generator(x.device))

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_generators"] = {}
        return state

    def extra_repr(self) -> str:
        return f"num_steps={self.num_steps}, gain={self.gain:g}, seed={self.seed}"


class RepeatEncoder(_Encoder):
    """Direct (current) coding: ``[B, ...]`` -> ``[T, B, ...]``, the same value at every step.

    An adapter from ``[B, F]`` layers into the spiking, time-major domain. Differentiable; the
    first spiking layer turns the constant current into spikes.
    """

    def __init__(self, num_steps: int) -> None:
        super().__init__()
        self.num_steps = positive_int("num_steps", num_steps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _check_static(x)
        return x.unsqueeze(0).expand(self.num_steps, *x.shape)

    def extra_repr(self) -> str:
        return f"num_steps={self.num_steps}"


class LatencyEncoder(_Encoder):
    """Latency (time-to-first-spike) coding: each value in [0, 1] spikes once; larger is earlier.

    An adapter from ``[B, ...]`` values to time-major ``[T, B, ...]`` spikes.

    ``method="linear"``: spike at step ``round((1 - x) * (T - 1))``.
    ``method="log"`` (an RC circuit charging to ``threshold``): step ``round(tau * ln(x / (x - threshold)))``,
    dropped when it falls after the last step. Values ``<= threshold`` never spike.
    The output carries no gradient (the spike time is not differentiable).
    """

    METHODS = ("linear", "log")

    def __init__(self, num_steps: int, *, method: str = "linear", tau: float = 5.0, threshold: float = 0.01) -> None:
        super().__init__()
        self.num_steps = positive_int("num_steps", num_steps)
        if method not in self.METHODS:
            raise invalid("method", method, f"one of {self.METHODS}")
        self.method = method
        self.tau = _finite_number("tau", tau, positive=True)
        self.threshold = _finite_number("threshold", threshold)
        if not 0 <= self.threshold < 1:
            raise invalid("threshold", threshold, "a number in [0, 1)")

    def spike_steps(self, x: torch.Tensor) -> torch.Tensor:
        """The step at which each value spikes (``num_steps`` where it never does), int64 ``[B, ...]``."""
        x = _check_static(x).detach()
        if float(x.min()) < 0 or float(x.max()) > 1:
            raise invalid("x", f"values in [{float(x.min()):.4g}, {float(x.max()):.4g}]", "values in [0, 1]")
        fires = x > self.threshold
        if self.method == "linear":
            steps = torch.round((1 - x) * (self.num_steps - 1))
        else:
            safe = torch.where(fires, x, torch.ones_like(x))
            steps = torch.round(self.tau * torch.log(safe / (safe - self.threshold)))
        steps = torch.where(fires & (steps < self.num_steps), steps, torch.full_like(steps, self.num_steps))
        return steps.to(torch.int64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps = self.spike_steps(x)
        out = torch.zeros(self.num_steps + 1, *steps.shape, dtype=_check_static(x).dtype, device=x.device)
        out.scatter_(0, steps.unsqueeze(0), 1.0)
        return out[: self.num_steps]

    def extra_repr(self) -> str:
        return f"num_steps={self.num_steps}, method={self.method!r}, threshold={self.threshold:g}"


class DeltaEncoder(_Encoder):
    """Delta (change) coding of a time-major signal ``[T, B, ...]``.

    Emits +1 where ``x[t] - x[t-1] >= threshold`` and, with ``off_spikes=True``, -1 where it is
    ``<= -threshold``. The first step is compared with ``x[0]`` itself (no spike) unless
    ``from_zero=True``, which compares it with zero. No gradient.
    """

    def __init__(self, threshold: float = 0.1, *, off_spikes: bool = True, from_zero: bool = False) -> None:
        super().__init__()
        self.threshold = _finite_number("threshold", threshold, positive=True)
        self.off_spikes = bool(off_spikes)
        self.from_zero = bool(from_zero)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = check_time_major(x).detach()
        if not torch.isfinite(x).all():
            raise invalid("x", "a tensor containing NaN or inf", "finite values")
        previous = torch.cat([torch.zeros_like(x[:1]) if self.from_zero else x[:1], x[:-1]])
        change = x - previous
        spikes = (change >= self.threshold).to(x.dtype)
        if self.off_spikes:
            spikes = spikes - (change <= -self.threshold).to(x.dtype)
        return spikes

    def extra_repr(self) -> str:
        return f"threshold={self.threshold:g}, off_spikes={self.off_spikes}"


class _Decoder(_Encoder, LayerKind):
    """A decoder: the adapter from time-major spiking ``[T, B, ...]`` to ``[B, ...]`` (classical, quantum layers)."""

    kind = "decoder"

    def _time_major(self, x: Any) -> torch.Tensor:
        if isinstance(x, tuple):
            raise invalid(
                "x",
                "a tuple",
                "one tensor [T, B, ...]; a spiking layer with output='both' returns (spikes, mem): "
                "use output='spikes' or output='membrane' before a decoder",
                ShapeError,
            )
        return check_time_major(x)


class SpikeCountDecoder(_Decoder):
    """``[T, B, ...]`` spikes -> ``[B, ...]`` spike counts (sum over time). Differentiable.

    An adapter from the spiking, time-major domain to ``[B, F]`` layers (classical, quantum).
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._time_major(x).sum(0)


class RateDecoder(_Decoder):
    """``[T, B, ...]`` spikes -> ``[B, ...]`` firing rates in spikes per step (mean over time).

    An adapter from the spiking, time-major domain to ``[B, F]`` layers (classical, quantum).
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._time_major(x).mean(0)


class MembraneDecoder(_Decoder):
    """``[T, B, ...]`` membrane traces -> ``[B, ...]``: ``"max"`` (default), ``"mean"`` or ``"last"`` over time.

    An adapter from the spiking, time-major domain to ``[B, F]`` layers. Use after a spiking layer
    built with ``output="membrane"`` (a common read-out for classifiers).
    """

    REDUCTIONS = ("max", "mean", "last")

    def __init__(self, reduction: str = "max") -> None:
        super().__init__()
        if reduction not in self.REDUCTIONS:
            raise invalid("reduction", reduction, f"one of {self.REDUCTIONS}")
        self.reduction = reduction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._time_major(x)
        if self.reduction == "max":
            return x.max(0).values
        if self.reduction == "mean":
            return x.mean(0)
        return x[-1]

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class TimeDistributed(nn.Module):
    """Apply a per-sample module to every time step of ``[T, B, ...]`` in one call.

    ``TimeDistributed(nn.Conv2d(2, 8, 3))`` folds T into the batch (``[T*B, ...]``), runs the
    module once and unfolds the result, so layers that only take ``[B, ...]`` work on spike
    trains. (``nn.Linear`` already broadcasts over leading dimensions and needs no wrapper.)

    The module sees each step on its own, so it must not contain a spiking layer (``LIF``,
    ``CUBA``: its membrane would start from zero at every step) nor an encoder or decoder (they
    change the layout themselves): this is refused when the wrapper is built. Put spiking layers
    beside it: ``nn.Sequential(TimeDistributed(nn.Conv2d(2, 8, 3)), nn.Flatten(2), LIF(0.9))``.
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        if not isinstance(module, nn.Module):
            raise invalid("module", type(module).__name__, "a torch.nn.Module")
        _refuse_spiking_inside(module)
        self.module = module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = check_time_major(x)
        steps, batch = x.shape[:2]
        out = self.module(x.reshape(steps * batch, *x.shape[2:]))
        if not torch.is_tensor(out) or out.ndim < 1 or out.shape[0] != steps * batch:
            raise ConfigError(
                f"module={type(self.module).__name__} returned {type(out).__name__} "
                f"{tuple(out.shape) if torch.is_tensor(out) else ''}; accepted: a tensor with leading size T*B"
            )
        return out.reshape(steps, batch, *out.shape[1:])


def _is_spiking(module: nn.Module) -> bool:
    return isinstance(module, HybridModule) and module.domain == "spiking"


def _refuse_spiking_inside(module: nn.Module) -> None:
    """A ConfigError naming the first spiking layer, encoder or decoder inside ``module``, and the composition."""
    found = next(((name, sub) for name, sub in module.named_modules() if _is_spiking(sub)), None)
    if found is None:
        return
    name, inner = found
    where = "module" + "".join(f"[{part}]" if part.isdigit() else f".{part}" for part in name.split(".") if part)
    if isinstance(inner, _Encoder):  # encoders and decoders
        why = "it changes the layout itself ([B, ...] <-> [T, B, ...]) and must see the whole sequence"
    else:
        why = (
            "TimeDistributed runs the module on each time step separately (T folded into the batch), so a "
            "spiking layer inside it would start from a zero membrane at every step instead of integrating over time"
        )
    raise invalid(
        where,
        type(inner).__name__,
        f"per-sample layers only inside TimeDistributed; {why}. Put it beside the wrapper, which takes "
        f"[T, B, ...] itself: {_composition(module)}",
    )


def _composition(module: nn.Module) -> str:
    """The right composition of an ``nn.Sequential`` that mixes per-step and spiking layers, or the pattern."""
    pattern = "e.g. nn.Sequential(TimeDistributed(nn.Linear(8, 4)), LIF(0.9))"
    if not isinstance(module, nn.Sequential) or any(
        _is_spiking(sub) for child in module.children() if not _is_spiking(child) for sub in child.modules()
    ):
        return pattern
    parts: list[str] = []
    run: list[str] = []
    for index, child in enumerate(module.children()):
        if _is_spiking(child):
            if run:
                parts.append(f"TimeDistributed({run[0] if len(run) == 1 else 'nn.Sequential(' + ', '.join(run) + ')'})")
                run = []
            parts.append(f"module[{index}]")
        else:
            run.append(f"module[{index}]")
    if run:
        parts.append(f"TimeDistributed({run[0] if len(run) == 1 else 'nn.Sequential(' + ', '.join(run) + ')'})")
    return f"nn.Sequential({', '.join(parts)}) ({pattern}; nn.Linear needs no wrapper: it broadcasts over T)"
