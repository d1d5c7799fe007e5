"""Checkpoints: state_dict plus plain metadata, written atomically, loaded with ``weights_only=True``."""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import torch

from hybridai.core.errors import HybridAIError


class CheckpointError(HybridAIError, RuntimeError):
    """A checkpoint file that cannot be read: corrupt, truncated or not a hybridai checkpoint."""


def save(
    model: torch.nn.Module,
    path,
    optimizer: torch.optim.Optimizer | None = None,
    epoch: int | None = None,
    **metadata: Any,
) -> Path:
    """Write ``model`` (and ``optimizer``) state to ``path`` atomically.

    The file is written to a temporary file in the same folder, flushed and fsynced, then moved over
    ``path`` with ``os.replace``: a crash mid-write leaves the previous checkpoint intact.
    ``metadata`` must be plain data (numbers, strings, lists, dicts, tensors).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": "hybridai-checkpoint-1",
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "epoch": epoch,
        "metadata": dict(metadata),
    }
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load(path, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None, map_location=None) -> dict:
    """Restore ``model`` (and ``optimizer``) from ``path``; return ``{"epoch": ..., "metadata": ...}``.

    Raises CheckpointError naming the path when the file is missing, corrupt or truncated.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, EOFError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError, OSError) as exc:
        raise CheckpointError(
            f"checkpoint {str(path)!r} is corrupt or truncated and cannot be loaded ({type(exc).__name__}: {exc})"
        ) from exc
    if not isinstance(payload, dict) or payload.get("format") != "hybridai-checkpoint-1":
        raise CheckpointError(f"checkpoint {str(path)!r} is not a hybridai checkpoint (written by hybridai.save)")
    model.load_state_dict(payload["model"])
    if optimizer is not None:
        if payload["optimizer"] is None:
            raise CheckpointError(f"checkpoint {str(path)!r} holds no optimizer state")
        optimizer.load_state_dict(payload["optimizer"])
    return {"epoch": payload["epoch"], "metadata": payload["metadata"]}
