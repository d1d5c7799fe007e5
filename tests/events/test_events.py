"""Event arrays, the synthetic event camera, the moving-shapes data set, binning, tonic compatibility."""

import math

import numpy as np
import pytest
import torch

from hybridai import events
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError

tonic = pytest.importorskip("tonic")


def ramp(start, stop, n_frames=11, shape=(4, 5)):
    """Frames whose every pixel moves from ``start`` to ``stop`` grey levels, linear in log intensity."""
    levels = np.exp(np.linspace(math.log(start), math.log(stop), n_frames))
    return np.broadcast_to(levels[:, None, None], (n_frames, *shape)).copy(), np.arange(n_frames) * 1000


def test_event_dtype_is_tonics():
    assert events.EVENT_DTYPE == tonic.io.events_struct
    made = tonic.io.make_structured_array([1, 2], [3, 4], [10, 20], [True, False])
    assert events.check_events(made, (8, 8, 2)) is made


def test_make_events_converts_polarity_and_validates():
    ev = events.make_events([0, 3], [1, 2], [5, 5], [-1, 1], sensor_size=(4, 3, 2))
    assert ev.dtype == events.EVENT_DTYPE and ev["p"].tolist() == [False, True]
    assert events.check_events(ev.astype([("x", "i4"), ("y", "i4"), ("t", "f8"), ("p", "i1")]))["t"].tolist() == [5, 5]


@pytest.mark.parametrize(
    "columns, error, words",
    [
        (([0, 1], [0, 0], [5, -1], [1, 1]), ConfigError, ["t=-1", "non-negative"]),
        (([0, 1, 2], [0, 0, 0], [5, 9, 7], [1, 1, 0]), ConfigError, ["not sorted", "event 2 has t=7 after t=9"]),
        (([0, 1], [0, 0], [5.0, float("nan")], [1, 1]), ConfigError, ["t=", "NaN"]),
        (([0, 1], [0, 0], [5, 6], [1, 2]), ConfigError, ["p=[1, 2]", "{0, 1}"]),
        (([0, 9], [0, 0], [5, 6], [1, 1]), ConfigError, ["events['x']=9", "below 8"]),
        (([0, -2], [0, 0], [5, 6], [1, 1]), ConfigError, ["x=-2", "non-negative"]),
        (([0, 1], [0], [5, 6], [1, 1]), ShapeError, ["lengths", "equal length"]),
    ],
)
def test_bad_events_give_clear_errors(columns, error, words):
    with pytest.raises(error) as info:
        events.make_events(*columns, sensor_size=(8, 8, 2))
    assert all(w in str(info.value) for w in words), str(info.value)


def test_check_events_rejects_other_layouts():
    with pytest.raises(ShapeError, match="structured array with fields x, y, t, p"):
        events.check_events(np.zeros((3, 4)))
    with pytest.raises(ShapeError, match="fields x, y, t, p"):
        events.check_events(np.zeros(3, dtype=[("x", "i2"), ("t", "i8")]))
    with pytest.raises(ConfigError, match="sensor_size=.*polarities 1 or 2"):
        events.check_sensor_size((8, 8, 3))


def test_static_scene_without_noise_gives_no_events():
    frames = np.random.default_rng(0).uniform(5, 250, (1, 16, 16)).repeat(30, axis=0)
    camera = events.EventCamera(threshold_sigma=0.05, refractory_us=100, seed=2)
    assert len(camera.simulate(frames, np.arange(30) * 1000)) == 0


@pytest.mark.parametrize("start, stop, polarity", [(40.0, 160.0, True), (200.0, 25.0, False)])
def test_polarity_follows_brightness_and_counts_are_crossings(start, stop, polarity):
    frames, times = ramp(start, stop)
    out = events.EventCamera(threshold=0.2, threshold_sigma=0.0).simulate(frames, times)
    assert len(out) > 0 and np.all(out["p"] == polarity)
    crossings = math.floor(abs(math.log(stop / start)) / 0.2 + 1e-9)
    assert len(out) == crossings * frames[0].size  # one event per threshold crossing per pixel
    # timestamps interpolate between frames: crossing j of a log-linear ramp happens at j*C/|dlogI| of the way
    pixel = out[(out["x"] == 2) & (out["y"] == 1)]
    total = times[-1] - times[0]
    expected = [round(j * 0.2 / abs(math.log(stop / start)) * total) for j in range(1, crossings + 1)]
    assert np.abs(pixel["t"] - np.array(expected)).max() <= 1
    assert np.all(np.diff(out["t"]) >= 0)


