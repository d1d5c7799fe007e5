"""Event arrays: tonic's structured layout, building and validation.

An event is ``(x, y, t, p)``: pixel column and row, timestamp in microseconds and polarity
(1 brighter, 0 darker). Arrays use tonic's exact dtype (``x, y: int16; t: int64; p: bool``),
so tonic's transforms (``ToFrame``, ``Denoise``, ...) accept them unchanged. A sensor size
is ``(width, height, polarities)`` as in tonic. Events are sorted by ``t`` (ties keep their
order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hybridai.core.errors import ConfigError, ShapeError, invalid

EVENT_DTYPE = np.dtype([("x", np.int16), ("y", np.int16), ("t", np.int64), ("p", bool)])
FIELDS = ("x", "y", "t", "p")


def check_sensor_size(sensor_size: Any, argument: str = "sensor_size") -> tuple[int, int, int]:
    """``(width, height, polarities)`` with positive ints and 1 or 2 polarities."""
    ok = (
        isinstance(sensor_size, tuple | list)
        and len(sensor_size) == 3
        and all(isinstance(v, int | np.integer) and not isinstance(v, bool) and v > 0 for v in sensor_size)
        and sensor_size[2] in (1, 2)
        and max(sensor_size[:2]) <= np.iinfo(np.int16).max
    )
    if not ok:
        raise invalid(argument, sensor_size, "(width, height, polarities) with positive ints, polarities 1 or 2")
    return int(sensor_size[0]), int(sensor_size[1]), int(sensor_size[2])


def _integers(argument: str, values: Any) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise invalid(f"{argument}.shape", array.shape, "a 1-D sequence (one value per event)", ShapeError)
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)):
            raise invalid(argument, "values containing NaN or inf", "finite integers")
        if np.any(array != np.round(array)):
            raise invalid(argument, "non-integer values", "integers")
    elif array.dtype.kind not in "iub" and array.size:
        raise invalid(f"{argument}.dtype", array.dtype, "integers")
    return array


def make_events(x: Any, y: Any, t: Any, p: Any, *, sensor_size: tuple[int, int, int] | None = None) -> np.ndarray:
    """A validated event array from columns; ``t`` in microseconds, ``p`` in {0, 1} (or {-1, 1})."""
    columns = {name: _integers(name, values) for name, values in zip(FIELDS, (x, y, t, p), strict=True)}
    lengths = {name: len(c) for name, c in columns.items()}
    if len(set(lengths.values())) != 1:
        raise invalid("x, y, t, p lengths", lengths, "four columns of equal length", ShapeError)
    polarity = columns["p"]
    if polarity.size and not np.all(np.isin(polarity, (-1, 0, 1))):
        raise invalid("p", np.unique(polarity)[:5].tolist(), "polarities in {0, 1} (or {-1, 1}; -1 becomes 0)")
    for name in ("x", "y", "t"):
        if columns[name].size and (columns[name] < 0).any():
            raise invalid(name, int(columns[name].min()), f"non-negative {name} values")
    for name in ("x", "y"):
        if columns[name].size and columns[name].max() > np.iinfo(np.int16).max:
            raise invalid(name, int(columns[name].max()), "coordinates below 32768 (tonic stores them as int16)")
    events = np.empty(len(polarity), dtype=EVENT_DTYPE)
    for name in ("x", "y", "t"):
        events[name] = columns[name]
    events["p"] = polarity > 0
    return check_events(events, sensor_size)


def check_events(events: Any, sensor_size: tuple[int, int, int] | None = None, argument: str = "events") -> np.ndarray:
    """Validate an event array and return it with ``EVENT_DTYPE`` (converted only when needed).

    Raises a HybridAIError for a missing field, negative or unsorted timestamps, negative
    coordinates, coordinates outside ``sensor_size`` or polarities outside {0, 1}.
    """
    if not isinstance(events, np.ndarray) or events.dtype.names is None:
        raise invalid(argument, type(events).__name__, "a numpy structured array with fields x, y, t, p", ShapeError)
    missing = [f for f in FIELDS if f not in events.dtype.names]
    if missing:
        raise invalid(f"{argument}.dtype.names", events.dtype.names, "fields x, y, t, p (tonic's layout)", ShapeError)
    if events.ndim != 1:
        raise invalid(f"{argument}.shape", events.shape, "a 1-D array of events", ShapeError)
    if events.dtype != EVENT_DTYPE:  # same fields, other dtypes: convert through the checked constructor
        return make_events(events["x"], events["y"], events["t"], events["p"], sensor_size=sensor_size)
    if len(events) == 0:
        return events
    t = events["t"]
    if t[0] < 0 or t.min() < 0:
        raise invalid(f"{argument}['t']", int(t.min()), "non-negative timestamps in microseconds")
    steps = np.diff(t)
    if (steps < 0).any():
        i = int(np.argmax(steps < 0))
        raise ConfigError(
            f"{argument}['t'] is not sorted: event {i + 1} has t={int(t[i + 1])} after t={int(t[i])}; "
            "accepted: timestamps in non-decreasing order (sort with events[np.argsort(events['t'], kind='stable')])"
        )
    for name, axis in (("x", 0), ("y", 1)):
        column = events[name]
        if column.min() < 0:
            raise invalid(f"{argument}['{name}']", int(column.min()), f"non-negative {name} coordinates")
        if sensor_size is not None:
            limit = check_sensor_size(sensor_size)[axis]
            if column.max() >= limit:
                raise invalid(
                    f"{argument}['{name}']", int(column.max()), f"values below {limit} for sensor_size={sensor_size}"
                )
    if (
        sensor_size is not None
        and check_sensor_size(sensor_size)[2] == 1
        and events["p"].any()
        and (~events["p"]).any()
    ):
        raise invalid(f"{argument}['p']", "both polarities", f"one polarity for sensor_size={sensor_size}")
    return events
