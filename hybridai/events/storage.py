"""Large event sets in HDF5: write once or append, read one stream at a time through a torch Dataset.

Layout of a file (format ``hybridai-events``, version 1)::

    /events/x, /events/y, /events/t, /events/p   one column per field, all streams concatenated
    /offsets                                     int64 [n_streams + 1]; stream i is rows offsets[i]:offsets[i+1]
    /labels                                      int64 [n_streams]
    /checksums                                   uint32 [n_streams]: CRC-32 of each stream's columns
    attrs: format, version, sensor_size (width, height, polarities)

``save_events`` writes uncompressed contiguous columns by default, which ``EventDataset``
reads through numpy memory maps (the OS pages in only what a stream touches). With
``compression`` (or when streams are appended with ``EventWriter``) the columns are chunked,
and a read decompresses only the chunks that hold the stream. Every stream carries a CRC-32 of its
columns, checked on read, so flipped bytes in the events are caught (files written before the
checksums were added are read without that check). Files are written to a temporary name
and renamed, so a failure never leaves a half-written file behind.

``EventDataset`` checks the layout when it opens a file (format, version, sensor size, the four
columns and their dtypes and lengths, offsets that start at 0, never decrease and end at the
number of events, one label per stream) and every stream it reads (coordinates inside the sensor,
sorted timestamps): a damaged file gives an ``EventFileError`` naming the file and what is wrong,
never a raw h5py error or a silently wrong stream.
h5py is imported on first use (``pip install 'hybridai[events]'``).
"""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from hybridai.core.errors import (
    ConfigError,
    HybridAIError,
    MissingExtraError,
    ShapeError,
    bounded_int,
    invalid,
    positive_int,
)
from hybridai.events.arrays import EVENT_DTYPE, FIELDS, check_events, check_sensor_size

FORMAT = "hybridai-events"
VERSION = 1
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
INT64 = (int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max))
# what h5py raises for damaged files (bad signatures, heaps, object headers, checksums, sizes)
_H5_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError, IndexError, AttributeError)


class EventFileError(HybridAIError, ValueError):
    """An event file that is not a readable ``hybridai-events`` file: corrupt, truncated or inconsistent."""


def _int(argument: str, value: object) -> int:
    """``bounded_int`` that also takes numpy integers (labels and indices often are), returned as a Python int."""
    return bounded_int(argument, int(value) if isinstance(value, np.integer) else value)


def _label(argument: str, value: object) -> int:
    """A label stored as int64: a Python, numpy or 0-d torch integer in int64's range (not a bool, float or str)."""
    if torch.is_tensor(value) and value.ndim == 0 and not (value.is_floating_point() or value.is_complex()):
        value = value.item()
    if isinstance(value, np.integer):
        value = int(value)
    return bounded_int(argument, value, *INT64)


def _file_path(path: object, *, existing: bool) -> Path:
    """``path`` as a Path: an existing file (``existing``), or a new file inside an existing folder."""
    if not isinstance(path, str | os.PathLike) or (isinstance(path, str) and not path):
        raise invalid("path", path, "a file path (str or os.PathLike)")
    path = Path(path)
    if path.is_dir():
        raise invalid("path", str(path), "a file path; this is a folder")
    if existing and not path.is_file():
        raise invalid("path", str(path), "an existing HDF5 file written by hybridai.events.save_events")
    if not existing and not path.parent.is_dir():
        raise invalid("path", str(path), "a file path inside an existing folder")
    return path


def _h5py() -> Any:
    try:
        import h5py
    except ImportError:
        raise MissingExtraError("h5py", "events", "storing event sets in HDF5") from None
    return h5py


def _temporary_sibling(path: Path) -> Path:
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    return Path(name)