def test_linlog_is_linear_below_cutoff_and_continuous():
    values = events.linlog(np.array([0.0, 10.0, 20.0, 20.000001, 100.0]))
    assert values[0] == 0 and values[1] == pytest.approx(values[2] / 2)
    assert values[3] == pytest.approx(values[2]) and values[4] == pytest.approx(math.log(100))


def test_events_are_reproducible_per_seed():
    frames, times = ramp(40.0, 160.0)
    make = lambda seed: events.EventCamera(threshold_sigma=0.05, shot_noise_hz=200.0, seed=seed)  # noqa: E731
    first = make(5).simulate(frames, times)
    assert np.array_equal(first, make(5).simulate(frames, times))
    assert np.array_equal(first, make(5).simulate(frames, times))  # simulate does not consume the seed
    assert not np.array_equal(first, make(6).simulate(frames, times))


def test_threshold_mismatch_varies_pixel_counts():
    frames, times = ramp(30.0, 240.0, shape=(10, 10))
    out = events.EventCamera(threshold_sigma=0.04, seed=1).simulate(frames, times)
    counts = np.bincount(out["y"].astype(int) * 10 + out["x"], minlength=100)
    assert counts.min() < counts.max()
    on, off = events.EventCamera(threshold_sigma=0.04, seed=1).thresholds(10, 10, np.random.default_rng(1))
    assert on.std() == pytest.approx(0.04, rel=0.3) and not np.array_equal(on, off)


def test_refractory_period_spaces_each_pixels_events():
    frames, times = ramp(20.0, 250.0, n_frames=3)
    free = events.EventCamera(threshold_sigma=0.0).simulate(frames, times)
    limited = events.EventCamera(threshold_sigma=0.0, refractory_us=300).simulate(frames, times)
    assert 0 < len(limited) < len(free)
    for x, y in [(0, 0), (3, 2)]:
        gaps = np.diff(limited[(limited["x"] == x) & (limited["y"] == y)]["t"])
        assert gaps.min() >= 300


def test_shot_noise_and_leak_rates():
    frames = np.full((21, 20, 20), 100.0)
    times = np.arange(21) * 50_000  # one second
    noise = events.EventCamera(shot_noise_hz=5.0, seed=3).simulate(frames, times)
    expected = 5.0 * 400  # rate * seconds * pixels
    assert abs(len(noise) - expected) < 5 * math.sqrt(expected)
    assert 0.4 < noise["p"].mean() < 0.6
    longer = np.full((23, 20, 20), 100.0), np.arange(23) * 50_000  # 1.1 s: the memory drifts down 2.2 thresholds
    leak = events.EventCamera(leak_hz=2.0, threshold_sigma=0.0, seed=3).simulate(*longer)
    assert np.all(leak["p"]) and len(leak) == 2 * 400


