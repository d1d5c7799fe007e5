"""Checkpoints: state_dict plus plain metadata, written atomically, loaded with ``weights_only=True``.

``save`` writes to a temporary sibling named ``.<name>.hybridai-<pid>-<random>.tmp``, flushed and fsynced,
then moved over the target with ``os.replace`` and the folder fsynced (POSIX): a crash or a kill mid-write
leaves the previous checkpoint intact. While it writes, a process holds an exclusive ``flock`` on its
temporary file; the kernel drops the lock when the process dies, so the next ``save`` of the same target
(or a failed one) knows which temporary files are stale and removes them.
"""

from __future__ import annotations

import os
import pickle
import re
import secrets
import time
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from hybridai.core.errors import ConfigError, HybridAIError, ShapeError, invalid, optional_int

try:  # POSIX: advisory locks tell a live writer's temporary file from a dead one's
    import fcntl
except ImportError:  # pragma: no cover - Windows: an open file cannot be removed, which protects live writers
    fcntl = None  # type: ignore[assignment]  # the module's absence, checked before each use

FORMAT = "hybridai-checkpoint-1"
TEMPORARY_TAG = "hybridai"
_LEGACY_AGE_S = 600.0  # temporary files of earlier versions (no lock) count as stale after this many seconds
METADATA_ACCEPTED = (
    "str, int, float, bool, None, torch.Tensor, or lists, tuples and dicts of those (dict keys: str, int, float, "
    "bool or None)"
)
_SCALARS = (str, int, float, bool, type(None))


class CheckpointError(HybridAIError, RuntimeError):
    """A checkpoint file that cannot be read: corrupt, truncated or not a hybridai checkpoint."""


# -- arguments -------------------------------------------------------------------------------------


def _check_path(path: Any) -> Path:
    if not isinstance(path, str | os.PathLike) or (isinstance(path, str) and not path):
        raise invalid("path", path, "a file path (str or os.PathLike)")
    return Path(path)


def _check_model(model: Any) -> torch.nn.Module:
    if not isinstance(model, torch.nn.Module):
        raise invalid("model", _short(model), "a torch.nn.Module")
    return model


def _check_optimizer(optimizer: Any) -> torch.optim.Optimizer | None:
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise invalid("optimizer", _short(optimizer), "None or a torch.optim.Optimizer")
    return optimizer


class _Shown(str):
    """Text shown as is (not quoted) where ``invalid`` writes ``repr(value)``."""

    def __repr__(self) -> str:
        return str(self)


def _short(value: Any) -> Any:
    """``value`` itself when it is None, else its type and a shortened repr (objects can print at length)."""
    if value is None:
        return None
    text = repr(value)
    return _Shown(f"<{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}>")


def _check_metadata(name: str, value: Any) -> None:
    """Refuse what ``torch.load(weights_only=True)`` could not read back, naming where it sits."""
    # exact types: a subclass (np.float64 is a float, a namedtuple a tuple) pickles as a global that
    # weights_only refuses
    if type(value) in _SCALARS or torch.is_tensor(value):
        return
    if type(value) in (list, tuple):
        for i, item in enumerate(value):
            _check_metadata(f"{name}[{i}]", item)
        return
    if type(value) in (dict, OrderedDict):
        for key, item in value.items():
            if type(key) not in _SCALARS:
                raise ConfigError(
                    f"metadata {name} has a key {key!r} of type {type(key).__name__}, which hybridai.load "
                    f"(weights_only=True) cannot read back; accepted: {METADATA_ACCEPTED}"
                )
            _check_metadata(f"{name}[{key!r}]", item)
        return
    hint = " (convert numpy values with .item() or torch.as_tensor)" if type(value).__module__ == "numpy" else ""
    raise ConfigError(
        f"metadata {name}={_short(value)!r} has type {type(value).__module__}.{type(value).__qualname__}, which "
        f"hybridai.load (weights_only=True) cannot read back{hint}; accepted: {METADATA_ACCEPTED}"
    )


def _check_map_location(map_location: Any) -> None:
    if map_location is None or isinstance(map_location, dict) or callable(map_location):
        return
    if not isinstance(map_location, str | torch.device):
        raise invalid("map_location", map_location, "None, 'cpu', 'cuda[:N]', a torch.device, a dict or a callable")
    try:
        device = torch.device(map_location)
    except (RuntimeError, ValueError):
        raise invalid("map_location", map_location, "a torch device such as 'cpu' or 'cuda:0'") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (device.index is not None and device.index >= count):
            raise invalid(
                "map_location",
                map_location,
                f"a device this machine has ({count} CUDA device(s)); 'cpu' is always available",
                ConfigError,
            )


# -- temporary files ---------------------------------------------------------------------------------


def _temporary_pattern(path: Path) -> re.Pattern[str]:
    name = re.escape(path.name)
    return re.compile(rf"\.{name}\.(?:{TEMPORARY_TAG}-\d+-[0-9a-f]+|(?P<legacy>[A-Za-z0-9_]{{8}}))\.tmp")


