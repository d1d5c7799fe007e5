"""Binning event arrays into frames (``to_frames``, tonic's ``ToFrame`` layout ``[T, P, H, W]``)
or into time-major tensors for spiking layers (``ToTimeSteps``).
"""

from __future__ import annotations

import numpy as np
import torch

from hybridai.core.errors import bounded_int, invalid, positive_int
from hybridai.events.arrays import check_events, check_sensor_size


def _int(argument: str, value: object, low: int) -> int:
    """``bounded_int`` that also takes numpy integers (event data carries them), returned as a Python int."""
    return bounded_int(argument, int(value) if isinstance(value, np.integer) else value, low)


def to_frames(
    events: np.ndarray,
    sensor_size: tuple[int, int, int],
    *,
    time_window: int | None = None,
    n_time_bins: int | None = None,
    start_time: int = 0,
    end_time: int | None = None,
) -> np.ndarray:
    """Event counts per time bin, ``int16 [T, P, H, W]`` (tonic's ``ToFrame`` layout).

    Exactly one of ``time_window`` (microseconds per bin; ``(end_time - start_time) // time_window``
    bins, as tonic's ``ToFrame(time_window=..., start_time=..., end_time=...)``) or
    ``n_time_bins`` (equal bins spanning ``[start_time, end_time)``). ``end_time`` defaults to the
    last timestamp + 1. Events outside ``[start_time, start_time + T * window)`` are dropped.
    """
    width, height, polarities = check_sensor_size(sensor_size)
    events = check_events(events, sensor_size)
    if (time_window is None) == (n_time_bins is None):
        raise invalid("time_window/n_time_bins", (time_window, n_time_bins), "exactly one of the two")
    start_time = _int("start_time", start_time, 0)
    if end_time is None:
        end_time = int(events["t"][-1]) + 1 if len(events) else start_time + 1
    end_time = _int("end_time", end_time, 0)
    if end_time <= start_time:
        raise invalid("end_time", end_time, f"a time after start_time={start_time}")
    span = end_time - start_time
    if time_window is not None:
        time_window = _int("time_window", time_window, 1)
        n_bins = span // time_window
        if n_bins < 1:
            raise invalid("time_window", time_window, f"at most end_time - start_time = {span} microseconds")
        bins = (events["t"] - start_time) // time_window
    else:
        n_bins = _int("n_time_bins", n_time_bins, 1)
        bins = (events["t"] - start_time) * n_bins // span
    inside = (events["t"] >= start_time) & (bins < n_bins)
    selected = events[inside]
    polarity = selected["p"].astype(np.int64) if polarities == 2 else np.zeros(len(selected), np.int64)
    flat = ((bins[inside] * polarities + polarity) * height + selected["y"]) * width + selected["x"]
    counts = np.bincount(flat, minlength=n_bins * polarities * height * width)
    return counts.reshape(n_bins, polarities, height, width).astype(np.int16)


class ToTimeSteps:
    """Transform: events -> float tensor ``[num_steps, P, H, W]`` of counts over ``[0, duration_us)``.

    Picklable, so it works inside DataLoader workers; ``flatten=True`` gives ``[num_steps, P*H*W]``.
    """

    def __init__(
        self,
        sensor_size: tuple[int, int, int],
        num_steps: int,
        duration_us: int,
        *,
        flatten: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.sensor_size = check_sensor_size(sensor_size)
        positive_int("num_steps", num_steps)
        if positive_int("duration_us", duration_us) < num_steps:
            raise invalid("duration_us", duration_us, f"at least num_steps={num_steps} microseconds (one per step)")
        self.num_steps, self.duration_us, self.flatten, self.dtype = num_steps, duration_us, flatten, dtype

    def __call__(self, events: np.ndarray) -> torch.Tensor:
        frames = to_frames(events, self.sensor_size, n_time_bins=self.num_steps, end_time=self.duration_us)
        tensor = torch.from_numpy(frames).to(self.dtype)
        return tensor.flatten(1) if self.flatten else tensor

    def __repr__(self) -> str:
        return (
            f"ToTimeSteps(sensor_size={self.sensor_size}, num_steps={self.num_steps}, "
            f"duration_us={self.duration_us}, flatten={self.flatten})"
        )
