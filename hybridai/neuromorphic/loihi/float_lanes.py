"""Helpers for Loihi 1's integers held in float lanes: the largest |q| of an input, and Lava's u wrap in float64.

Every value is an integer far below 2^53, so float64 arithmetic on it is exact. Lava's u wrap here is fake-quantized
training's (``training``): floor and comparisons carry no gradient, so under autograd a wrap's gradient is the
identity (a straight-through estimator). The emulator's own time loop runs in integer lanes (``lanes``); the
chip-independent wraps (``wrap``, ``wrap_f64``) are in ``hybridai.neuromorphic.fixed_point``.
"""

from __future__ import annotations

import torch


def abs_max(q: torch.Tensor) -> float:
    """max |q| (0 when empty), without an |q| copy of the input."""
    if not q.numel():
        return 0.0
    low, high = torch.aminmax(q)
    return max(-float(low), float(high))


def lava_wrap_f64(x: torch.Tensor) -> torch.Tensor:
    """Lava's u overflow rule on integers held in float64: one conditional subtraction or addition of 2^24
    (+2^23 survives); under autograd its gradient is the identity."""
    half = float(1 << 23)
    return x - (2 * half) * (x > half).to(x.dtype) + (2 * half) * (x <= -half).to(x.dtype)
