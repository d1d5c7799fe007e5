"""The layout of spiking tensors, and the checks that keep layouts from being mixed up.

The rule: every spiking tensor is time-major, ``[T, B, ...]`` (time steps, samples, neurons...),
as in torch's RNNs by default. ``LIF`` and ``CUBA`` built with ``batch_first=True`` take and return
``[B, T, ...]`` instead; ``layer.step(x_t, state)`` takes one step ``[B, ...]``. Encoders turn
``[B, ...]`` values into ``[T, B, ...]`` trains; decoders turn them back.

A batch-first tensor ``[B, T, N]`` given to a time-major layer has the same rank and the same
neuron dimension, so its shape alone cannot tell the two apart: hybridai never guesses. It says so
where a second shape does tell them apart: a given or carried state ``[B, ...]`` whose batch size
matches the wrong dimension, or a state with the shape of ``x`` itself (one step, not a sequence).
"""

from __future__ import annotations

from typing import Any

import torch

from hybridai.core.errors import ShapeError, invalid

TIME_MAJOR = "[T, B, ...]"
BATCH_FIRST = "[B, T, ...]"


def check_time_major(x: Any, argument: str = "x") -> torch.Tensor:
    """Validate a time-major spiking tensor ``[T, B, ...]`` (T >= 1, B >= 1, floating)."""
    return check_sequence(x, argument)


def check_sequence(x: Any, argument: str = "x", *, batch_first: bool = False, hint: str = "") -> torch.Tensor:
    """Validate a sequence ``[T, B, ...]`` (``[B, T, ...]`` when ``batch_first``) and return it time-major.

    ``hint`` is added to the error for a tensor with fewer than 3 dimensions (what the caller suggests).
    """
    layout = BATCH_FIRST if batch_first else TIME_MAJOR
    named = "batch-first" if batch_first else "time-major"
    if not torch.is_tensor(x):
        raise invalid(argument, type(x).__name__, f"a torch.Tensor of shape {layout} ({named})", ShapeError)
    if x.ndim < 3:
        raise invalid(
            f"{argument}.shape",
            tuple(x.shape),
            f"a {named} tensor {layout.replace('...', 'features...')} with at least 3 dimensions; "
            "turn [B, F] inputs into [T, B, F] with hybridai.RepeatEncoder or hybridai.RateEncoder" + hint,
            ShapeError,
        )
    time, batch = (1, 0) if batch_first else (0, 1)
    if x.shape[time] == 0:
        raise invalid(f"{argument}.shape", tuple(x.shape), f"at least one time step (T >= 1 in {layout})", ShapeError)
    if x.shape[batch] == 0 or any(d == 0 for d in x.shape[2:]):
        raise invalid(f"{argument}.shape", tuple(x.shape), "at least one sample and one neuron", ShapeError)
    if not x.is_floating_point():
        raise invalid(f"{argument}.dtype", x.dtype, "a floating dtype (float32, float64, ...)", ShapeError)
    return x.transpose(0, 1) if batch_first else x


def check_step_input(x_t: Any, argument: str = "x_t") -> torch.Tensor:
    """Validate one time step ``[B, ...]`` (B >= 1, at least one neuron, floating)."""
    if not torch.is_tensor(x_t):
        raise invalid(argument, type(x_t).__name__, "a torch.Tensor of shape [B, ...] (one time step)", ShapeError)
    if x_t.ndim < 2 or x_t.numel() == 0:
        raise invalid(
            f"{argument}.shape",
            tuple(x_t.shape),
            "one time step [B, features...] with at least 2 dimensions and one element "
            "(a single sample: x_t.unsqueeze(0))",
            ShapeError,
        )
    if not x_t.is_floating_point():
        raise invalid(f"{argument}.dtype", x_t.dtype, "a floating dtype (float32, float64, ...)", ShapeError)
    return x_t


def one_step_hint(layer: str) -> str:
    """What the error for a ``[B, F]`` input to a spiking layer adds: the per-step API."""
    return (
        f"; for one time step [B, F] in a loop of your own (snnTorch's spk, mem = lif(cur, mem)) "
        f"use spk, state = {layer}.step(x_t, state)"
    )


def state_layout_hint(x_shape: tuple[int, ...], state_shape: tuple[int, ...], *, batch_first: bool) -> str:
    """Why a state ``[B, ...]`` may not fit ``x`` (as the caller gave it), when the shapes tell; else ''."""
    if state_shape == x_shape:
        return (
            " (x has the shape of the state: it looks like ONE time step [B, ...]; use layer.step(x_t, state) "
            "for one step, or stack the steps into a sequence)"
        )
    if len(x_shape) < 3 or state_shape[1:] != x_shape[2:]:
        return ""
    if not batch_first and state_shape[0] == x_shape[0] != x_shape[1]:
        return (
            f" (x's first dimension is the state's batch size: x looks batch-first {BATCH_FIRST}; this layer reads "
            f"{TIME_MAJOR}: build it with batch_first=True or pass x.transpose(0, 1))"
        )
    if batch_first and state_shape[0] == x_shape[1] != x_shape[0]:
        return (
            f" (x's second dimension is the state's batch size: x looks time-major {TIME_MAJOR}; this layer was "
            f"built with batch_first=True and reads {BATCH_FIRST}: pass x.transpose(0, 1))"
        )
    return ""


def check_samples_layout(x: Any, labels: Any, argument: str = "x") -> None:
    """Refuse a time-major input ``x`` whose FIRST dimension is the number of ``labels`` given with it while its
    second is not: it was given batch-first ``[B, T, ...]`` and would be read as B time steps."""
    try:
        samples = len(labels) if labels is not None else None
    except TypeError:  # not a sequence: the labels' own check names it
        return
    if samples is None or not torch.is_tensor(x) or x.ndim < 3:
        return
    if x.shape[0] == samples != x.shape[1]:
        raise invalid(
            f"{argument}.shape",
            tuple(x.shape),
            f"time-major {TIME_MAJOR} (T={x.shape[1]}?, B={samples}); its first dimension is the number of labels, "
            f"so it looks batch-first {BATCH_FIRST}: pass x.transpose(0, 1)",
            ShapeError,
        )


__all__ = [
    "check_samples_layout",
    "check_sequence",
    "check_step_input",
    "check_time_major",
    "one_step_hint",
    "state_layout_hint",
]
