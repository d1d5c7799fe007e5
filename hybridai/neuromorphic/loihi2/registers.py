"""Neuron registers of the Loihi 2 rules: one integer for the group or one per neuron."""

from __future__ import annotations

from typing import Any

import torch

from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.loihi.compartments import check_integer


def integer_register(name: str, value: Any, accepted: str = "an int or a 1-D integer tensor [N]") -> Any:
    """``value`` as an int or a 1-D int64 tensor, else a ConfigError/ShapeError naming ``name``."""
    if torch.is_tensor(value):
        value = check_integer(value, name, rank=None)
        if value.ndim > 1:
            raise invalid(name, f"a tensor of shape {tuple(value.shape)}", "an int or a 1-D tensor [N]")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(name, value, accepted)
    return value


def per_neuron(name: str, value: Any, n: int, device: torch.device) -> torch.Tensor:
    """Register ``value`` (checked by ``integer_register``) as int64 on ``device``, refused unless it has one
    value or ``n``."""
    tensor = torch.as_tensor(value, dtype=torch.int64, device=device)
    if tensor.ndim == 1 and tensor.shape[0] != n:
        raise invalid(f"config.{name}", f"a tensor of {tensor.shape[0]} values", f"one value or {n} (N)", ShapeError)
    return tensor