@pytest.mark.parametrize(
    "frames, times, words",
    [
        (np.ones((4, 4)), np.arange(4), ["frames.shape=(4, 4)", "[N, H, W]"]),
        (-np.ones((2, 4, 4)), np.arange(2), ["frames=", "grey levels >= 0"]),
        (np.ones((3, 4, 4)), np.array([0, 5, 5]), ["timestamps_us=", "strictly increasing"]),
        (np.ones((2, 4, 4)), np.array([-5, 5]), ["timestamps_us=-5", "non-negative"]),
        (np.ones((2, 4, 4)), np.array([0.0, 1.0]), ["timestamps_us=", "integers"]),
    ],
)
def test_camera_rejects_bad_input(frames, times, words):
    with pytest.raises(HybridAIError) as info:
        events.EventCamera().simulate(frames, times)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_moving_shapes_labels_follow_motion_direction():
    streams, labels = events.moving_shapes(12, sensor_size=(24, 24, 2), duration_us=50_000, n_frames=20, seed=4)
    again, labels_again = events.moving_shapes(12, sensor_size=(24, 24, 2), duration_us=50_000, n_frames=20, seed=4)
    assert np.array_equal(labels, labels_again) and all(
        np.array_equal(a, b) for a, b in zip(streams, again, strict=True)
    )
    assert set(labels.tolist()) <= {0, 1, 2, 3} and len(set(labels.tolist())) > 1
    axis_sign = {"right": ("x", 1), "left": ("x", -1), "down": ("y", 1), "up": ("y", -1)}
    for stream, label in zip(streams, labels, strict=True):
        events.check_events(stream, (24, 24, 2))
        assert stream["t"].min() >= 0 and stream["t"].max() <= 50_000 and len(stream) > 50
        field, sign = axis_sign[events.DIRECTIONS[label]]
        on = stream[stream["p"]]
        early, late = on[on["t"] < 20_000], on[on["t"] > 30_000]
        assert sign * (late[field].mean() - early[field].mean()) > 2  # the bright leading edge moves that way


def test_tonic_to_frame_and_transforms_work_on_our_arrays():
    streams, _ = events.moving_shapes(2, sensor_size=(20, 16, 2), duration_us=40_000, n_frames=12, seed=0)
    stream = streams[0]
    theirs = tonic.transforms.ToFrame(sensor_size=(20, 16, 2), time_window=5000, start_time=0, end_time=40_000)(
        stream.copy()
    )
    ours = events.to_frames(stream, (20, 16, 2), time_window=5000, start_time=0, end_time=40_000)
    assert ours.shape == (8, 2, 16, 20) and np.array_equal(ours, theirs)
    assert ours.sum() == len(stream)
    denoised = tonic.transforms.Denoise(filter_time=5000)(stream)
    dropped = tonic.transforms.DropEvent(p=0.5)(stream)
    for out in (denoised, dropped):
        assert events.check_events(out, (20, 16, 2)).dtype == events.EVENT_DTYPE and len(out) <= len(stream)


def test_to_frames_bins_and_time_steps():
    ev = events.make_events([0, 1, 1, 2, 2], [0, 0, 1, 1, 1], [0, 10, 49, 50, 99], [1, 0, 1, 1, 1])
    frames = events.to_frames(ev, (3, 2, 2), n_time_bins=2, end_time=100)
    assert frames.shape == (2, 2, 2, 3) and frames.sum() == 5
    assert frames[0, 1, 0, 0] == 1 and frames[0, 0, 0, 1] == 1 and frames[0, 1, 1, 1] == 1 and frames[1, 1, 1, 2] == 2
    single = events.to_frames(ev[ev["p"]], (3, 2, 1), n_time_bins=1)
    assert single.shape == (1, 1, 2, 3) and single.sum() == 4
    steps = events.ToTimeSteps((3, 2, 2), num_steps=4, duration_us=100)(ev)
    assert steps.dtype == torch.float32 and steps.shape == (4, 2, 2, 3) and steps.sum() == 5
    assert events.ToTimeSteps((3, 2, 2), 4, 100, flatten=True)(ev).shape == (4, 12)
    late = events.to_frames(ev, (3, 2, 2), time_window=30, start_time=20, end_time=80)  # keeps t in [20, 80)
    assert late.shape[0] == 2 and late.sum() == 2
    numpy_ints = dict(time_window=np.int64(30), start_time=np.int64(20), end_time=np.int64(80))
    assert np.array_equal(events.to_frames(ev, (3, 2, 2), **numpy_ints), late)  # numpy integers work as ints
    for name, bad in (("time_window", 2.5), ("n_time_bins", True), ("start_time", -1)):
        options = {"n_time_bins": 2, name: bad} if name != "time_window" else {name: bad}
        with pytest.raises(ConfigError, match=f"{name}={bad!r}.*int"):
            events.to_frames(ev, (3, 2, 2), **options)
    with pytest.raises(ConfigError, match="exactly one"):
        events.to_frames(ev, (3, 2, 2))
    with pytest.raises(ConfigError, match="end_time=10"):
        events.to_frames(ev, (3, 2, 2), n_time_bins=2, start_time=20, end_time=10)
