"""Hostile inputs to the event tools and the spike encoders: labels, batches, frame sizes, paths and seeds.

Every bad input must give a ``hybridai.HybridAIError`` whose message names the argument, shows the value and
says what is accepted; nothing may be silently changed on the way (a label 1.7 stored as 1, a count that
wraps in int16, a bin index that overflows int64) and no request may allocate memory beyond a bound.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridai import RateEncoder, events
from hybridai.core.errors import ConfigError, ResourceLimitError, ShapeError

try:
    import h5py
except ImportError:  # pragma: no cover - the 'events' extra
    h5py = None

needs_h5py = pytest.mark.skipif(h5py is None, reason="needs h5py (pip install 'hybridai[events]')")
SENSOR = (16, 16, 2)


@pytest.fixture(scope="module")
def streams():
    return events.moving_shapes(3, sensor_size=SENSOR, duration_us=10_000, n_frames=6, seed=1)[0]


# -- labels -----------------------------------------------------------------------------------------

BAD_LABELS = [
    ("text", "a"),
    ("2**70", 2**70),
    ("-(2**63) - 1", -(2**63) - 1),
    ("float 1.7", 1.7),
    ("float 1.0", 1.0),
    ("numpy float", np.float64(2.0)),
    ("bool", True),
    ("None", None),
    ("list", [1]),
    ("float tensor", torch.tensor(1.5)),
    ("vector tensor", torch.tensor([1, 2])),
    ("nan", float("nan")),
]
INT64_RANGE = "an int in [-9223372036854775808, 9223372036854775807]"


@needs_h5py
@pytest.mark.parametrize("name, label", BAD_LABELS, ids=[row[0] for row in BAD_LABELS])
def test_save_events_refuses_labels_it_cannot_store_exactly(tmp_path, streams, name, label):
    with pytest.raises(ConfigError) as info:
        events.save_events(tmp_path / "set.h5", streams, [0, label, 2], sensor_size=SENSOR)
    assert "labels[1]=" in str(info.value) and INT64_RANGE in str(info.value), str(info.value)
    assert list(tmp_path.iterdir()) == []


@needs_h5py
@pytest.mark.parametrize("name, label", BAD_LABELS, ids=[row[0] for row in BAD_LABELS])
def test_event_writer_refuses_the_same_labels(tmp_path, streams, name, label):
    with pytest.raises(ConfigError) as info:
        with events.EventWriter(tmp_path / "set.h5", SENSOR) as writer:
            writer.append(streams[0], label)
    assert "label=" in str(info.value) and INT64_RANGE in str(info.value), str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, label", BAD_LABELS, ids=[row[0] for row in BAD_LABELS])
def test_pad_collate_refuses_the_same_labels(name, label):
    with pytest.raises(ConfigError) as info:
        events.pad_collate([(torch.ones(2, 1), 0), (torch.ones(3, 1), label)])
    assert "batch[1] label=" in str(info.value) and INT64_RANGE in str(info.value), str(info.value)


GOOD_LABELS = [
    -(2**63),
    2**63 - 1,
    -1,
    0,
    np.int64(7),
    np.uint8(200),
    torch.tensor(5),
    torch.tensor(3, dtype=torch.int8),
]


@needs_h5py
def test_integer_labels_of_every_kind_round_trip_exactly(tmp_path, streams):
    many = [streams[i % 3] for i in range(len(GOOD_LABELS))]
    path = events.save_events(tmp_path / "set.h5", many, GOOD_LABELS, sensor_size=SENSOR)
    dataset = events.EventDataset(path)
    assert [dataset[i][1] for i in range(len(dataset))] == [int(v) for v in GOOD_LABELS]
    _, labels, _ = events.pad_collate([(torch.ones(1), v) for v in GOOD_LABELS])
    assert labels.dtype == torch.int64 and labels.tolist() == [int(v) for v in GOOD_LABELS]


@needs_h5py
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=st.integers(-(2**80), 2**80) | st.floats(allow_nan=True) | st.text(max_size=3) | st.booleans() | st.none())
def test_any_label_is_stored_exactly_or_refused(tmp_path, streams, label):
    path = tmp_path / "one.h5"
    path.unlink(missing_ok=True)
    in_range = isinstance(label, int) and not isinstance(label, bool) and -(2**63) <= label < 2**63
    if not in_range:
        with pytest.raises(ConfigError, match=r"labels\[0\]="):
            events.save_events(path, streams[:1], [label], sensor_size=SENSOR)
        return
    events.save_events(path, streams[:1], [label], sensor_size=SENSOR)
    assert events.EventDataset(path)[0][1] == label


# -- paths and arguments of the writers --------------------------------------------------------------


@needs_h5py
@pytest.mark.parametrize(
    "name, call, error, words",
    [
        ("path None", lambda d, s: events.save_events(None, s, sensor_size=SENSOR), ConfigError, ["path=None"]),
        ("path int", lambda d, s: events.save_events(3, s, sensor_size=SENSOR), ConfigError, ["path=3"]),
        ("path folder", lambda d, s: events.save_events(d, s, sensor_size=SENSOR), ConfigError, ["this is a folder"]),
        (
            "missing folder",
            lambda d, s: events.save_events(d / "no" / "x.h5", s, sensor_size=SENSOR),
            ConfigError,
            ["x.h5", "inside an existing folder"],
        ),
        (
            "one stream, not a list",
            lambda d, s: events.save_events(d / "x.h5", s[0], sensor_size=SENSOR),
            ShapeError,
            ["streams=", "a list of event arrays"],
        ),
        (
            "writer folder",
            lambda d, s: events.EventWriter(d, SENSOR),
            ConfigError,
            ["path=", "this is a folder"],
        ),
        ("writer None", lambda d, s: events.EventWriter(None, SENSOR), ConfigError, ["path=None"]),
        (
            "sensor_size",
            lambda d, s: events.save_events(d / "x.h5", s, sensor_size=(16, 16)),
            ConfigError,
            ["sensor_size=(16, 16)", "(width, height, polarities)"],
        ),
    ],
)
def test_bad_write_arguments(tmp_path, streams, name, call, error, words):
    with pytest.raises(error) as info:
        call(tmp_path, streams)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert list(tmp_path.iterdir()) == []


# -- frames: memory bound, int16 counts, int64 bins ---------------------------------------------------


@pytest.mark.parametrize(
    "name, call, words",
    [
        (
            "n_time_bins=10**9",
            lambda ev: events.to_frames(ev, SENSOR, n_time_bins=10**9),
            ["n_time_bins=1000000000", "5120000000000 bytes", "max_bytes=", "half the RAM", "a smaller n_time_bins"],
        ),
        (
            "time_window=1 over 10**12 us",
            lambda ev: events.to_frames(ev, SENSOR, time_window=1, end_time=10**12),
            ["time_window=1", "1000000000000 frames", "a larger time_window"],
        ),
        (
            "an explicit max_bytes",
            lambda ev: events.to_frames(ev, SENSOR, n_time_bins=100, max_bytes=100_000),
            ["n_time_bins=100", "512000 bytes", "above max_bytes=100000"],
        ),
        (
            "ToTimeSteps num_steps=10**9",
            lambda ev: events.ToTimeSteps(SENSOR, num_steps=10**9, duration_us=10**9),
            ["num_steps=1000000000", "7168000000000 bytes"],
        ),
    ],
)
def test_frames_beyond_the_memory_bound_are_refused_before_allocating(streams, name, call, words):
    with pytest.raises(ResourceLimitError) as info:
        call(streams[0])
    assert all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda ev: events.to_frames(ev, SENSOR, n_time_bins=2, max_bytes=0), ConfigError, ["max_bytes=0"]),
        (lambda ev: events.to_frames(ev, SENSOR, n_time_bins=2, max_bytes="1GB"), ConfigError, ["max_bytes='1GB'"]),
        (lambda ev: events.to_frames(ev, SENSOR, n_time_bins=0), ConfigError, ["n_time_bins=0"]),
        (lambda ev: events.to_frames(ev, SENSOR, n_time_bins=2.5), ConfigError, ["n_time_bins=2.5"]),
        (lambda ev: events.to_frames(ev, SENSOR, time_window=-5), ConfigError, ["time_window=-5"]),
        (lambda ev: events.ToTimeSteps(SENSOR, 4, 100, dtype=torch.int64), ConfigError, ["dtype=torch.int64"]),
    ],
)
def test_bad_frame_arguments(streams, call, error, words):
    with pytest.raises(error) as info:
        call(streams[0])
    assert all(w in str(info.value) for w in words), str(info.value)


def test_counts_that_int16_would_wrap_are_refused():
    n = 40_000  # more events on one pixel in one bin than int16 holds: astype(int16) gave -25536
    pile = events.make_events(np.zeros(n, int), np.zeros(n, int), np.arange(n), np.ones(n, int))
    with pytest.raises(ConfigError) as info:
        events.to_frames(pile, (2, 2, 2), n_time_bins=1)
    assert all(w in str(info.value) for w in ("n_time_bins=1", "32767", "40000")), str(info.value)
    frames = events.to_frames(pile, (2, 2, 2), n_time_bins=2)  # two bins of 20000: fine
    assert frames[:, 1, 0, 0].tolist() == [20_000, 20_000]


def test_late_timestamps_with_many_bins_do_not_overflow():
    """(t - start) * n_bins passes 2**63 here: the bins must still be exact (they went negative before)."""
    t = np.array([0, 5 * 10**11, 10**12 - 1, 10**12])
    ev = events.make_events([0, 1, 0, 1], [0, 0, 1, 1], t, [1, 1, 1, 1])
    n_bins = 10**7
    frames = events.to_frames(ev, (2, 2, 1), n_time_bins=n_bins, max_bytes=10**9)
    span = int(t[-1]) + 1
    expected = [int(v) * n_bins // span for v in t]
    got = [int(b) for b in np.argwhere(frames)[:, 0]]
    assert sorted(got) == sorted(expected) and frames.sum() == 4


@settings(max_examples=80, deadline=None)
@given(
    n_time_bins=st.integers(1, 10**12) | st.none(),
    time_window=st.integers(1, 10**6),
    max_bytes=st.integers(1, 10**7),
)
def test_frames_come_out_whole_or_are_refused(n_time_bins, time_window, max_bytes):
    ev = events.make_events([0, 3, 1], [1, 2, 3], [10, 500, 999], [1, 0, 1])
    kwargs = {"n_time_bins": n_time_bins} if n_time_bins is not None else {"time_window": time_window}
    n_bins = n_time_bins if n_time_bins is not None else 1000 // time_window
    if n_bins < 1:
        with pytest.raises(ConfigError, match="time_window"):
            events.to_frames(ev, (4, 4, 2), end_time=1000, max_bytes=max_bytes, **kwargs)
        return
    needed = n_bins * 2 * 4 * 4 * 10
    if needed > max_bytes:
        with pytest.raises(ResourceLimitError, match=f"{needed} bytes"):
            events.to_frames(ev, (4, 4, 2), end_time=1000, max_bytes=max_bytes, **kwargs)
        return
    frames = events.to_frames(ev, (4, 4, 2), end_time=1000, max_bytes=max_bytes, **kwargs)
    assert frames.shape == (n_bins, 2, 4, 4)
    kept = sum(1 for t in (10, 500, 999) if (t * n_bins // 1000 if n_time_bins else t // time_window) < n_bins)
    assert int(frames.sum()) == kept


# -- seeds ----------------------------------------------------------------------------------------

BAD_SEEDS = [2**70, 2**64, -1, 1.5, "1", True, None, np.float64(3.0)]


@pytest.mark.parametrize("seed", BAD_SEEDS, ids=[repr(s) for s in BAD_SEEDS])
def test_rate_encoder_refuses_seeds_torch_cannot_take(seed):
    with pytest.raises(ConfigError) as info:
        RateEncoder(4, seed=seed)
    assert f"seed={seed!r}" in str(info.value) and "[0, 18446744073709551615]" in str(info.value), str(info.value)
    if seed is not None:  # reseed(None) means: from the constructor's seed again
        encoder = RateEncoder(4, seed=0)
        with pytest.raises(ConfigError, match="seed="):
            encoder.reseed(seed)
        assert encoder.seed == 0


@pytest.mark.parametrize("seed", [0, 2**63 - 1, 2**63, 2**64 - 1, np.int64(9), np.uint64(2**64 - 1)])
def test_rate_encoder_takes_every_seed_torch_takes(seed):
    x = torch.full((2, 3), 0.5)
    first = RateEncoder(8, seed=seed)(x)
    assert torch.equal(first, RateEncoder(8, seed=int(seed))(x))


@pytest.mark.parametrize("seed", [-1, "a", 1.5, None])
def test_event_camera_and_moving_shapes_refuse_bad_seeds(seed):
    with pytest.raises(ConfigError, match="seed="):
        events.EventCamera(seed=seed)
    with pytest.raises(ConfigError, match="seed="):
        events.moving_shapes(1, seed=seed)


def test_moving_shapes_refuses_a_camera_that_is_not_one():
    with pytest.raises(ConfigError, match="camera='str'.*EventCamera"):
        events.moving_shapes(1, camera="dvs")
