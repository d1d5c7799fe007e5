"""Loihi 2's Dense synapses with graded (integer-payload) input, bit-accurate as Lava's CPU model.

Semantics from lava-nc/lava ``src/lava/proc/dense/models.py`` (``PyDenseModelBitAcc``, with
``num_message_bits > 0``) and ``src/lava/utils/weightutils.py`` (``determine_sign_mode``, ``clip_weights``,
``truncate_weights``), read and rewritten here:

- sign mode (unless given): "excitatory" if every weight is >= 0, else "inhibitory" if every weight is <= 0,
  else "mixed";
- clip: weights to [-256, 255] ("mixed") or [0, 255] (the others, on the magnitudes of inhibitory ones);
- truncate to ``num_weight_bits``: the lowest ``8 - num_weight_bits`` bits (one more for "mixed") are cleared,
  ``(w >> k) << k`` on the magnitudes of inhibitory weights and on the signed values otherwise (floor);
- per step ``t``: the output is the buffer (0 at the first step), then the buffer becomes
  ``(W @ messages[t]) << weight_exp`` (``weight_exp > 0``) or ``>> -weight_exp`` (floor): a message reaches
  its targets one step later. Lava holds the buffer in numpy int32: sums and shifts wrap at 32 bits here too.
"""

from __future__ import annotations

from typing import Any

import torch

from hybridai.core.errors import ShapeError, bounded_int, invalid
from hybridai.neuromorphic.fixed_point import check_integer, graded_sums

SIGN_MODES = ("mixed", "excitatory", "inhibitory")


def sign_mode_of(weights: torch.Tensor) -> str:
    """Lava's sign mode of an integer weight matrix."""
    if bool((weights >= 0).all()):
        return "excitatory"
    if bool((weights <= 0).all()):
        return "inhibitory"
    return "mixed"


def effective_weights(weights: Any, num_weight_bits: int = 8, sign_mode: str | None = None) -> torch.Tensor:
    """The weights ``[M, N]`` (int64) that act after Lava's clip to 8 bits and truncation to ``num_weight_bits``."""
    w = check_integer(weights, "weights", rank=2)
    bounded_int("num_weight_bits", num_weight_bits, 1, 8)
    mode = sign_mode_of(w) if sign_mode is None else sign_mode
    if mode not in SIGN_MODES:
        raise invalid("sign_mode", sign_mode, f"None (from the weights) or one of {SIGN_MODES}")
    mixed = mode == "mixed"
    magnitude = -w if mode == "inhibitory" else w
    magnitude = magnitude.clamp(-256 if mixed else 0, 255)
    k = 8 - num_weight_bits + int(mixed)
    magnitude = (magnitude >> k) << k
    return -magnitude if mode == "inhibitory" else magnitude


def graded_dense(
    weights: Any, messages: Any, weight_exp: int = 0, num_weight_bits: int = 8, sign_mode: str | None = None
) -> torch.Tensor:
    """Synaptic input ``[T, B, M]`` (int64) that graded ``messages`` ``[T, B, N]`` deliver through ``weights``
    ``[M, N]`` (module docstring: clip, truncation, weight exponent, one-step buffer)."""
    w = effective_weights(weights, num_weight_bits, sign_mode)
    bounded_int("weight_exp", weight_exp, -31, 31)
    s = check_integer(messages, "messages")
    if s.shape[2] != w.shape[1]:
        accepted = f"[T, B, {w.shape[1]}] (weights are {tuple(w.shape)})"
        raise invalid("messages.shape", tuple(s.shape), accepted, ShapeError)
    out = torch.zeros(s.shape[0], s.shape[1], w.shape[0], dtype=torch.int64, device=s.device)
    out[1:] = graded_sums(w.to(s.device), s[:-1], weight_exp)
    return out
