"""Neuron parameters (decays, thresholds, time step, choices) checked into the tensors LIF and CUBA keep.

A parameter is a scalar or one value per neuron; each check names the argument, the value and the
accepted range (``hybridai.core.errors.invalid``), including values that only go wrong once stored
(``1e300`` becomes inf in float32).
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any

import numpy as np
import torch

from hybridai.core.errors import invalid


def finite_float(value: Any) -> float | None:
    """``value`` as a finite float if it is a real number (not a bool) that fits one, else None."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral) and abs(int(value)) > sys.float_info.max:  # float() would overflow
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def parameter_tensor(
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
        number = finite_float(value)
        if number is None:
            accepted = "a number or a tensor of per-neuron values"
            if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
                accepted = f"a finite number{bounds}, or a tensor of per-neuron values"
            raise invalid(argument, value, accepted)
        tensor = torch.tensor(number)
    tensor = tensor.to(torch.get_default_dtype()) if not tensor.is_floating_point() else tensor
    shown = shown_value(tensor) if torch.is_tensor(value) else value
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


def shown_value(tensor: torch.Tensor) -> Any:
    """A parameter tensor as an error message shows it: its value, or its range when it has several."""
    if tensor.numel() == 1:
        return tensor.item()
    return f"tensor with range [{tensor.min():.4g}, {tensor.max():.4g}]"


def check_choice(argument: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise invalid(argument, value, f"one of {choices}")
    return value


def check_dt(dt: Any) -> float:
    seconds = finite_float(dt)
    if seconds is None or seconds <= 0:
        raise invalid("dt", dt, "a positive finite number of seconds per time step, e.g. 1e-3")
    return seconds
