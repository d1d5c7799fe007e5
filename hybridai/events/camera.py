"""A seeded synthetic event camera and a labelled moving-shapes data set made with it.

The camera follows the method of v2e and ESIM: each pixel remembers a log intensity
(linear below ``linlog_cutoff`` grey levels, log above, continuous at the cutoff). When the
current log intensity moves more than the pixel's contrast threshold away from that memory,
the pixel emits one event per threshold crossing, timestamped by linear interpolation between
the two frames, and its memory moves by the crossings times the threshold. Options: per-pixel
threshold mismatch (Gaussian, separate ON and OFF thresholds), a refractory period (events
closer than it to the pixel's previous event are dropped; the memory still follows the
scene), leak events (the memory drifts down by ``leak_hz`` thresholds per second, giving
ON events in a static scene) and shot-noise events (Poisson, random polarity).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hybridai.core.errors import ShapeError, bounded_int, invalid, non_negative_int, positive_int
from hybridai.events.arrays import EVENT_DTYPE, check_sensor_size

DIRECTIONS = ("right", "left", "down", "up")
SHAPES = ("square", "disk")


def _non_negative(argument: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise invalid(argument, value, "a finite number >= 0")
    return float(value)


def linlog(frames: np.ndarray, cutoff: float = 20.0) -> np.ndarray:
    """v2e's lin-log intensity: ``ln(I)`` above ``cutoff``, ``I * ln(cutoff) / cutoff`` below."""
    frames = np.asarray(frames, dtype=np.float64)
    return np.where(frames >= cutoff, np.log(np.maximum(frames, cutoff)), frames * (math.log(cutoff) / cutoff))


