"""Helpers of the Loihi 1 emulator's time loop: integer rules on integers held in float64 lanes.

Every value is an integer far below 2^53, so float64 arithmetic on it is exact (see ``Compartments`` in
``compartments``). Lava's u wrap is also fake-quantized training's (``training``): floor and comparisons carry no
gradient, so under autograd a wrap's gradient is the identity (a straight-through estimator). The chip-independent
wraps (``wrap_f64``) are in ``hybridai.neuromorphic.fixed_point``.
"""

from __future__ import annotations

import torch


def scalar(x: torch.Tensor) -> torch.Tensor | float:
    """A register shared by every compartment as a Python float, else the per-compartment tensor."""
    return float(x) if x.numel() == 1 else x


def abs_max(q: torch.Tensor) -> float:
    """max |q| (0 when empty), without an |q| copy of the input."""
    if not q.numel():
        return 0.0
    low, high = torch.aminmax(q)
    return max(-float(low), float(high))


def count_entering(
    u: torch.Tensor, v: torch.Tensor, q: torch.Tensor | None, spiked: torch.Tensor | None, scratch: torch.Tensor
) -> torch.Tensor:
    """How many lanes have a non-zero u, v or q (v counted as 0 where ``spiked``: a reset not yet applied),
    computed in ``scratch``."""
    entering = torch.mul(u, u, out=scratch)
    if spiked is not None:
        v = torch.addcmul(v, v, spiked, value=-1.0)
    entering.addcmul_(v, v)
    if q is not None:
        entering.addcmul_(q, q)
    return entering.clamp_(max=1.0).sum()


def lava_wrap_f64(x: torch.Tensor) -> torch.Tensor:
    """Lava's u overflow rule on integers held in float64: one conditional subtraction or addition of 2^24
    (+2^23 survives); under autograd its gradient is the identity."""
    half = float(1 << 23)
    return x - (2 * half) * (x > half).to(x.dtype) + (2 * half) * (x <= -half).to(x.dtype)
