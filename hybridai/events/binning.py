"""Binning event arrays into frames (``to_frames``, tonic's ``ToFrame`` layout ``[T, P, H, W]``)
or into time-major tensors for spiking layers (``ToTimeSteps``).
"""

from __future__ import annotations

import numpy as np
import torch

from hybridai.core.errors import ResourceLimitError, bounded_int, invalid, positive_int
from hybridai.core.machine import physical_memory
from hybridai.events.arrays import check_events, check_sensor_size

BYTES_PER_CELL = 10  # np.bincount's int64 counts, then the int16 frames
INT16_MAX = int(np.iinfo(np.int16).max)


def check_frame_memory(
    argument: str, value: int, n_bins: int, sensor_size: tuple[int, int, int], limit: int | None, per_cell: int = 0
) -> None:
    """Refuse (before allocating) frames ``[n_bins, P, H, W]`` that would take more than ``limit`` bytes
    (default half the RAM), naming ``argument``, its ``value`` and the bytes they would take."""
    width, height, polarities = sensor_size
    limit = physical_memory() // 2 if limit is None else limit
    needed = n_bins * polarities * height * width * (BYTES_PER_CELL + per_cell)
    if needed > limit:
        raise ResourceLimitError(
            f"{argument}={value} gives {n_bins} frames of {polarities}x{height}x{width} pixels, which would take "
            f"{needed} bytes ({needed / 2**30:.4g} GiB), above max_bytes={limit} ({limit / 2**30:.4g} GiB"
            f"{', half the RAM' if limit == physical_memory() // 2 else ''}); accepted: fewer time bins "
            f"({'a larger' if argument == 'time_window' else 'a smaller'} {argument}), or a larger max_bytes="
        )


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
    max_bytes: int | None = None,
) -> np.ndarray:
    """Event counts per time bin, ``int16 [T, P, H, W]`` (tonic's ``ToFrame`` layout).

    Exactly one of ``time_window`` (microseconds per bin; ``(end_time - start_time) // time_window``
    bins, as tonic's ``ToFrame(time_window=..., start_time=..., end_time=...)``) or
    ``n_time_bins`` (equal bins spanning ``[start_time, end_time)``). ``end_time`` defaults to the
    last timestamp + 1. Events outside ``[start_time, start_time + T * window)`` are dropped.
    Frames that would take more than ``max_bytes`` (default half the RAM) are refused before anything
    is allocated, and so are counts above 32767 events per pixel and bin (int16 would wrap them).
    """
    width, height, polarities = check_sensor_size(sensor_size)
    events = check_events(events, sensor_size)
    if (time_window is None) == (n_time_bins is None):
        raise invalid("time_window/n_time_bins", (time_window, n_time_bins), "exactly one of the two")
    if max_bytes is not None:
        max_bytes = positive_int("max_bytes", max_bytes)
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
        check_frame_memory("time_window", time_window, n_bins, (width, height, polarities), max_bytes)
        bins = (events["t"] - start_time) // time_window
    else:
        n_bins = _int("n_time_bins", n_time_bins, 1)
        check_frame_memory("n_time_bins", n_bins, n_bins, (width, height, polarities), max_bytes)
        bins = _scaled_bins(events["t"] - start_time, n_bins, span)
    inside = (events["t"] >= start_time) & (bins < n_bins)
    selected = events[inside]
    polarity = selected["p"].astype(np.int64) if polarities == 2 else np.zeros(len(selected), np.int64)
    flat = ((bins[inside] * polarities + polarity) * height + selected["y"]) * width + selected["x"]
    counts = np.bincount(flat, minlength=n_bins * polarities * height * width)
    if counts.size and counts.max() > INT16_MAX:
        argument, value = ("time_window", time_window) if time_window is not None else ("n_time_bins", n_bins)
        raise invalid(
            argument,
            value,
            f"bins short enough that no pixel gets more than {INT16_MAX} events in one (one gets "
            f"{int(counts.max())}, which int16 frames would wrap to a wrong count)",
        )
    return counts.reshape(n_bins, polarities, height, width).astype(np.int16)


def _scaled_bins(offsets: np.ndarray, n_bins: int, span: int) -> np.ndarray:
    """``offsets * n_bins // span`` without int64 overflow (exact, in Python ints when it would overflow)."""
    if not offsets.size or int(offsets.max()) * n_bins <= np.iinfo(np.int64).max:
        return offsets * n_bins // span
    return np.array([int(o) * n_bins // span for o in offsets.tolist()], dtype=np.int64)


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
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise invalid("dtype", dtype, "a floating torch.dtype such as torch.float32")
        itemsize = dtype.itemsize
        check_frame_memory("num_steps", num_steps, num_steps, self.sensor_size, None, per_cell=itemsize)
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
