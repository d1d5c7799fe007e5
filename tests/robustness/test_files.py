"""Hostile files: checkpoints, HDF5 event files and NIR files that are damaged, of the wrong kind or in the
wrong place, and saves killed half-way.

Every bad file or argument must give a ``hybridai.HybridAIError`` whose message names the file or the
argument, what is wrong and what is accepted; a killed save must leave the previous checkpoint intact and
its temporary file must go at the next save.
"""

from __future__ import annotations

import io
import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import hybridai
from hybridai import events
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.events import EventFileError
from hybridai.spiking.nir import from_nir, to_nir
from hybridai.training.checkpoint import CheckpointError, remove_stale_temporaries

try:
    import h5py
except ImportError:  # pragma: no cover - the 'events' extra
    h5py = None
try:
    import nir
except ImportError:  # pragma: no cover - the 'nir' extra
    nir = None

needs_h5py = pytest.mark.skipif(h5py is None, reason="needs h5py (pip install 'hybridai[events]')")
needs_nir = pytest.mark.skipif(nir is None, reason="needs nir (pip install 'hybridai[nir]')")
REPO = Path(__file__).resolve().parents[2]


# -- checkpoints: load ------------------------------------------------------------------------------


def _net(width: int = 2) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, width))


def _with_cuda_locations(source: Path, target: Path) -> None:
    """A copy of a checkpoint whose tensors say they live on 'cuda' (as if saved on a GPU)."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("data.pkl"):
                assert b"X\x03\x00\x00\x00cpu" in data
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x04\x00\x00\x00cuda")
            zout.writestr(info.filename, data)


@pytest.fixture
def ck(tmp_path):
    """A good checkpoint (with optimizer state) and a set of bad files next to it."""
    model = _net()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    good = hybridai.save(model, tmp_path / "good.pt", optimizer=optimizer, epoch=3)
    data = good.read_bytes()
    (tmp_path / "text.pt").write_text("hello world\n")
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "half.pt").write_bytes(data[: len(data) // 2])
    torch.save(model, tmp_path / "whole.pt")
    torch.save(model.state_dict(), tmp_path / "plain.pt")
    hybridai.save(model, tmp_path / "no_opt.pt")
    buffer = io.BytesIO()
    torch.save({"format": "hybridai-checkpoint-1", "model": model.state_dict()}, buffer)
    (tmp_path / "lacks.pt").write_bytes(buffer.getvalue())
    _with_cuda_locations(good, tmp_path / "gpu.pt")
    (tmp_path / "folder").mkdir()
    return tmp_path


def _adam(model):
    return torch.optim.Adam(model.parameters())


# (name, call(folder), error class, words the message must contain)
BAD_LOADS = [
    ("path None", lambda d: hybridai.load(None, _net()), ConfigError, ["path=None", "file path"]),
    ("path int", lambda d: hybridai.load(3, _net()), ConfigError, ["path=3", "file path"]),
    ("path empty", lambda d: hybridai.load("", _net()), ConfigError, ["path=''", "file path"]),
    ("model None", lambda d: hybridai.load(d / "good.pt", None), ConfigError, ["model=None", "torch.nn.Module"]),
    ("model str", lambda d: hybridai.load(d / "good.pt", "net"), ConfigError, ["model=<str 'net'>", "nn.Module"]),
    (
        "optimizer str",
        lambda d: hybridai.load(d / "good.pt", _net(), "adam"),
        ConfigError,
        ["optimizer=<str 'adam'>", "None or a torch.optim.Optimizer"],
    ),
    ("missing", lambda d: hybridai.load(d / "nope.pt", _net()), CheckpointError, ["nope.pt", "does not exist"]),
    (
        "missing folder",
        lambda d: hybridai.load(d / "no" / "x.pt", _net()),
        CheckpointError,
        ["x.pt", "does not exist", "folder"],
    ),
    ("folder", lambda d: hybridai.load(d / "folder", _net()), CheckpointError, ["folder'", "is a folder"]),
    (
        "text file",
        lambda d: hybridai.load(d / "text.pt", _net()),
        CheckpointError,
        ["text.pt", "starts with b'hello world", "zip archive", "hybridai.save"],
    ),
    ("empty file", lambda d: hybridai.load(d / "empty.pt", _net()), CheckpointError, ["empty.pt", "an empty file"]),
    (
        "truncated",
        lambda d: hybridai.load(d / "half.pt", _net()),
        CheckpointError,
        ["half.pt", "corrupt or truncated", "zip archive"],
    ),
    (
        "whole module",
        lambda d: hybridai.load(d / "whole.pt", _net()),
        CheckpointError,
        ["whole.pt", "pickled Python objects", "torch.nn.modules.container.Sequential", "torch.save(model)"],
    ),
    (
        "plain state_dict",
        lambda d: hybridai.load(d / "plain.pt", _net()),
        CheckpointError,
        ["plain.pt", "not a hybridai checkpoint", "hybridai.save"],
    ),
    ("lacks entries", lambda d: hybridai.load(d / "lacks.pt", _net()), CheckpointError, ["lacks.pt", "'optimizer'"]),
    (
        "shape",
        lambda d: hybridai.load(d / "good.pt", _net(5)),
        ShapeError,
        ["good.pt", "'2.weight'", "(2, 4) in the checkpoint", "(5, 4) in the model"],
    ),
    (
        "missing key",
        lambda d: hybridai.load(d / "good.pt", nn.Sequential(nn.Linear(3, 4))),
        ShapeError,
        ["model=Sequential", "'2.weight'", "model lacks", "built like the one that was saved"],
    ),
    (
        "extra key",
        lambda d: hybridai.load(d / "good.pt", nn.Sequential(*_net(), nn.Linear(2, 2))),
        ShapeError,
        ["'3.weight'", "checkpoint lacks"],
    ),
    (
        "no optimizer state",
        lambda d: hybridai.load(d / "no_opt.pt", _net(), _adam(_net())),
        CheckpointError,
        ["no_opt.pt", "no optimizer state", "optimizer=None"],
    ),
    (
        "optimizer of other parameters",
        lambda d: hybridai.load(d / "good.pt", _net(), torch.optim.SGD(_net()[0].parameters(), lr=0.1)),
        ShapeError,
        ["optimizer=SGD", "[4]", "[2]", "same parameters"],
    ),
    (
        "map_location bad",
        lambda d: hybridai.load(d / "good.pt", _net(), map_location="gpu7"),
        ConfigError,
        ["map_location='gpu7'", "torch device"],
    ),
    (
        "map_location int",
        lambda d: hybridai.load(d / "good.pt", _net(), map_location=3.5),
        ConfigError,
        ["map_location=3.5", "'cpu'"],
    ),
]

NO_GPU = [
    (
        "map_location cuda",
        lambda d: hybridai.load(d / "good.pt", _net(), map_location="cuda"),
        ConfigError,
        ["map_location='cuda'", "0 CUDA device(s)", "'cpu'"],
    ),
    (
        "saved on a GPU",
        lambda d: hybridai.load(d / "gpu.pt", _net()),
        CheckpointError,
        ["gpu.pt", "CUDA tensors", "map_location='cpu'"],
    ),
]


@pytest.mark.parametrize("name, call, error, words", BAD_LOADS, ids=[row[0] for row in BAD_LOADS])
def test_bad_loads_give_typed_errors_naming_the_file_or_argument(ck, name, call, error, words):
    with pytest.raises(error) as info:
        call(ck)
    assert isinstance(info.value, HybridAIError)
    assert all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the messages of a machine without a GPU")
@pytest.mark.parametrize("name, call, error, words", NO_GPU, ids=[row[0] for row in NO_GPU])
def test_gpu_checkpoints_without_a_gpu_say_so(ck, name, call, error, words):
    with pytest.raises(error) as info:
        call(ck)
    assert "corrupt" not in str(info.value)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_gpu_checkpoint_loads_with_map_location_cpu(ck):
    model = _net()
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    info = hybridai.load(ck / "gpu.pt", model, map_location="cpu")
    assert info["epoch"] == 3
    assert all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(), _loaded(ck / "good.pt").values(), strict=True)
    )


def _loaded(path):
    model = _net()
    hybridai.load(path, model)
    return model.state_dict()


def test_a_refused_load_changes_nothing(ck):
    """The shape check runs before anything is restored: the first layer, which would fit, stays as it was."""
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 7))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ShapeError, match=r"'2.weight' has shape \(2, 4\)"):
        hybridai.load(ck / "good.pt", model)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    optimizer = torch.optim.SGD(model[0].parameters(), lr=0.1)
    right = _net()
    with pytest.raises(ShapeError, match="optimizer=SGD"):
        hybridai.load(ck / "good.pt", right, optimizer)
    assert not all(
        torch.equal(a, b) for a, b in zip(right.state_dict().values(), _loaded(ck / "good.pt").values(), strict=True)
    )


# -- checkpoints: save ------------------------------------------------------------------------------


BAD_METADATA = [
    ("object", {"note": object()}, ["'note'", "builtins.object"]),
    ("set", {"tags": {1, 2}}, ["'tags'", "builtins.set"]),
    ("numpy float", {"loss": np.float64(0.5)}, ["'loss'", "numpy.float64", ".item()"]),
    ("numpy array", {"curve": np.zeros(3)}, ["'curve'", "numpy.ndarray"]),
    ("nested", {"info": {"a": [1, 2, object()]}}, ["'info'['a'][2]", "builtins.object"]),
    ("tuple key", {"table": {(1, 2): 3}}, ["'table'", "key (1, 2)", "tuple"]),
    ("function", {"fn": len}, ["'fn'", "builtin_function_or_method"]),
    ("module", {"net": nn.Linear(2, 2)}, ["'net'", "torch.nn.modules.linear.Linear"]),
    ("namedtuple", {"point": __import__("collections").namedtuple("P", "x y")(1, 2)}, ["'point'", "P"]),
    ("str subclass", {"kind": __import__("enum").StrEnum("K", "A").A}, ["'kind'", "K"]),
    ("bytes", {"raw": b"x"}, ["'raw'", "builtins.bytes"]),
]


@pytest.mark.parametrize("name, metadata, words", BAD_METADATA, ids=[row[0] for row in BAD_METADATA])
def test_metadata_load_cannot_read_is_refused_at_save(tmp_path, name, metadata, words):
    with pytest.raises(ConfigError) as info:
        hybridai.save(_net(), tmp_path / "ck.pt", **metadata)
    message = str(info.value)
    assert all(w in message for w in words) and "accepted: str, int, float, bool, None" in message, message
    assert os.listdir(tmp_path) == []


plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4) | st.integers(0, 9), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=plain)
def test_accepted_metadata_loads_back_equal(tmp_path, value):
    """What save accepts, load reads back (weights_only=True) unchanged: no over-refusal, no silent loss."""
    path = hybridai.save(_net(), tmp_path / "meta.pt", value=value, tensor=torch.arange(3))
    info = hybridai.load(path, _net())
    assert info["metadata"]["value"] == value
    assert torch.equal(info["metadata"]["tensor"], torch.arange(3))


BAD_SAVES = [
    ("model None", lambda d: hybridai.save(None, d / "x.pt"), ConfigError, ["model=None", "torch.nn.Module"]),
    ("path None", lambda d: hybridai.save(_net(), None), ConfigError, ["path=None", "file path"]),
    ("path folder", lambda d: hybridai.save(_net(), d), ConfigError, ["path=", "this is a folder"]),
    (
        "missing folder",
        lambda d: hybridai.save(_net(), d / "no" / "x.pt"),
        ConfigError,
        ["x.pt", "inside an existing folder", "create it first"],
    ),
    (
        "parent is a file",
        lambda d: hybridai.save(_net(), d / "file" / "x.pt"),
        ConfigError,
        ["x.pt", "does not exist or is a file"],
    ),
    ("epoch str", lambda d: hybridai.save(_net(), d / "x.pt", epoch="3"), ConfigError, ["epoch='3'", "int"]),
    ("epoch -1", lambda d: hybridai.save(_net(), d / "x.pt", epoch=-1), ConfigError, ["epoch=-1", "non-negative"]),
    (
        "optimizer str",
        lambda d: hybridai.save(_net(), d / "x.pt", optimizer="adam"),
        ConfigError,
        ["optimizer=<str 'adam'>", "torch.optim.Optimizer"],
    ),
]


@pytest.mark.parametrize("name, call, error, words", BAD_SAVES, ids=[row[0] for row in BAD_SAVES])
def test_bad_saves_give_typed_errors_and_write_nothing(tmp_path, name, call, error, words):
    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(error) as info:
        call(tmp_path)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert sorted(os.listdir(tmp_path)) == ["file"]


# -- checkpoints: temporary files and kills ---------------------------------------------------------


def _temporaries(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


def test_stale_temporaries_go_on_the_next_save_and_on_a_failed_one(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    stale = tmp_path / ".ck.pt.hybridai-99999999-0badc0de.tmp"  # a writer that was killed: nobody holds its lock
    old_legacy = tmp_path / ".ck.pt.abcd1234.tmp"  # left by an earlier hybridai (mkstemp name), an hour old
    new_legacy = tmp_path / ".ck.pt.efgh5678.tmp"  # the same, but recent: it may still be being written
    other = tmp_path / ".other.pt.hybridai-99999999-0badc0de.tmp"  # another target's: not ours to remove
    for file in (stale, old_legacy, new_legacy, other):
        file.write_bytes(b"x" * 1000)
    os.utime(old_legacy, (time.time() - 3600, time.time() - 3600))
    hybridai.save(_net(), path, epoch=1)
    assert _temporaries(tmp_path) == sorted([new_legacy.name, other.name])

    stale.write_bytes(b"x" * 1000)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        hybridai.save(_net(), path, epoch=2)
    monkeypatch.undo()
    assert _temporaries(tmp_path) == sorted([new_legacy.name, other.name])  # its own and the stale one gone
    assert hybridai.load(path, _net())["epoch"] == 1


@pytest.mark.skipif(os.name != "posix", reason="folders are fsynced on POSIX only")
def test_save_fsyncs_the_file_and_then_its_folder(tmp_path, monkeypatch):
    """The rename is durable only once the folder is fsynced: a power cut could otherwise lose it."""
    synced = []
    real_fsync = os.fsync

    def record(fd):
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", record)
    hybridai.save(_net(), tmp_path / "ck.pt")
    assert synced == ["file", "folder"]


CHILD = textwrap.dedent(
    """
    import sys, time
    import torch
    import hybridai
    from hybridai.training import checkpoint

    path, mode = sys.argv[1], sys.argv[2]
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.Linear(1024, 1024))
    if mode == "slow":  # write half the file, say so, then hang until killed
        real_save = torch.save

        def slow_save(obj, f):
            import io
            buffer = io.BytesIO()
            real_save(obj, buffer)
            data = buffer.getvalue()
            f.write(data[: len(data) // 2])
            f.flush()
            print("HALF", flush=True)
            time.sleep(120)

        checkpoint.torch.save = slow_save
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(2.0)
        hybridai.save(model, path, epoch=2)
    else:  # save epoch after epoch until killed; print each epoch once its save has returned
        for epoch in range(1, 10_000):
            with torch.no_grad():
                for p in model.parameters():
                    p.fill_(float(epoch))
            hybridai.save(model, path, epoch=epoch)
            print(epoch, flush=True)
    """
)


def _big():
    return nn.Sequential(nn.Linear(1024, 1024), nn.Linear(1024, 1024))


def _start(tmp_path, path, mode):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.Popen(
        [sys.executable, str(script), str(path), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
    )


def _filled(value):
    model = _big()
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(value)
    return model


needs_posix = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX")


@needs_posix
@pytest.mark.slow
def test_a_save_killed_half_way_keeps_the_previous_checkpoint_and_the_next_save_cleans_up(tmp_path):
    path = tmp_path / "ck.pt"
    hybridai.save(_filled(1.0), path, epoch=1)
    before = path.read_bytes()
    child = _start(tmp_path, path, "slow")
    try:
        assert child.stdout.readline().strip() == "HALF"
        (temporary,) = _temporaries(tmp_path)
        assert temporary.startswith(f".ck.pt.hybridai-{child.pid}-") and (tmp_path / temporary).stat().st_size > 0
        assert remove_stale_temporaries(path) == []  # the child is alive and holds its lock: not stale
        assert _temporaries(tmp_path) == [temporary]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert _temporaries(tmp_path) == [temporary]  # the kill left it behind ...
    assert path.read_bytes() == before  # ... and the previous checkpoint intact
    model = _big()
    assert hybridai.load(path, model)["epoch"] == 1 and all(bool((p == 1.0).all()) for p in model.parameters())
    hybridai.save(_filled(3.0), path, epoch=3)  # the next save removes it
    assert _temporaries(tmp_path) == [] and sorted(os.listdir(tmp_path)) == ["child.py", "ck.pt"]
    assert hybridai.load(path, _big())["epoch"] == 3


@needs_posix
@pytest.mark.slow
def test_saves_killed_at_random_times_always_leave_a_whole_checkpoint(tmp_path):
    path = tmp_path / "ck.pt"
    hybridai.save(_filled(0.0), path, epoch=0)
    delays = random.Random(15).sample([0.05, 0.1, 0.15, 0.2, 0.3, 0.4], 3)
    left_behind = 0
    for delay in delays:
        child = _start(tmp_path, path, "loop")
        try:
            last = int(child.stdout.readline())  # one save done: the next one is under way
            time.sleep(delay)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        left_behind += len(_temporaries(tmp_path))
        model = _big()
        epoch = hybridai.load(path, model)["epoch"]
        assert epoch >= last  # every save that returned is durable
        assert all(bool((p == float(epoch)).all()) for p in model.parameters())  # one whole version, not a mix
        assert len(_temporaries(tmp_path)) <= 1  # a kill leaves at most its own; earlier ones were cleaned
    assert left_behind >= 1  # the child spends nearly all its time inside save: kills land mid-write
    hybridai.save(_filled(9.0), path, epoch=99)
    assert _temporaries(tmp_path) == []
    assert hybridai.load(path, _big())["epoch"] == 99


# -- event files ------------------------------------------------------------------------------------

SENSOR = (16, 16, 2)


@pytest.fixture(scope="module")
def streams():
    return events.moving_shapes(3, sensor_size=SENSOR, duration_us=10_000, n_frames=6, seed=1)


@pytest.fixture
def good_events(tmp_path, streams):
    return events.save_events(tmp_path / "good.h5", *streams, sensor_size=SENSOR)


def _edited(good: Path, name: str, edit) -> Path:
    path = good.with_name(f"{name}.h5")
    path.write_bytes(good.read_bytes())
    with h5py.File(path, "r+") as file:
        edit(file)
    return path


def _replace(file, name, values):
    del file[name]
    file[name] = values


def _set_offsets(change):
    def edit(file):
        offsets = file["offsets"][()]
        _replace(file, "offsets", change(offsets))

    return edit


def _set_column(name, change):
    def edit(file):
        values = file["events"][name][()]
        _replace(file["events"], name, change(values))

    return edit


def _set_attr(name, value):
    def edit(file):
        if value is None:
            del file.attrs[name]
        else:
            file.attrs[name] = value

    return edit


def _swap(a, i, j):
    a = a.copy()
    a[i], a[j] = a[j], a[i]
    return a


def _flip_first(values):
    values = values.copy()
    values[0] = 100
    return values


def _late_first(values):
    values = values.copy()
    values[0] = 10**12
    return values


# (name, edit, words the message must contain); every one is an EventFileError naming the file
BAD_EVENT_FILES = [
    ("no offsets", lambda f: f.__delitem__("offsets"), ["the dataset 'offsets' is missing"]),
    ("no labels", lambda f: f.__delitem__("labels"), ["the dataset 'labels' is missing"]),
    ("no sensor_size", _set_attr("sensor_size", None), ["'sensor_size' attribute is missing"]),
    ("short sensor_size", _set_attr("sensor_size", [1, 2]), ["sensor_size=[1, 2]", "(width, height, polarities)"]),
    ("float sensor_size", _set_attr("sensor_size", [16.5, 16, 2]), ["sensor_size=[16.5, 16.0, 2.0]"]),
    ("version 99", _set_attr("version", 99), ["format version 99", "version 1"]),
    ("no version", _set_attr("version", None), ["format version None"]),
    ("offset past the end", _set_offsets(lambda o: np.r_[o[:-1], 10**9]), ["offsets run from 0 to 1000000000"]),
    ("offset not from 0", _set_offsets(lambda o: np.r_[5, o[1:]]), ["offsets run from 5"]),
    ("offsets decrease", _set_offsets(lambda o: _swap(o, 1, 2)), ["offsets decrease at stream 1"]),
    ("offsets short", _set_offsets(lambda o: o[:-1]), ["3 offsets for 3 labels"]),
    ("offsets float", _set_offsets(lambda o: o.astype(float)), ["'offsets' has dtype float64"]),
    ("offsets 2-D", _set_offsets(lambda o: o[:, None]), ["'offsets' has dtype int64 and shape (4, 1)"]),
    ("no x", lambda f: f["events"].__delitem__("x"), ["the column 'events/x' is missing"]),
    ("no events group", lambda f: f.__delitem__("events"), ["the 'events' group is missing"]),
    ("short x", _set_column("x", lambda v: v[:3]), ["different lengths", "'x': 3"]),
    ("float t", _set_column("t", lambda v: v.astype(float)), ["'events/t' has dtype float64", "int64"]),
    ("x outside the sensor", _set_column("x", _flip_first), ["stream 0", "checksum"]),
    ("t unsorted", _set_column("t", _late_first), ["stream 0", "checksum"]),
    ("bad checksums", lambda f: _replace(f, "checksums", np.zeros(2, np.uint32)), ["'checksums' has shape (2,)"]),
]


@needs_h5py
@pytest.mark.parametrize("name, edit, words", BAD_EVENT_FILES, ids=[row[0] for row in BAD_EVENT_FILES])
def test_damaged_event_files_are_refused_naming_the_file(good_events, name, edit, words):
    path = _edited(good_events, name.replace(" ", "_"), edit)
    with pytest.raises(EventFileError) as info:
        dataset = events.EventDataset(path)
        [dataset[i] for i in range(len(dataset))]
    message = str(info.value)
    assert repr(str(path)) in message and all(w in message for w in words), message
    assert "accepted: a file written by hybridai.events.save_events" in message


@needs_h5py
@pytest.mark.parametrize(
    "name, edit, words",
    [
        ("x outside the sensor", _set_column("x", _flip_first), ["stream 0 holds invalid events", "events['x']=100"]),
        ("t unsorted", _set_column("t", _late_first), ["stream 0 holds invalid events", "is not sorted"]),
    ],
)
def test_files_without_checksums_are_still_checked_on_read(good_events, name, edit, words):
    """Files written before checksums were stored: each stream read is still validated as events."""

    def without_checksums(file):
        edit(file)
        del file["checksums"]

    dataset = events.EventDataset(_edited(good_events, "old_" + name.replace(" ", "_"), without_checksums))
    with pytest.raises(EventFileError) as info:
        dataset[0]
    assert all(w in str(info.value) for w in words), str(info.value)
    assert len(dataset[1][0]) > 0  # the other streams still read


@needs_h5py
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_flipped_bytes_never_give_a_raw_error_or_a_wrong_stream(tmp_path, streams, compression):
    """Fuzz: 1 to 20 flipped bytes anywhere in the file. Every read either returns the original streams exactly
    or raises an EventFileError/HybridAIError naming the file."""
    good = events.save_events(tmp_path / "good.h5", *streams, sensor_size=SENSOR, compression=compression)
    data = good.read_bytes()
    refused = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        damaged = bytearray(data)
        for i in rng.integers(0, len(damaged), int(rng.integers(1, 21))):
            damaged[i] ^= int(rng.integers(1, 256))
        path = tmp_path / f"flip{seed}.h5"
        path.write_bytes(bytes(damaged))
        try:
            dataset = events.EventDataset(path)
            read = [dataset[i] for i in range(len(dataset))]
        except HybridAIError as exc:
            assert str(path) in str(exc)
            refused += 1
            continue
        assert [label for _, label in read] == streams[1].tolist()
        assert all(np.array_equal(got, want) for (got, _), want in zip(read, streams[0], strict=True))
        dataset.close()
    assert refused >= 40  # most flips land in data or metadata and are caught


@needs_h5py
@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9, 0.999])
def test_truncated_event_files_are_refused(good_events, fraction):
    data = good_events.read_bytes()
    path = good_events.with_name("cut.h5")
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(EventFileError, match="cut.h5"):
        dataset = events.EventDataset(path)
        [dataset[i] for i in range(len(dataset))]


@needs_h5py
def test_event_file_of_another_kind_and_paths(tmp_path, good_events):
    (tmp_path / "text.h5").write_text("x, y, t, p\n")
    with pytest.raises(EventFileError, match=r"text.h5.*not an HDF5 file: it is a file that starts with b'x, y, t,"):
        events.EventDataset(tmp_path / "text.h5")
    (tmp_path / "empty.h5").write_bytes(b"")
    with pytest.raises(EventFileError, match="an empty file"):
        events.EventDataset(tmp_path / "empty.h5")
    with h5py.File(tmp_path / "other.h5", "w") as file:
        file["data"] = np.zeros(3)
    with pytest.raises(ConfigError, match=r"other.h5.*'hybridai-events' format"):
        events.EventDataset(tmp_path / "other.h5")
    for path, words in [
        (None, "path=None"),
        (tmp_path, "this is a folder"),
        (tmp_path / "missing.h5", "existing HDF5 file"),
        (7, "path=7"),
    ]:
        with pytest.raises(ConfigError, match=words):
            events.EventDataset(path)


# -- NIR files --------------------------------------------------------------------------------------


def _lif(n, threshold=0.5, dt=1e-3, beta=0.8, **metadata):
    tau = np.full(n, dt / (1 - beta))
    return nir.LIF(tau=tau, r=tau / dt, v_leak=np.zeros(n), v_threshold=np.full(n, threshold), metadata=dict(metadata))


def _graph(*nodes, n_in=3, n_out=2):
    """A chain input -> nodes -> output, built without nir's own type check (files can hold anything)."""
    names = [f"n{i}" for i in range(len(nodes))]
    path = ["input", *names, "output"]
    return nir.NIRGraph(
        nodes={
            "input": nir.Input(np.array([n_in])),
            **dict(zip(names, nodes, strict=True)),
            "output": nir.Output(np.array([n_out])),
        },
        edges=list(zip(path[:-1], path[1:], strict=False)),
        type_check=False,
    )


def _reshaped(node, weight):
    """``node`` with a weight nir's constructor would refuse (files written by other tools can hold one)."""
    node.weight = weight
    return node


def _exported(**changes):
    model = nn.Sequential(nn.Linear(3, 4), hybridai.LIF(0.9, dt=1e-3), nn.Linear(4, 2), hybridai.LIF(0.8, dt=1e-3))
    graph = to_nir(model)
    graph.nodes["1"].metadata.update(changes)
    return graph


# (name, call, error class, words)
BAD_GRAPHS = [
    ("dt str", lambda: from_nir(_graph(nir.Linear(np.ones((2, 3))), _lif(2)), dt="abc"), ConfigError, ["dt='abc'"]),
    ("dt 0", lambda: from_nir(_graph(_lif(3), n_out=3), dt=0), ConfigError, ["dt=0", "> 0"]),
    ("dt -1e-3", lambda: from_nir(_graph(_lif(3), n_out=3), dt=-1e-3), ConfigError, ["dt=-0.001", "> 0"]),
    ("dt nan", lambda: from_nir(_graph(_lif(3), n_out=3), dt=float("nan")), ConfigError, ["dt=nan"]),
    ("dt inf", lambda: from_nir(_graph(_lif(3), n_out=3), dt=float("inf")), ConfigError, ["dt=inf"]),
    ("dt True", lambda: from_nir(_graph(_lif(3), n_out=3), dt=True), ConfigError, ["dt=True"]),
    ("dt missing", lambda: from_nir(_graph(_lif(3), n_out=3)), ConfigError, ["dt=None", "'n0'"]),
    ("metadata dt 0", lambda: from_nir(_exported(dt=0.0)), ConfigError, ["node '1' metadata 'dt'=0.0", "> 0"]),
    ("metadata dt < 0", lambda: from_nir(_exported(dt=-1e-3)), ConfigError, ["metadata 'dt'=-0.001"]),
    ("metadata dt str", lambda: from_nir(_exported(dt="abc")), ConfigError, ["metadata 'dt'='abc'"]),
    ("metadata reset", lambda: from_nir(_exported(reset="bogus")), ConfigError, ["'reset'='bogus'", "'subtract'"]),
    ("metadata surrogate", lambda: from_nir(_exported(surrogate="x")), ConfigError, ["'surrogate'='x'", "'atan'"]),
    (
        "surrogate parameter str",
        lambda: from_nir(_exported(surrogate_alpha="x")),
        ConfigError,
        ["'surrogate_alpha'='x'", "finite number"],
    ),
    (
        "surrogate parameter unknown",
        lambda: from_nir(_exported(surrogate_bogus=1.0)),
        ConfigError,
        ["'surrogate_bogus'=1.0", "['alpha']"],
    ),
    (
        "weights 3-D",
        lambda: from_nir(_graph(nir.Linear(np.ones((2, 3, 1)))), dt=1e-3),
        ShapeError,
        ["node 'n0' weight.shape=(2, 3, 1)", "2-D"],
    ),
    (
        "weights 1x3 (control)",
        lambda: from_nir(_graph(nir.Linear(np.ones((1, 3))), n_out=1), dt=1e-3),
        None,  # a valid 1x3 weight: the positive control of the row above
        [],
    ),
    (
        "weights 1-D",
        lambda: from_nir(_graph(_reshaped(nir.Linear(np.ones((2, 3))), np.ones(3)))),
        ShapeError,
        ["node 'n0' weight.shape=(3,)", "2-D"],
    ),
    (
        "bias length",
        lambda: from_nir(_graph(nir.Affine(np.ones((2, 3)), np.ones(5))), dt=1e-3),
        ShapeError,
        ["node 'n0' bias.shape=(5,)", "(2,), one per output"],
    ),
    (
        "bias 2-D",
        lambda: from_nir(_graph(nir.Affine(np.ones((2, 3)), np.ones((2, 1)))), dt=1e-3),
        ShapeError,
        ["bias.shape=(2, 1)", "1-D"],
    ),
    (
        "weights NaN",
        lambda: from_nir(_graph(nir.Linear(np.full((2, 3), np.nan))), dt=1e-3),
        ConfigError,
        ["node 'n0' weight", "NaN or inf", "finite numbers"],
    ),
    (
        "bias inf",
        lambda: from_nir(_graph(nir.Affine(np.ones((2, 3)), np.array([1.0, np.inf]))), dt=1e-3),
        ConfigError,
        ["node 'n0' bias", "NaN or inf"],
    ),
    (
        "weights text",
        lambda: from_nir(_graph(nir.Linear(np.array([["a", "b", "c"], ["d", "e", "f"]]))), dt=1e-3),
        ConfigError,
        ["node 'n0' weight", "finite numbers"],
    ),
    (
        "input width",
        lambda: from_nir(_graph(nir.Linear(np.ones((2, 5)))), dt=1e-3),
        ShapeError,
        ["node 'n0' weight.shape=(2, 5)", "[n_out, 3]"],
    ),
    (
        "width between layers",
        lambda: from_nir(_graph(nir.Linear(np.ones((4, 3))), nir.Linear(np.ones((2, 3)))), dt=1e-3),
        ShapeError,
        ["node 'n1' weight.shape=(2, 3)", "[n_out, 4]"],
    ),
    (
        "neuron width",
        lambda: from_nir(_graph(nir.Linear(np.ones((4, 3))), _lif(2)), dt=1e-3),
        ShapeError,
        ["node 'n1' tau=", "2 values", "1 or 4"],
    ),
    (
        "output width",
        lambda: from_nir(_graph(nir.Linear(np.ones((7, 3)))), dt=1e-3),
        ShapeError,
        ["node 'output' output_type=2", "7, the width"],
    ),
    (
        "threshold < 0",
        lambda: from_nir(_graph(nir.Linear(np.ones((2, 3))), _lif(2, threshold=-0.5)), dt=1e-3),
        ConfigError,
        ["node 'n1' v_threshold=-0.5", "> 0", "fire at every step"],
    ),
    (
        "threshold 0",
        lambda: from_nir(_graph(nir.Linear(np.ones((2, 3))), _lif(2, threshold=0.0)), dt=1e-3),
        ConfigError,
        ["v_threshold=0.0", "> 0"],
    ),
    (
        "threshold NaN",
        lambda: from_nir(_graph(nir.Linear(np.ones((2, 3))), _lif(2, threshold=np.nan)), dt=1e-3),
        ConfigError,
        ["node 'n1' v_threshold", "NaN or inf"],
    ),
    (
        "tau below dt",
        lambda: from_nir(_graph(nir.Linear(np.ones((2, 3))), _lif(2, beta=-1.0)), dt=1e-3),
        ConfigError,
        ["node 'n1' tau=0.0005", ">= dt=0.001"],
    ),
    (
        "tau negative",
        lambda: from_nir(_graph(nir.Linear(np.ones((2, 3))), _lif(2, beta=1.5)), dt=1e-3),
        ConfigError,
        ["node 'n1' tau=-0.002"],
    ),
    (
        "gain with another dt",
        lambda: from_nir(_graph(nir.Linear(np.ones((2, 3))), _lif(2)), dt=2e-3),
        ConfigError,
        ["node 'n1'", "input gain", "dt=0.002"],
    ),
    ("not a graph", lambda: from_nir(None), ConfigError, ["graph='NoneType'", "nir.NIRGraph"]),
    ("unsupported node", lambda: from_nir(_graph(nir.Scale(np.ones(3)), n_out=3)), ConfigError, ["'n0'", "Scale"]),
]


@needs_nir
@pytest.mark.parametrize("name, call, error, words", BAD_GRAPHS, ids=[row[0] for row in BAD_GRAPHS])
def test_bad_nir_graphs_name_the_node_and_field(name, call, error, words):
    if error is None:
        assert isinstance(call(), nn.Sequential)
        return
    with pytest.raises(error) as info:
        call()
    assert all(w in str(info.value) for w in words), str(info.value)
    assert "input gain" not in str(info.value) or "gain" in name  # dt errors are reported as dt


@pytest.fixture
def nir_file(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), hybridai.LIF(0.9, dt=1e-3))
    path = tmp_path / "model.nir"
    nir.write(path, to_nir(model))
    return path


@needs_nir
@pytest.mark.parametrize(
    "name, make, words",
    [
        ("missing", lambda p: p.with_name("nope.nir"), ["nope.nir", "existing .nir file"]),
        ("folder", lambda p: p.parent, ["this is a folder"]),
        ("empty", lambda p: _write(p, "empty.nir", b""), ["empty.nir", "not a NIR file", "an empty file"]),
        ("garbage", lambda p: _write(p, "junk.nir", b"garbage" * 50), ["junk.nir", "starts with b'garbageg'"]),
        ("truncated", lambda p: _write(p, "cut.nir", p.read_bytes()[:2000]), ["cut.nir", "damaged or truncated"]),
        ("half", lambda p: _write(p, "half.nir", p.read_bytes()[: p.stat().st_size // 2]), ["half.nir", "damaged"]),
        ("event file", lambda p: _events_file(p), ["events.nir", "damaged", "nir.write"]),
        (
            "width mismatch in a file",
            lambda p: _nir_write(p, _graph(nir.Linear(np.ones((4, 3))), nir.Linear(np.ones((2, 3))))),
            ["node 'n1' weight.shape=(2, 3)", "[n_out, 4]"],
        ),
        (
            "NaN weights in a file",
            lambda p: _nir_write(p, _graph(nir.Linear(np.full((2, 3), np.nan)))),
            ["node 'n0' weight", "NaN or inf"],
        ),
        (
            "1-D weights in a file",
            lambda p: _nir_write(p, _graph(_reshaped(nir.Linear(np.ones((2, 3))), np.ones(3)))),
            ["written.nir", "damaged", "Weight must be at least 2D"],
        ),
    ],
)
def test_bad_nir_files_are_refused_naming_the_file(nir_file, name, make, words):
    with pytest.raises(HybridAIError) as info:
        from_nir(make(nir_file), dt=1e-3)
    assert all(w in str(info.value) for w in words), str(info.value)


@needs_nir
def test_good_nir_file_still_reads(nir_file):
    model = from_nir(nir_file)
    assert model[1].dt == 1e-3 and model[0].weight.shape == (4, 3)


def _write(p, name, data):
    path = p.with_name(name)
    path.write_bytes(data)
    return path


def _events_file(p):
    return events.save_events(p.with_name("events.nir"), [], sensor_size=(4, 4, 1))


def _nir_write(p, graph):
    path = p.with_name("written.nir")
    nir.write(path, graph)
    return path