class EventWriter:
    """Append event streams to a new HDF5 file one at a time (chunked, optionally compressed).

    ``with EventWriter(path, sensor_size) as writer: writer.append(events, label)``. The file
    appears at ``path`` only when the block ends without an error.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        sensor_size: tuple[int, int, int],
        *,
        compression: str | None = None,
        chunk_events: int = 65536,
    ) -> None:
        self.path = _file_path(path, existing=False)
        self.sensor_size = check_sensor_size(sensor_size)
        if compression not in (None, "gzip", "lzf"):
            raise invalid("compression", compression, "None, 'gzip' or 'lzf'")
        positive_int("chunk_events", chunk_events)
        self.compression, self.chunk_events = compression, chunk_events
        self._file: Any = None
        self._temporary: Path | None = None
        self._offsets = [0]
        self._labels: list[int] = []
        self._checksums: list[int] = []

    def __enter__(self) -> EventWriter:
        h5py = _h5py()
        self._temporary = _temporary_sibling(self.path)
        self._file = h5py.File(self._temporary, "w")
        group = self._file.create_group("events")
        for name in FIELDS:
            group.create_dataset(
                name,
                shape=(0,),
                maxshape=(None,),
                dtype=EVENT_DTYPE[name],
                chunks=(self.chunk_events,),
                compression=self.compression,
            )
        return self

    def append(self, events: np.ndarray, label: int = -1) -> None:
        """Add one stream (validated against the sensor size) and its integer label."""
        if self._file is None:
            raise ConfigError("EventWriter.append was called outside its 'with' block; accepted: inside 'with'")
        events = check_events(events, self.sensor_size)
        label = _label("label", label)
        start, stop = self._offsets[-1], self._offsets[-1] + len(events)
        for name in FIELDS:
            dataset = self._file["events"][name]
            dataset.resize((stop,))
            dataset[start:stop] = events[name]
        self._offsets.append(stop)
        self._labels.append(label)
        self._checksums.append(checksum(events))

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        temporary = self._temporary
        assert temporary is not None, "__exit__ before __enter__"
        try:
            if kind is None:
                _finish(self._file, self._offsets, self._labels, self.sensor_size, self._checksums)
        finally:
            self._file.close()
            self._file = None
        if kind is None:
            os.replace(temporary, self.path)
        else:
            temporary.unlink(missing_ok=True)


def checksum(events: np.ndarray) -> int:
    """CRC-32 of a stream's columns (x, y, t, p in turn), as stored in a file's ``checksums``."""
    value = 0
    for name in FIELDS:
        data = np.ascontiguousarray(events[name]).view(np.uint8)
        value = zlib.crc32(data, value)  # type: ignore[arg-type]  # numpy's stubs give ndarray __buffer__ on 3.12+ only
    return value


def _finish(
    file: Any,
    offsets: npt.ArrayLike,
    labels: Sequence[int],
    sensor_size: tuple[int, int, int],
    checksums: Sequence[int],
) -> None:
    file.create_dataset("offsets", data=np.asarray(offsets, dtype=np.int64))
    file.create_dataset("labels", data=np.asarray(labels, dtype=np.int64))
    file.create_dataset("checksums", data=np.asarray(checksums, dtype=np.uint32))
    file.attrs["format"] = FORMAT
    file.attrs["version"] = VERSION
    file.attrs["sensor_size"] = np.asarray(sensor_size, dtype=np.int64)


def save_events(
    path: str | os.PathLike,
    streams: Iterable[np.ndarray],
    labels: Iterable[int] | None = None,
    *,
    sensor_size: tuple[int, int, int],
    compression: str | None = None,
) -> Path:
    """Write event streams (and integer labels, default -1) to one HDF5 file; returns its path.

    Uncompressed files are contiguous (memory-mappable); ``compression='gzip'`` or ``'lzf'``
    gives chunked columns.
    """
    size = check_sensor_size(sensor_size)
    path = _file_path(path, existing=False)
    if isinstance(streams, np.ndarray) and streams.dtype.names is not None:
        raise invalid("streams", "one event array", "a list of event arrays (wrap one stream in a list)", ShapeError)
    streams = [check_events(s, size, argument=f"streams[{i}]") for i, s in enumerate(streams)]
    labels = [-1] * len(streams) if labels is None else list(labels)
    if len(labels) != len(streams):
        raise invalid("labels", f"{len(labels)} labels", f"one label per stream ({len(streams)})", ShapeError)
    labels = [_label(f"labels[{i}]", label) for i, label in enumerate(labels)]
    if compression is not None:
        with EventWriter(path, sensor_size, compression=compression) as writer:
            for events, label in zip(streams, labels, strict=True):
                writer.append(events, label)
        return Path(path)
    h5py = _h5py()
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in streams], dtype=np.int64)])
    joined = np.concatenate(streams) if streams else np.empty(0, dtype=EVENT_DTYPE)
    temporary = _temporary_sibling(path)
    try:
        with h5py.File(temporary, "w") as file:
            group = file.create_group("events")
            for name in FIELDS:
                group.create_dataset(name, data=np.ascontiguousarray(joined[name]))
            _finish(file, offsets, labels, size, [checksum(stream) for stream in streams])
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


class EventDataset(torch.utils.data.Dataset):
    """Streams of an HDF5 event file as a torch Dataset of ``(events, label)``.

    Opens the file lazily in each process (DataLoader workers included) and reads only the
    rows of the requested stream: through numpy memory maps when the columns are contiguous,
    through h5py's chunked reads otherwise (``mmap=False`` forces h5py). ``transform`` (for
    example ``ToTimeSteps``) is applied to the event array.
    """

    def __init__(
        self, path: str | os.PathLike, transform: Callable[[np.ndarray], Any] | None = None, *, mmap: bool = True
    ) -> None:
        self.path = _file_path(path, existing=True)
        self.transform = transform
        self.mmap = bool(mmap)
        h5py = _h5py()
        try:
            with h5py.File(self.path, "r") as file:
                self.offsets, self.labels, self.sensor_size = self._check_layout(file)
        except HybridAIError:
            raise
        except _H5_ERRORS as exc:
            with open(self.path, "rb") as f:
                head = f.read(8)
            if head != HDF5_SIGNATURE:
                shown = "an empty file" if not head else f"a file that starts with {head!r}"
                raise self._damaged(f"it is not an HDF5 file: it is {shown}") from None
            raise self._damaged(f"h5py cannot read it ({type(exc).__name__}: {exc})") from None
        self._columns: dict[str, Any] | None = None
        self._file: Any = None
        self._pid: int | None = None

    def _damaged(self, what: str) -> EventFileError:
        return EventFileError(
            f"event file {str(self.path)!r} is damaged or not an event file: {what}; "
            "accepted: a file written by hybridai.events.save_events or EventWriter"
        )

    def _check_layout(self, file: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]]:
        """Offsets, labels and sensor size of an open file, after checking everything but the events."""
        form = file.attrs.get("format")
        form = form.decode() if isinstance(form, bytes) else form
        if form != FORMAT:
            raise invalid("path", str(self.path), f"an HDF5 file in the {FORMAT!r} format (save_events)")
        version = file.attrs.get("version")
        if version is None or np.ndim(version) != 0 or version != VERSION:
            shown = version.item() if isinstance(version, np.generic) else version
            raise self._damaged(f"format version {shown!r}, where this hybridai reads version {VERSION}")
        if "sensor_size" not in file.attrs:
            raise self._damaged("the 'sensor_size' attribute is missing")
        raw_size = np.asarray(file.attrs["sensor_size"])
        try:
            if raw_size.dtype.kind not in "iu":
                raise ConfigError("not integers")
            sensor_size = check_sensor_size(tuple(int(v) for v in raw_size.reshape(-1)))
        except HybridAIError:
            raise self._damaged(
                f"sensor_size={raw_size.tolist()!r}, where (width, height, polarities) with positive ints is expected"
            ) from None
        group = file.get("events")
        if group is None or not hasattr(group, "keys"):
            raise self._damaged("the 'events' group is missing")
        lengths = {}
        for name in FIELDS:
            column = group.get(name)
            if column is None or not hasattr(column, "dtype"):
                raise self._damaged(f"the column 'events/{name}' is missing")
            if column.ndim != 1 or column.dtype != EVENT_DTYPE[name]:
                raise self._damaged(
                    f"the column 'events/{name}' has dtype {column.dtype} and shape {column.shape}, "
                    f"where 1-D {EVENT_DTYPE[name]} is expected"
                )
            lengths[name] = column.shape[0]
        if len(set(lengths.values())) != 1:
            raise self._damaged(f"the columns have different lengths {lengths}")
        n_events = lengths["x"]
        arrays = {}
        for name in ("offsets", "labels"):
            dataset = file.get(name)
            if dataset is None or not hasattr(dataset, "dtype"):
                raise self._damaged(f"the dataset '{name}' is missing")
            if dataset.ndim != 1 or dataset.dtype.kind not in "iu":
                raise self._damaged(
                    f"'{name}' has dtype {dataset.dtype} and shape {dataset.shape}, where 1-D integers are expected"
                )
            arrays[name] = dataset[()].astype(np.int64)
        offsets, labels = arrays["offsets"], arrays["labels"]
        if len(offsets) != len(labels) + 1:
            raise self._damaged(
                f"{len(offsets)} offsets for {len(labels)} labels, where one more offset than labels is expected"
            )
        if offsets[0] != 0 or offsets[-1] != n_events:
            raise self._damaged(
                f"offsets run from {int(offsets[0])} to {int(offsets[-1])}, where 0 to the number of events "
                f"({n_events}) is expected"
            )
        steps = np.diff(offsets)
        if (steps < 0).any():
            i = int(np.argmax(steps < 0))
            raise self._damaged(f"offsets decrease at stream {i} ({int(offsets[i])} -> {int(offsets[i + 1])})")
        checksums = file.get("checksums")
        if checksums is None:  # written before checksums were stored
            self.checksums = None
        elif not hasattr(checksums, "dtype") or checksums.shape != labels.shape or checksums.dtype.kind not in "iu":
            raise self._damaged(
                f"'checksums' has shape {getattr(checksums, 'shape', None)}, where one integer per stream "
                f"({len(labels)}) is expected"
            )
        else:
            self.checksums = checksums[()].astype(np.int64)
        return offsets, labels, sensor_size

    @property
    def uses_mmap(self) -> bool:
        """Whether reads go through numpy memory maps (contiguous, uncompressed columns)."""
        return all(isinstance(c, np.memmap) for c in self._open().values())

    def _open(self) -> dict[str, Any]:
        if self._columns is not None and self._pid == os.getpid():
            return self._columns
        h5py = _h5py()
        try:
            self._file = h5py.File(self.path, "r")
            size = self.path.stat().st_size
            columns: dict[str, Any] = {}
            for name in FIELDS:
                dataset = self._file["events"][name]
                offset = dataset.id.get_offset() if self.mmap and dataset.chunks is None else None
                if offset is not None and dataset.shape[0] > 0:
                    if offset + dataset.dtype.itemsize * dataset.shape[0] > size:
                        raise self._damaged(f"the column 'events/{name}' runs past the end of the file (truncated)")
                    columns[name] = np.memmap(
                        self.path, dtype=dataset.dtype, mode="r", offset=offset, shape=dataset.shape
                    )
                else:
                    columns[name] = dataset
        except HybridAIError:
            self._close_file()
            raise
        except _H5_ERRORS as exc:
            self._close_file()
            raise self._damaged(f"h5py cannot open its columns ({type(exc).__name__}: {exc})") from None
        self._columns, self._pid = columns, os.getpid()
        return columns

    def __len__(self) -> int:
        return len(self.labels)

    def events(self, index: int) -> np.ndarray:
        """The event array of stream ``index`` (read from disk, not cached)."""
        index = _int("index", index)
        if not -len(self) <= index < len(self):
            raise invalid("index", index, f"an int in [0, {len(self)})")
        index %= len(self)
        start, stop = int(self.offsets[index]), int(self.offsets[index + 1])
        columns = self._open()
        events = np.empty(stop - start, dtype=EVENT_DTYPE)
        try:
            for name in FIELDS:
                events[name] = columns[name][start:stop]
        except _H5_ERRORS as exc:  # a failed checksum or decompression of a chunk
            self.close()
            raise self._damaged(f"stream {index} cannot be read ({type(exc).__name__}: {exc})") from None
        if self.checksums is not None and checksum(events) != self.checksums[index]:
            self.close()
            raise self._damaged(f"stream {index} fails its CRC-32 checksum (its bytes changed after it was written)")
        try:
            return check_events(events, self.sensor_size, argument="events")
        except HybridAIError as exc:
            self.close()
            raise self._damaged(f"stream {index} holds invalid events ({exc})") from None

    def __getitem__(self, index: int) -> tuple[Any, int]:
        events = self.events(index)
        label = int(self.labels[int(index) % len(self)])
        return (self.transform(events) if self.transform else events), label

    def close(self) -> None:
        """Close the file handle of this process (reopened on the next read)."""
        if self._file is not None and self._pid == os.getpid():
            self._file.close()
        self._file, self._columns, self._pid = None, None, None

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._columns, self._pid = None, None, None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_file=None, _columns=None, _pid=None)
        return state


def pad_collate(batch: Sequence[tuple[Any, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Collate ``(data, label)`` pairs of different lengths: returns ``(data, labels, lengths)``.

    Tensors ``[T_i, ...]`` become one time-major tensor ``[T_max, B, ...]`` padded with zeros
    (ready for spiking layers). Event arrays become ``int64 [B, N_max, 4]`` rows of
    ``(x, y, t, p)`` padded with -1. ``lengths`` holds each item's T_i or N_i.
    """
    if not batch:
        raise invalid("batch", "an empty batch", "at least one (data, label) pair")
    if any(not isinstance(item, tuple | list) or len(item) != 2 for item in batch):
        raise invalid("batch", type(batch[0]).__name__, "(data, label) pairs", ShapeError)
    items, labels = zip(*batch, strict=True)
    label_tensor = torch.tensor([_label(f"batch[{i}] label", label) for i, label in enumerate(labels)])
    lengths = torch.tensor([len(item) for item in items], dtype=torch.int64)
    if all(isinstance(item, np.ndarray) and item.dtype.names is not None for item in items):
        padded = torch.full((len(items), int(lengths.max()), 4), -1, dtype=torch.int64)
        for i, events in enumerate(items):
            columns = np.stack([events[name].astype(np.int64) for name in FIELDS], axis=1)
            padded[i, : len(events)] = torch.from_numpy(columns)
        return padded, label_tensor, lengths
    if all(torch.is_tensor(item) and item.ndim >= 1 for item in items):
        tails = {tuple(item.shape[1:]) for item in items}
        if len(tails) != 1:
            raise invalid(
                "batch",
                f"tensors with trailing shapes {sorted(tails)}",
                "tensors [T_i, ...] that differ only in T_i",
                ShapeError,
            )
        padded = torch.nn.utils.rnn.pad_sequence(list(items), batch_first=False)
        return padded, label_tensor, lengths
    kinds = sorted({type(item).__name__ for item in items})
    raise invalid("batch", f"items of types {kinds}", "all event arrays or all tensors [T_i, ...]", ShapeError)
