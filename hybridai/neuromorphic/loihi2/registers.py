"""Neuron registers of the Loihi 2 rules: one integer for the group or one per neuron.

Lava's fixed-point models hold every register in a numpy ``int32`` Var: a register is checked against that
width (or a narrower range of its own) before it reaches torch, and refused by name otherwise.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch

from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.fixed_point import check_integer

INT32 = (-(2**31), 2**31 - 1)


def integer_register(
    name: str, value: Any, accepted: str | None = None, *, low: int = INT32[0], high: int = INT32[1]
) -> Any:
    """``value`` as an int or a 1-D int64 tensor in ``[low, high]`` (default: int32's range), else a
    ConfigError/ShapeError naming ``name``, the value and ``accepted`` (by default the range, said as int32's)."""
    if accepted is None:
        width = " (an int32 register, as in Lava)" if (low, high) == INT32 else ""
        accepted = f"an int or a 1-D integer tensor [N] in [{low}, {high}]{width}"
    if torch.is_tensor(value):
        value = check_integer(value, name, rank=None)
        if value.ndim > 1:
            raise invalid(name, f"a tensor of shape {tuple(value.shape)}", "an int or a 1-D tensor [N]")
        if value.numel() and (int(value.min()) < low or int(value.max()) > high):
            shown = int(value.min()) if int(value.min()) < low else int(value.max())
            raise invalid(name, f"a tensor holding {shown}", accepted)
        return value
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise invalid(name, value, accepted)
    if not low <= int(value) <= high:  # int(): exact, and numbers.Integral declares no order
        raise invalid(name, value, accepted)
    return int(value)


def per_neuron(name: str, value: Any, n: int, device: torch.device) -> torch.Tensor:
    """Register ``value`` (checked by ``integer_register``) as int64 on ``device``, refused unless it has one
    value or ``n``."""
    tensor = torch.as_tensor(value, dtype=torch.int64, device=device)
    if tensor.ndim == 1 and tensor.shape[0] != n:
        raise invalid(f"config.{name}", f"a tensor of {tensor.shape[0]} values", f"one value or {n} (N)", ShapeError)
    return tensor