class EventCamera:
    """Turns rendered grey-level frames into events; see the module docstring.

    Args:
        threshold: mean contrast threshold in log-intensity units (about 0.2 on real sensors).
        threshold_sigma: standard deviation of the per-pixel thresholds (mismatch); 0 for none.
        refractory_us: minimum time between two events of one pixel, microseconds.
        leak_hz: leak events per pixel per second (ON events that appear without motion).
        shot_noise_hz: shot-noise events per pixel per second (random polarity).
        linlog_cutoff: grey level below which intensity is taken linearly.
        seed: seeds thresholds and noise; ``simulate`` with the same inputs and seed gives the
            same events.
    """

    def __init__(
        self,
        threshold: float = 0.2,
        *,
        threshold_sigma: float = 0.03,
        refractory_us: int = 0,
        leak_hz: float = 0.0,
        shot_noise_hz: float = 0.0,
        linlog_cutoff: float = 20.0,
        seed: int = 0,
    ) -> None:
        self.threshold = _non_negative("threshold", threshold)
        if self.threshold == 0:
            raise invalid("threshold", threshold, "a positive log-intensity contrast, about 0.2")
        self.threshold_sigma = _non_negative("threshold_sigma", threshold_sigma)
        self.refractory_us = non_negative_int("refractory_us", refractory_us)
        self.leak_hz = _non_negative("leak_hz", leak_hz)
        self.shot_noise_hz = _non_negative("shot_noise_hz", shot_noise_hz)
        self.linlog_cutoff = _non_negative("linlog_cutoff", linlog_cutoff)
        if self.linlog_cutoff == 0:
            raise invalid("linlog_cutoff", linlog_cutoff, "a positive grey level, e.g. 20")
        self.seed = non_negative_int("seed", seed)  # numpy seeds: ints >= 0

    def thresholds(self, height: int, width: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Per-pixel ON and OFF thresholds ``[H, W]``, at least 1% of the mean."""
        shape = (2, height, width)
        drawn = (
            rng.normal(self.threshold, self.threshold_sigma, shape)
            if self.threshold_sigma
            else np.full(shape, self.threshold)
        )
        drawn = np.maximum(drawn, 0.01 * self.threshold)
        return drawn[0], drawn[1]

    def simulate(self, frames: Any, timestamps_us: Any) -> np.ndarray:
        """Events from frames ``[N, H, W]`` (grey levels >= 0) taken at ``timestamps_us`` ``[N]``.

        The first frame sets each pixel's memory; returns an event array sorted by ``t``
        (``x`` is the column, ``y`` the row), all timestamps in ``[timestamps_us[0], timestamps_us[-1]]``.
        """
        frames = np.asarray(frames, dtype=np.float64)
        if frames.ndim != 3 or frames.shape[0] < 1 or min(frames.shape[1:]) < 1:
            raise invalid("frames.shape", frames.shape, "[N, H, W] with N >= 1 frames", ShapeError)
        if not np.all(np.isfinite(frames)) or frames.min() < 0:
            raise invalid("frames", "values that are negative, NaN or inf", "finite grey levels >= 0")
        times = np.asarray(timestamps_us)
        if times.shape != (frames.shape[0],) or times.dtype.kind not in "iu":
            raise invalid(
                "timestamps_us",
                f"{times.dtype} array of shape {times.shape}",
                f"{frames.shape[0]} integers",
                ShapeError,
            )
        times = times.astype(np.int64)
        if times.size and times.min() < 0:
            raise invalid("timestamps_us", int(times.min()), "non-negative microseconds")
        if np.any(np.diff(times) <= 0):
            raise invalid("timestamps_us", "timestamps that do not increase", "strictly increasing microseconds")
        rng = np.random.default_rng(self.seed)
        height, width = frames.shape[1:]
        on_threshold, off_threshold = self.thresholds(height, width, rng)
        log_frames = linlog(frames, self.linlog_cutoff)
        memory = log_frames[0].copy()
        last_event = np.full((height, width), np.iinfo(np.int64).min // 2, dtype=np.int64)
        chunks: list[tuple[np.ndarray, ...]] = []
        for k in range(frames.shape[0] - 1):
            start, stop = int(times[k]), int(times[k + 1])
            before, after = log_frames[k], log_frames[k + 1]
            if self.leak_hz:
                memory -= on_threshold * self.leak_hz * (stop - start) * 1e-6
            chunks.extend(self._crossings(memory, before, after, on_threshold, off_threshold, start, stop, last_event))
            if self.shot_noise_hz:
                chunks.append(self._shot_noise(height, width, start, stop, rng))
        return _assemble(chunks)

    def _crossings(
        self,
        memory: np.ndarray,
        before: np.ndarray,
        after: np.ndarray,
        on_threshold: np.ndarray,
        off_threshold: np.ndarray,
        start: int,
        stop: int,
        last_event: np.ndarray,
    ) -> list[tuple[np.ndarray, ...]]:
        """Events of one frame interval; updates ``memory`` and ``last_event`` in place."""
        difference = after - memory
        n_on = np.where(difference > 0, np.floor(difference / on_threshold), 0).astype(np.int64)
        n_off = np.where(difference < 0, np.floor(-difference / off_threshold), 0).astype(np.int64)
        change = after - before
        chunks: list[tuple[np.ndarray, ...]] = []
        for count, step, polarity in ((n_on, on_threshold, True), (n_off, -off_threshold, False)):
            rows, cols = np.nonzero(count)
            if len(rows) == 0:
                continue
            pixel_count, pixel_step = count[rows, cols], step[rows, cols]
            base, pixel_before, pixel_change = memory[rows, cols], before[rows, cols], change[rows, cols]
            for j in range(1, int(pixel_count.max()) + 1):
                active = pixel_count >= j
                level = base[active] + j * pixel_step[active]
                slope = pixel_change[active]
                safe = np.where(slope == 0, 1.0, slope)
                fraction = np.where(slope == 0, 1.0, np.clip((level - pixel_before[active]) / safe, 0.0, 1.0))
                t = start + np.round(fraction * (stop - start)).astype(np.int64)
                r, c = rows[active], cols[active]
                if self.refractory_us:
                    accepted = t - last_event[r, c] >= self.refractory_us
                    r, c, t = r[accepted], c[accepted], t[accepted]
                last_event[r, c] = t
                chunks.append((c, r, t, np.full(len(t), polarity)))
            memory[rows, cols] += pixel_count * pixel_step
        return chunks

    def _shot_noise(self, height: int, width: int, start: int, stop: int, rng: np.random.Generator) -> tuple:
        counts = rng.poisson(self.shot_noise_hz * (stop - start) * 1e-6, (height, width))
        rows, cols = np.nonzero(counts)
        rows, cols = np.repeat(rows, counts[rows, cols]), np.repeat(cols, counts[rows, cols])
        t = rng.integers(start, stop, len(rows), endpoint=True)
        return cols, rows, t, rng.random(len(rows)) < 0.5

    def __repr__(self) -> str:
        return (
            f"EventCamera(threshold={self.threshold:g}, threshold_sigma={self.threshold_sigma:g}, "
            f"refractory_us={self.refractory_us}, leak_hz={self.leak_hz:g}, "
            f"shot_noise_hz={self.shot_noise_hz:g}, seed={self.seed})"
        )


def _assemble(chunks: list[tuple[np.ndarray, ...]]) -> np.ndarray:
    if not chunks:
        return np.empty(0, dtype=EVENT_DTYPE)
    x, y, t, p = (np.concatenate(parts) for parts in zip(*chunks, strict=True))
    order = np.argsort(t, kind="stable")
    events = np.empty(len(t), dtype=EVENT_DTYPE)
    events["x"], events["y"], events["t"], events["p"] = x[order], y[order], t[order], p[order]
    return events


def render_shape(
    shape: str, center: tuple[float, float], radius: float, size: tuple[int, int], background: float, foreground: float
) -> np.ndarray:
    """One anti-aliased frame ``[H, W]`` (grey levels) of a square or disk at a sub-pixel ``center`` (x, y)."""
    width, height = size
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    dx, dy = xs - center[0], ys - center[1]
    distance = np.maximum(np.abs(dx), np.abs(dy)) if shape == "square" else np.hypot(dx, dy)
    coverage = np.clip(radius + 0.5 - distance, 0.0, 1.0)
    return background + (foreground - background) * coverage


def moving_shapes(
    n_samples: int,
    *,
    sensor_size: tuple[int, int, int] = (32, 32, 2),
    duration_us: int = 100_000,
    n_frames: int = 40,
    directions: tuple[str, ...] = DIRECTIONS,
    shapes: tuple[str, ...] = SHAPES,
    camera: EventCamera | None = None,
    seed: int = 0,
) -> tuple[list[np.ndarray], np.ndarray]:
    """A labelled event data set: a bright square or disk crossing the sensor in one of ``directions``.

    Each sample draws its shape, size (radius 3-6 px), contrast, start position and speed
    (it travels 40-60% of the sensor over ``duration_us``) from ``seed``; the label is the
    index of its direction in ``directions``. Events come from ``camera`` (default
    ``EventCamera()``, reseeded per sample). Returns ``(list of event arrays, int64 labels)``.
    """
    positive_int("n_samples", n_samples)
    width, height, _ = check_sensor_size(sensor_size)
    if min(width, height) < 16:
        raise invalid("sensor_size", sensor_size, "width and height of at least 16 pixels")
    bounded_int("n_frames", n_frames, 2)
    if positive_int("duration_us", duration_us) < n_frames:
        raise invalid("duration_us", duration_us, f"at least n_frames={n_frames} microseconds (one per frame)")
    bad = [d for d in directions if d not in DIRECTIONS]
    if not directions or bad:
        raise invalid("directions", directions, f"a non-empty tuple drawn from {DIRECTIONS}")
    if not shapes or any(s not in SHAPES for s in shapes):
        raise invalid("shapes", shapes, f"a non-empty tuple drawn from {SHAPES}")
    if camera is not None and not isinstance(camera, EventCamera):
        raise invalid("camera", type(camera).__name__, "None or a hybridai.events.EventCamera")
    camera = camera or EventCamera()
    rng = np.random.default_rng(non_negative_int("seed", seed))
    labels = rng.integers(0, len(directions), n_samples)
    times = np.linspace(0, duration_us, n_frames).round().astype(np.int64)
    vectors = {"right": (1, 0), "left": (-1, 0), "down": (0, 1), "up": (0, -1)}
    streams = []
    for label in labels:
        vx, vy = vectors[directions[label]]
        shape = shapes[rng.integers(len(shapes))]
        radius = rng.uniform(3, 6)
        background = rng.uniform(30, 80)
        foreground = rng.uniform(150, 250)
        travel = rng.uniform(0.4, 0.6) * (width if vx else height)
        centre = np.array([rng.uniform(0.35, 0.65) * width, rng.uniform(0.35, 0.65) * height])
        centre -= np.array([vx, vy]) * travel / 2
        path = centre + np.outer(np.linspace(0, 1, n_frames), np.array([vx, vy]) * travel)
        frames = np.stack(
            [render_shape(shape, tuple(p), radius, (width, height), background, foreground) for p in path]
        )
        sample_camera = _reseeded(camera, int(rng.integers(2**31)))
        streams.append(sample_camera.simulate(frames, times))
    return streams, labels.astype(np.int64)


def _reseeded(camera: EventCamera, seed: int) -> EventCamera:
    copy = object.__new__(EventCamera)
    copy.__dict__.update(camera.__dict__, seed=seed)
    return copy