def _lock(fd: int, blocking: bool) -> bool:
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove temporary files that killed ``save`` calls of ``path`` left behind; returns those removed.

    A temporary file is stale when no process holds its lock (the writer died). Those of earlier
    hybridai versions (``.<name>.XXXXXXXX.tmp``, written without a lock) count as stale after ten minutes.
    """
    path = Path(path)
    pattern = _temporary_pattern(path)
    removed: list[Path] = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        candidate = path.parent / name
        try:
            if match["legacy"] is not None and time.time() - candidate.stat().st_mtime < _LEGACY_AGE_S:
                continue
            if fcntl is None:  # pragma: no cover - Windows refuses to remove a file its writer still has open
                candidate.unlink()
                removed.append(candidate)
                continue
            fd = os.open(candidate, os.O_RDONLY)
        except OSError:  # removed by someone else meanwhile, or (Windows) still open by its writer
            continue
        try:
            if _lock(fd, blocking=False):
                candidate.unlink()
                removed.append(candidate)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _open_temporary(path: Path) -> tuple[Any, Path]:
    """A new, locked, recognisably named temporary sibling of ``path``, open for writing."""
    while True:
        temporary = path.parent / f".{path.name}.{TEMPORARY_TAG}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        _lock(fd, blocking=True)
        if os.fstat(fd).st_nlink > 0:  # a cleaner may have taken it for stale between creation and lock
            return os.fdopen(fd, "wb"), temporary
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    if os.name != "posix":  # pragma: no cover - Windows cannot open a folder for fsync
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- save and load -----------------------------------------------------------------------------------


def save(
    model: torch.nn.Module,
    path,
    optimizer: torch.optim.Optimizer | None = None,
    epoch: int | None = None,
    **metadata: Any,
) -> Path:
    """Write ``model`` (and ``optimizer``) state to ``path`` atomically.

    The parent folder must exist. The state goes to a locked temporary sibling, is flushed and fsynced,
    then moved over ``path`` with ``os.replace`` and the folder is fsynced: a crash or kill mid-write leaves
    the previous checkpoint intact, and the next save removes the stale temporary file. ``metadata``
    must be what ``load`` can read back: str, int, float, bool, None, tensors and lists, tuples and
    dicts of those; anything else is refused here, naming the key.
    """
    _check_model(model)
    path = _check_path(path)
    _check_optimizer(optimizer)
    epoch = optional_int("epoch", epoch, 0)
    for key, value in metadata.items():
        _check_metadata(repr(key), value)
    if path.is_dir():
        raise invalid("path", str(path), "a file path; this is a folder (add a file name, e.g. folder/model.pt)")
    if not path.parent.is_dir():
        folder = f"{str(path.parent)!r} does not exist or is a file"
        raise invalid("path", str(path), f"a file path inside an existing folder ({folder}; create it first)")
    payload = {
        "format": FORMAT,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "epoch": epoch,
        "metadata": dict(metadata),
    }
    remove_stale_temporaries(path)
    file, temporary = _open_temporary(path)
    try:
        with file:
            torch.save(payload, file)
            file.flush()
            os.fsync(file.fileno())
            if fcntl is not None:  # POSIX: rename while still locked, so no cleaner takes it for stale
                os.replace(temporary, path)
        if fcntl is None:  # pragma: no cover - Windows cannot rename a file that is open
            os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        remove_stale_temporaries(path)
        raise
    _fsync_folder(path.parent)
    return path


def _read(path: Path, map_location: Any) -> Any:
    """``torch.load(weights_only=True)``, with errors that say what the file really is."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
        if found is None:
            raise _unreadable(path, exc) from None
        raise CheckpointError(
            f"checkpoint {str(path)!r} is not a hybridai checkpoint: it holds pickled Python objects "
            f"({found.group(1)}), for example a whole module saved with torch.save(model), "
            "which hybridai.load does not unpickle (weights_only=True, so that loading a file cannot run code); "
            "accepted: a file written by hybridai.save(model, path) (or torch.save(model.state_dict(), path) loaded "
            "with model.load_state_dict)"
        ) from None
    except RuntimeError as exc:
        if "CUDA" in str(exc) and ("deserialize" in str(exc) or "available" in str(exc)):
            raise CheckpointError(
                f"checkpoint {str(path)!r} holds CUDA tensors and this machine has no usable GPU; "
                "pass map_location='cpu' to load it onto the CPU"
            ) from None
        raise _unreadable(path, exc) from None
    except (EOFError, zipfile.BadZipFile, ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise _unreadable(path, exc) from None
    except OSError as exc:
        raise CheckpointError(f"checkpoint {str(path)!r} cannot be read ({exc.strerror or exc})") from None


def _unreadable(path: Path, exc: BaseException) -> CheckpointError:
    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(b"PK\x03\x04"):
        return CheckpointError(
            f"checkpoint {str(path)!r} is corrupt or truncated: it starts as a torch zip archive but cannot be read "
            f"({type(exc).__name__}: {str(exc)[:200]})"
        )
    what = "an empty file" if not head else f"a file that starts with {head!r}"
    return CheckpointError(
        f"checkpoint {str(path)!r} is corrupt or truncated, or not a checkpoint at all: it is {what}, where a torch "
        "checkpoint is a zip archive (starts with b'PK\\x03\\x04'); accepted: a file written by hybridai.save"
    )


def _check_payload(path: Path, payload: Any) -> None:
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {str(path)!r} is not a hybridai checkpoint (written by hybridai.save)")
    missing = [key for key in ("model", "optimizer", "epoch", "metadata") if key not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {str(path)!r} is damaged: it lacks the entries {missing}")
    if not isinstance(payload["model"], Mapping):
        raise CheckpointError(
            f"checkpoint {str(path)!r} is damaged: its model state is a {type(payload['model']).__name__}, not a dict"
        )


def _check_model_state(path: Path, model: torch.nn.Module, state: Mapping[str, Any]) -> None:
    """What ``load_state_dict`` would refuse, said with the parameter names and both shapes."""
    expected = model.state_dict()
    name = type(model).__name__
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    if missing or unexpected:
        raise ShapeError(
            f"model={name} does not match checkpoint {str(path)!r}: "
            + "; ".join(
                part
                for part in (
                    f"the model has {_names(missing)} that the checkpoint lacks" if missing else "",
                    f"the checkpoint has {_names(unexpected)} that the model lacks" if unexpected else "",
                )
                if part
            )
            + "; accepted: a model built like the one that was saved"
        )
    for key, tensor in expected.items():
        saved = state[key]
        if not torch.is_tensor(tensor) or torch.nn.parameter.is_lazy(tensor):
            continue
        if not torch.is_tensor(saved):
            raise ShapeError(
                f"checkpoint {str(path)!r} holds a {type(saved).__name__} for {key!r}, where model={name} has a tensor"
            )
        if saved.shape != tensor.shape:
            raise ShapeError(
                f"model={name} does not match checkpoint {str(path)!r}: parameter {key!r} has shape "
                f"{tuple(saved.shape)} in the checkpoint and {tuple(tensor.shape)} in the model; "
                "accepted: a model built like the one that was saved"
            )


def _names(keys: list[str]) -> str:
    shown = ", ".join(repr(k) for k in keys[:5])
    return f"{len(keys)} entr{'y' if len(keys) == 1 else 'ies'} ({shown}{', ...' if len(keys) > 5 else ''})"


def _check_optimizer_state(path: Path, optimizer: torch.optim.Optimizer, state: Any) -> None:
    name = type(optimizer).__name__
    if state is None:
        raise CheckpointError(
            f"checkpoint {str(path)!r} holds no optimizer state (saved without optimizer=); "
            "accepted: optimizer=None for this file"
        )
    groups = state.get("param_groups") if isinstance(state, Mapping) else None
    if not isinstance(groups, list) or not all(isinstance(g, Mapping) and "params" in g for g in groups):
        raise CheckpointError(f"checkpoint {str(path)!r} is damaged: its optimizer state has no valid param_groups")
    saved = [len(g["params"]) for g in groups]
    current = [len(g["params"]) for g in optimizer.param_groups]
    if saved != current:
        raise ShapeError(
            f"optimizer={name} does not match checkpoint {str(path)!r}: the checkpoint has parameter groups of sizes "
            f"{saved}, the optimizer {current}; accepted: an optimizer over the same parameters as the saved one"
        )


def load(path, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None, map_location=None) -> dict:
    """Restore ``model`` (and ``optimizer``) from ``path``; return ``{"epoch": ..., "metadata": ...}``.

    Everything is checked before anything is restored, so a refused file leaves ``model`` and
    ``optimizer`` unchanged. Raises a HybridAIError naming the path when the file is missing, a folder,
    corrupt, truncated or not a hybridai checkpoint, and naming the parameter and both shapes when
    the model does not match.
    """
    path = _check_path(path)
    _check_model(model)
    _check_optimizer(optimizer)
    _check_map_location(map_location)
    if path.is_dir():
        raise CheckpointError(f"checkpoint {str(path)!r} is a folder; accepted: the path of a checkpoint file")
    if not path.is_file():
        where = "" if path.parent.is_dir() else f" (its folder {str(path.parent)!r} does not exist either)"
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist{where}")
    payload = _read(path, map_location)
    _check_payload(path, payload)
    _check_model_state(path, model, payload["model"])
    if optimizer is not None:
        _check_optimizer_state(path, optimizer, payload["optimizer"])
    model.load_state_dict(payload["model"])
    if optimizer is not None:
        optimizer.load_state_dict(payload["optimizer"])
    return {"epoch": payload["epoch"], "metadata": payload["metadata"]}
