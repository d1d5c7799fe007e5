"""LIF and CUBA spiking layers on time-major ``[T, B, ...]`` tensors.

Both run all T steps in one fused autograd node (``fused.py``) and reproduce snnTorch's
``Leaky`` and ``Synaptic`` (same parameters, ``reset_delay=True``): spikes bit for bit,
gradients to rounding. One time step lasts ``dt`` seconds; ``dt`` only matters when the
layer is exported (NIR) or deployed, where decays become time constants
``tau = dt / (1 - beta)``.

Long sequences: ``recompute_steps=K`` recomputes the T steps in chunks of K in backward
(inside the fused node): backward keeps the layer's input and the state at chunk boundaries
instead of the membrane (and synaptic) traces and recomputes one chunk at a time; outputs
and gradients are bit-identical.
Under ``torch.autocast`` the layers compute in and return float32 (float64 for float64
inputs; see ``hybridai.core.precision``): a membrane integrated over many steps in bf16 drifts.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

import numpy as np
import torch
from torch import nn

from hybridai.core.errors import ConfigError, ShapeError, invalid, optional_int
from hybridai.core.module import HybridModule
from hybridai.core.precision import keeps_precision, spiking_dtype
from hybridai.spiking.fused import CUBAFunction, LIFFunction
from hybridai.spiking.surrogate import Surrogate, make_surrogate

RESETS = ("subtract", "zero")
OUTPUTS = ("spikes", "membrane", "both")


def _finite_float(value: Any) -> float | None:
    """``value`` as a finite float if it is a real number (not a bool) that fits one, else None."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral) and abs(value) > sys.float_info.max:  # float() would overflow
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _parameter_tensor(
    argument: str, value: Any, low: float | None = None, high: float | None = None, *, positive: bool = False
) -> torch.Tensor:
    """A float tensor (scalar or per neuron) checked to be finite and inside [low, high] (``positive``: > 0)."""
    bounds = f" in [{low}, {high}]" if low is not None and high is not None else " > 0" if positive else ""
    if torch.is_tensor(value):
        if value.is_complex() or value.dtype == torch.bool or value.numel() == 0:
            shown = f"tensor of dtype {value.dtype} and shape {tuple(value.shape)}"
            raise invalid(argument, shown, f"a number or a non-empty real tensor of per-neuron values{bounds}")
        tensor = value.detach().clone()
    else:
        number = _finite_float(value)
        if number is None:
            accepted = "a number or a tensor of per-neuron values"
            if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
                accepted = f"a finite number{bounds}, or a tensor of per-neuron values"
            raise invalid(argument, value, accepted)
        tensor = torch.tensor(number)
    tensor = tensor.to(torch.get_default_dtype()) if not tensor.is_floating_point() else tensor
    shown = _shown(tensor) if torch.is_tensor(value) else value
    stored = None if torch.is_tensor(value) else tensor.item()
    if stored is not None and stored in (0.0, math.inf, -math.inf) and stored != float(value):  # 1e300, 1e-50
        bounds += f" once stored as {tensor.dtype} (where {value!r} is {tensor.item()!r})"
    if not torch.isfinite(tensor).all():
        raise invalid(argument, shown, f"finite values{bounds}")
    if (low is not None and (tensor < low).any()) or (high is not None and (tensor > high).any()):
        raise invalid(argument, shown, f"values{bounds}")
    if positive and (tensor <= 0).any():
        raise invalid(
            argument,
            shown,
            f"values{bounds} (a threshold <= 0 makes a neuron fire at every step, whatever its input)",
        )
    return tensor


def _shown(tensor: torch.Tensor) -> Any:
    """A parameter tensor as an error message shows it: its value, or its range when it has several."""
    if tensor.numel() == 1:
        return tensor.item()
    return f"tensor with range [{tensor.min():.4g}, {tensor.max():.4g}]"


