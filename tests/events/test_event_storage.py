"""HDF5 event storage: round trips, memory-mapped and chunked reads, DataLoader with padding collate."""

import numpy as np
import pytest
import torch

from hybridai import events
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError

pytest.importorskip("h5py")
SENSOR = (24, 24, 2)


@pytest.fixture(scope="module")
def data_set():
    return events.moving_shapes(6, sensor_size=SENSOR, duration_us=30_000, n_frames=12, seed=9)


@pytest.mark.parametrize("compression, mmap", [(None, True), ("gzip", False), ("lzf", False)])
def test_round_trip(tmp_path, data_set, compression, mmap):
    streams, labels = data_set
    streams = [*streams, streams[0][:0]]  # an empty stream too
    labels = [*labels.tolist(), 7]
    path = events.save_events(tmp_path / "set.h5", streams, labels, sensor_size=SENSOR, compression=compression)
    dataset = events.EventDataset(path)
    assert len(dataset) == len(streams) and dataset.sensor_size == SENSOR
    assert dataset.uses_mmap is mmap
    for i, (stream, label) in enumerate(zip(streams, labels, strict=True)):
        got, got_label = dataset[i]
        assert got.dtype == events.EVENT_DTYPE and np.array_equal(got, stream) and got_label == label
    assert np.array_equal(dataset[-1][0], streams[-1])
    dataset.close()


def test_writer_appends_streams_and_reads_chunks(tmp_path, data_set):
    streams, labels = data_set
    with events.EventWriter(tmp_path / "big.h5", SENSOR, compression="gzip", chunk_events=64) as writer:
        for stream, label in zip(streams, labels, strict=True):
            writer.append(stream, int(label))
    dataset = events.EventDataset(tmp_path / "big.h5", mmap=True)
    assert not dataset.uses_mmap  # chunked columns cannot be memory-mapped: read chunk by chunk
    assert all(np.array_equal(dataset[i][0], s) for i, s in enumerate(streams))
    assert dataset.labels.tolist() == labels.tolist()


def test_failed_write_leaves_nothing_behind(tmp_path, data_set):
    streams, _ = data_set
    bad = streams[1].copy()
    bad["t"] = bad["t"][::-1]
    with pytest.raises(ConfigError, match="not sorted"):
        with events.EventWriter(tmp_path / "partial.h5", SENSOR) as writer:
            writer.append(streams[0], 0)
            writer.append(bad, 1)
    with pytest.raises(ConfigError, match=r"streams\[1\]\['t'\] is not sorted"):
        events.save_events(tmp_path / "partial.h5", [streams[0], bad], sensor_size=SENSOR)
    assert list(tmp_path.iterdir()) == []


def test_dataloader_with_time_steps_and_padding(tmp_path, data_set):
    streams, labels = data_set
    path = events.save_events(tmp_path / "set.h5", streams, labels, sensor_size=SENSOR)
    steps = events.ToTimeSteps(SENSOR, num_steps=10, duration_us=30_000, flatten=True)
    loader = torch.utils.data.DataLoader(
        events.EventDataset(path, transform=steps), batch_size=4, collate_fn=events.pad_collate, num_workers=1
    )
    batches = list(loader)
    data, batch_labels, lengths = batches[0]
    assert data.shape == (10, 4, 2 * 24 * 24) and lengths.tolist() == [10] * 4
    assert batch_labels.tolist() == labels[:4].tolist()
    assert data.sum().item() == sum(len(s) for s in streams[:4])
    assert torch.equal(data[:, 1], steps(streams[1]))


def test_pad_collate_pads_time_and_events():
    short, long = torch.ones(3, 2), torch.full((5, 2), 2.0)
    data, labels, lengths = events.pad_collate([(short, 0), (long, 1)])
    assert data.shape == (5, 2, 2) and lengths.tolist() == [3, 5] and labels.tolist() == [0, 1]
    assert data[3:, 0].abs().sum() == 0 and torch.equal(data[:, 1], long)
    a = events.make_events([1, 2], [3, 4], [5, 6], [1, 0])
    b = events.make_events([7], [8], [9], [1])
    padded, labels, lengths = events.pad_collate([(a, 2), (b, 3)])
    assert padded.shape == (2, 2, 4) and lengths.tolist() == [2, 1]
    assert padded[0].tolist() == [[1, 3, 5, 1], [2, 4, 6, 0]] and padded[1, 1].tolist() == [-1, -1, -1, -1]
    with pytest.raises(ShapeError, match="differ only in T_i"):
        events.pad_collate([(torch.ones(3, 2), 0), (torch.ones(3, 4), 1)])
    with pytest.raises(ShapeError, match="all event arrays or all tensors"):
        events.pad_collate([(a, 0), (short, 1)])


def test_bad_paths_and_arguments(tmp_path, data_set):
    streams, labels = data_set
    with pytest.raises(ConfigError, match="path=.*existing HDF5 file"):
        events.EventDataset(tmp_path / "missing.h5")
    (tmp_path / "junk.h5").write_bytes(b"not hdf5")
    with pytest.raises(
        events.EventFileError, match=r"junk.h5.*not an HDF5 file: it is a file that starts with b'not hdf5'"
    ):
        events.EventDataset(tmp_path / "junk.h5")
    with pytest.raises(ShapeError, match="one label per stream"):
        events.save_events(tmp_path / "x.h5", streams, labels[:2], sensor_size=SENSOR)
    with pytest.raises(ConfigError, match="compression='zip'"):
        events.EventWriter(tmp_path / "x.h5", SENSOR, compression="zip")
    with pytest.raises(ConfigError, match=r"streams\[0\]\['x'\]=.*below 8"):
        events.save_events(tmp_path / "x.h5", streams[:1], sensor_size=(8, 8, 2))
    dataset = events.EventDataset(events.save_events(tmp_path / "ok.h5", streams, labels, sensor_size=SENSOR))
    with pytest.raises(HybridAIError, match=r"index=6.*\[0, 6\)"):
        dataset[6]
