"""Torch devices from backend target strings ("cpu", "cuda", "cuda:N", "mps"), checked to exist here.

Errors name the backend as the user wrote it (``statevector:cuda``, ``torch:cuda:3``) and what is
accepted on this machine.
"""

from __future__ import annotations

import torch

from hybridai.core.errors import BackendNotFoundError, BackendUnavailableError, invalid


def resolve_torch_device(
    target: str | None, family: str = "torch", *, types: tuple[str, ...] = ("cpu", "cuda", "mps")
) -> torch.device:
    """The ``torch.device`` of backend ``family:target`` (``None`` is the CPU), checked to exist here."""
    spec = target or "cpu"
    name = f"{family}:{spec}"
    accepted = " or ".join(repr(f"{family}:{t}") for t in _spellings(types))
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError, TypeError):
        raise invalid("backend", name, accepted, BackendNotFoundError) from None
    if device.type not in types:
        raise invalid("backend", name, accepted, BackendNotFoundError)
    here = f"accepted here: '{family}:cpu'"
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise BackendUnavailableError(
                f"backend={name!r}: CUDA is not available on this machine (torch.cuda.is_available() is False); {here}"
            )
        if device.index is not None and device.index >= count:
            raise BackendUnavailableError(
                f"backend={name!r}: this machine has {count} CUDA device(s); accepted: "
                f"{family}:cuda:0 .. {family}:cuda:{count - 1}"
            )
    if device.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise BackendUnavailableError(f"backend={name!r}: MPS is not available on this machine; {here}")
    return device


def _spellings(types: tuple[str, ...]) -> list[str]:
    return [s for t in types for s in ((t, f"{t}:N") if t == "cuda" else (t,))]