def _check_choice(argument: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise invalid(argument, value, f"one of {choices}")
    return value


def _working_dtype(layer: Any, incoming: torch.dtype) -> torch.dtype:
    return spiking_dtype(incoming)


def _check_dt(dt: Any) -> float:
    seconds = _finite_float(dt)
    if seconds is None or seconds <= 0:
        raise invalid("dt", dt, "a positive finite number of seconds per time step, e.g. 1e-3")
    return seconds


def check_time_major(x: Any, argument: str = "x") -> torch.Tensor:
    """Validate a time-major spiking tensor ``[T, B, ...]`` (T >= 1, B >= 1, floating)."""
    if not torch.is_tensor(x):
        raise invalid(argument, type(x).__name__, "a torch.Tensor of shape [T, B, ...] (time-major)", ShapeError)
    if x.ndim < 3:
        raise invalid(
            f"{argument}.shape",
            tuple(x.shape),
            "a time-major tensor [T, B, features...] with at least 3 dimensions; "
            "turn [B, F] inputs into [T, B, F] with hybridai.RepeatEncoder or hybridai.RateEncoder",
            ShapeError,
        )
    if x.shape[0] == 0:
        raise invalid(f"{argument}.shape", tuple(x.shape), "at least one time step (T >= 1 in [T, B, ...])", ShapeError)
    if x.shape[1] == 0 or any(d == 0 for d in x.shape[2:]):
        raise invalid(f"{argument}.shape", tuple(x.shape), "at least one sample and one neuron", ShapeError)
    if not x.is_floating_point():
        raise invalid(f"{argument}.dtype", x.dtype, "a floating dtype (float32, float64, ...)", ShapeError)
    return x


def _first_non_finite_step(x: torch.Tensor) -> int | None:
    bad = (~torch.isfinite(x)).flatten(1).any(1).nonzero()
    return int(bad[0]) if len(bad) else None


class _SpikingLayer(HybridModule):
    """What LIF and CUBA share: threshold, reset, surrogate, output choice, carried state."""

    domain = "spiking"
    default_backend = "torch"

    def __init__(
        self,
        *,
        threshold: float | torch.Tensor,
        reset: str,
        surrogate: str | Surrogate,
        learn_threshold: bool,
        output: str,
        stateful: bool,
        dt: float,
        backend: str | None,
        recompute_steps: int | None,
    ) -> None:
        super().__init__()
        self.recompute_steps = optional_int("recompute_steps", recompute_steps, 1)
        self.reset = _check_choice("reset", reset, RESETS)
        self.output = _check_choice("output", output, OUTPUTS)
        self.surrogate = make_surrogate(surrogate)
        self.stateful = bool(stateful)
        self.dt = _check_dt(dt)
        self._register("threshold", _parameter_tensor("threshold", threshold, positive=True), learn_threshold)
        self.state: Any = None
        self.n_neurons: int | None = None
        self.set_backend(self.default_backend if backend is None else backend)

    def _register(self, name: str, tensor: torch.Tensor, learn: bool) -> None:
        if learn:
            self.register_parameter(name, nn.Parameter(tensor))
        else:
            self.register_buffer(name, tensor)

    def reset_state(self) -> None:
        """Forget the carried state: the next call starts from zero."""
        self.state = None

    def _check_parameters(self, x: torch.Tensor, names: tuple[str, ...]) -> list[torch.Tensor]:
        features = tuple(x.shape[2:])
        tensors = []
        for name in names:
            tensor = getattr(self, name)
            if tensor.device != x.device:
                raise invalid(
                    "x.device",
                    str(x.device),
                    f"the device of the layer's {name} ({tensor.device}); move the layer with .to({str(x.device)!r}) "
                    "or the input with .to(...)",
                    ShapeError,
                )
            try:
                shape = torch.broadcast_shapes(tensor.shape, features)
            except RuntimeError:
                shape = None
            if shape != features:
                raise ShapeError(
                    f"{name} has shape {tuple(tensor.shape)} but the input x has shape {tuple(x.shape)}; "
                    f"accepted: a {name} that broadcasts to the neuron shape {features} (a scalar or per neuron)"
                )
            if name == "threshold":  # learnt thresholds can be trained below 0: then every neuron fires every step
                if not bool(((tensor > 0) & (tensor < math.inf)).all()):
                    raise invalid(name, _shown(tensor.detach()), "finite values > 0 (a threshold <= 0 fires always)")
            elif not torch.isfinite(tensor).all():
                raise invalid(name, _shown(tensor.detach()), "finite values")
            tensors.append(tensor.to(x.dtype))
        return tensors

    def _initial(self, x: torch.Tensor, given: Any, n_states: int) -> list[torch.Tensor]:
        """The initial state(s), each ``[B, ...]``: given, carried, or zeros."""
        shape = tuple(x.shape[1:])
        accepted = "a tensor of shape [B, ...] = " if n_states == 1 else "a tuple (syn, mem) of tensors of shape "
        source = "state"
        if given is None and self.stateful and self.state is not None:
            given, source = self.state, "the carried state (call reset_state() to start afresh)"
        if given is None:
            return [torch.zeros(shape, dtype=x.dtype, device=x.device) for _ in range(n_states)]
        parts = (given,) if n_states == 1 else given
        if not isinstance(parts, tuple | list) or len(parts) != n_states or not all(torch.is_tensor(p) for p in parts):
            raise invalid(source, type(given).__name__, f"{accepted}{shape}", ShapeError)
        for part in parts:
            if part.device != x.device:
                raise invalid(f"{source} device", str(part.device), f"the device of x ({x.device})", ShapeError)
            if part.is_complex():
                raise invalid(f"{source} dtype", part.dtype, "a real dtype (the dtype of x)", ShapeError)
            if tuple(part.shape) != shape:
                raise invalid(
                    f"{source} shape",
                    tuple(part.shape),
                    f"{accepted}{shape} for x of shape {tuple(x.shape)}",
                    ShapeError,
                )
        return [p.to(x.dtype) for p in parts]

    def _chunking(self) -> tuple[int | None, bool]:
        """``(recompute_steps, keep_trace)`` for the fused functions: the membrane trace only when it is an output."""
        return self.recompute_steps, self.output != "spikes"

    def _finish(
        self,
        x: torch.Tensor,
        spikes: torch.Tensor,
        mem: torch.Tensor,
        last_mem: torch.Tensor,
        final_state: Any,
        initial: list[torch.Tensor] | None = None,
    ) -> Any:
        if not torch.isfinite(last_mem).all():  # a NaN or inf anywhere in x or the state persists to the last step
            step = _first_non_finite_step(x)
            if step is not None:
                raise ConfigError(f"x contains NaN or inf at time step {step}; accepted: finite values")
            if initial is not None and not all(bool(torch.isfinite(s).all()) for s in initial):
                raise invalid("state", "a tensor containing NaN or inf", "finite values")
            largest = float(x.detach().abs().max())
            raise invalid(
                "x",
                f"a tensor with |values| up to {largest:.4g}",
                f"inputs whose membrane stays finite in {x.dtype} (it overflowed to inf)",
            )
        self.n_neurons = math.prod(x.shape[2:])
        if self.stateful:
            self.state = final_state
        if self.output == "spikes":
            return spikes
        if self.output == "membrane":
            return mem
        return spikes, mem

    def size_description(self) -> str:
        sizes = [getattr(self, n).numel() for n in ("alpha", "beta", "threshold") if hasattr(self, n)]
        n = self.n_neurons or (max(sizes) if max(sizes) > 1 else None)
        return f"{n:,} neurons" if n else ""

    def extra_repr(self) -> str:
        def show(name: str) -> str:
            tensor = getattr(self, name)
            value = f"{tensor.item():.4g}" if tensor.numel() == 1 else f"<{tuple(tensor.shape)}>"
            return f"{name}={value}{' (learnt)' if isinstance(tensor, nn.Parameter) else ''}"

        names = [n for n in ("alpha", "beta", "threshold") if hasattr(self, n)]
        extras = ", stateful=True" if self.stateful else ""
        extras += f", recompute_steps={self.recompute_steps}" if self.recompute_steps else ""
        return (
            f"{', '.join(show(n) for n in names)}, reset={self.reset!r}, surrogate={self.surrogate!r}, "
            f"output={self.output!r}, dt={self.dt:g}{extras}, backend={self.backend!r}"
        )


class LIF(_SpikingLayer):
    """Leaky integrate-and-fire neurons (snnTorch's ``Leaky``), all T steps fused.

    ``U_t = beta * U_{t-1} + x_t - threshold * S_{t-1}`` (reset by subtraction) or
    ``U_t = beta * (1 - S_{t-1}) * U_{t-1} + x_t`` (reset to zero); ``S_t = U_t > threshold``.

    Args:
        beta: membrane decay per step in [0, 1] (scalar or per neuron); clamped to [0, 1]
            when learnt, as snnTorch does.
        threshold: firing threshold > 0 (membrane units; scalar or per neuron). A threshold <= 0 (given, or
            learnt down to it) is refused: every neuron would fire at every step whatever its input.
        reset: ``"subtract"`` or ``"zero"``.
        surrogate: ``"atan"`` (default, alpha=2), ``"fast_sigmoid"`` (slope=25),
            or an instance from ``hybridai.spiking.surrogate`` with other constants.
        learn_beta, learn_threshold: make them trainable parameters.
        output: ``"spikes"`` (default), ``"membrane"`` (the trace ``U``), or ``"both"`` (a tuple).
        stateful: carry the final membrane (detached) into the next call; ``reset_state()`` clears it.
        dt: seconds per time step (used by NIR export and deployment).
        backend: spiking backend name, default ``"torch"``.
        recompute_steps: ``None`` (default) or K: recompute the T steps in chunks of K in
            backward. Backward keeps the input x and ceil(T/K) states instead of the membrane
            trace, which is then never allocated (one [T, B, N] tensor less at the peak; two for
            CUBA with a learnt alpha); each chunk is recomputed once in backward. Outputs and
            gradients are bit-identical. K near sqrt(T) keeps the extra buffers smallest.

    Input ``[T, B, ...]``; output the same shape. ``forward(x, state=mem0)`` starts from a given
    membrane ``[B, ...]`` (gradients flow into it).
    """

    def __init__(
        self,
        beta: float | torch.Tensor = 0.9,
        *,
        threshold: float | torch.Tensor = 1.0,
        reset: str = "subtract",
        surrogate: str | Surrogate = "atan",
        learn_beta: bool = False,
        learn_threshold: bool = False,
        output: str = "spikes",
        stateful: bool = False,
        dt: float = 1e-3,
        backend: str | None = None,
        recompute_steps: int | None = None,
    ) -> None:
        super().__init__(
            threshold=threshold,
            reset=reset,
            surrogate=surrogate,
            learn_threshold=learn_threshold,
            output=output,
            stateful=stateful,
            dt=dt,
            backend=backend,
            recompute_steps=recompute_steps,
        )
        self._register("beta", _parameter_tensor("beta", beta, 0.0, 1.0), learn_beta)

    @keeps_precision(_working_dtype)
    def forward(self, x: torch.Tensor, state: torch.Tensor | None = None) -> Any:
        x = check_time_major(x)
        beta, threshold = self._check_parameters(x, ("beta", "threshold"))
        (mem0,) = self._initial(x, state, 1)
        spikes, mem, last = LIFFunction.apply(
            x, beta.clamp(0, 1), threshold, mem0, self.reset == "zero", self.surrogate, *self._chunking()
        )
        return self._finish(x, spikes, mem, last, last.detach() if self.stateful else None, [mem0])


class CUBA(_SpikingLayer):
    """Current-based synapse + LIF neurons (snnTorch's ``Synaptic``), all T steps fused.

    ``I_t = alpha * I_{t-1} + x_t``; ``U_t = beta * U_{t-1} + I_t - threshold * S_{t-1}``
    (subtract) or ``U_t = (1 - S_{t-1}) * (beta * U_{t-1} + I_t)`` (zero, snnTorch's rule);
    ``S_t = U_t > threshold``. Arguments as for ``LIF`` plus ``alpha`` (synaptic decay per
    step in [0, 1]) and ``learn_alpha``. The state is the tuple ``(syn, mem)``.
    """

    def __init__(
        self,
        alpha: float | torch.Tensor = 0.8,
        beta: float | torch.Tensor = 0.9,
        *,
        threshold: float | torch.Tensor = 1.0,
        reset: str = "subtract",
        surrogate: str | Surrogate = "atan",
        learn_alpha: bool = False,
        learn_beta: bool = False,
        learn_threshold: bool = False,
        output: str = "spikes",
        stateful: bool = False,
        dt: float = 1e-3,
        backend: str | None = None,
        recompute_steps: int | None = None,
    ) -> None:
        super().__init__(
            threshold=threshold,
            reset=reset,
            surrogate=surrogate,
            learn_threshold=learn_threshold,
            output=output,
            stateful=stateful,
            dt=dt,
            backend=backend,
            recompute_steps=recompute_steps,
        )
        self._register("alpha", _parameter_tensor("alpha", alpha, 0.0, 1.0), learn_alpha)
        self._register("beta", _parameter_tensor("beta", beta, 0.0, 1.0), learn_beta)

    @keeps_precision(_working_dtype)
    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None) -> Any:
        x = check_time_major(x)
        alpha, beta, threshold = self._check_parameters(x, ("alpha", "beta", "threshold"))
        syn0, mem0 = self._initial(x, state, 2)
        spikes, mem, syn_last, last = CUBAFunction.apply(
            x,
            alpha.clamp(0, 1),
            beta.clamp(0, 1),
            threshold,
            syn0,
            mem0,
            self.reset == "zero",
            self.surrogate,
            *self._chunking(),
        )
        final = (syn_last.detach().clone(), last.detach()) if self.stateful else None
        return self._finish(x, spikes, mem, last, final, [syn0, mem0])
