"""Torch devices from target strings ("cpu", "cuda", "cuda:N", "mps"), checked to exist here."""

from __future__ import annotations

import torch

from hybridai.core.errors import BackendUnavailableError, invalid


def resolve_torch_device(target: str | None, argument: str = "backend") -> torch.device:
    """The ``torch.device`` for a target string, checked to exist on this machine."""
    spec = target or "cpu"
    accepted = "'cpu', 'cuda', 'cuda:N' or 'mps'"
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError):
        raise invalid(argument, f"torch:{spec}", accepted) from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise BackendUnavailableError(
                f"{argument}='torch:{spec}': CUDA is not available on this machine "
                "(torch.cuda.is_available() is False); accepted here: 'torch:cpu'"
            )
        count = torch.cuda.device_count()
        if device.index is not None and device.index >= count:
            raise BackendUnavailableError(
                f"{argument}='torch:{spec}': this machine has {count} CUDA device(s); "
                f"accepted: cuda:0 .. cuda:{count - 1}"
            )
    elif device.type == "mps":
        if not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
            raise BackendUnavailableError(
                f"{argument}='torch:{spec}': MPS is not available on this machine; accepted here: 'torch:cpu'"
            )
    elif device.type != "cpu":
        raise invalid(argument, f"torch:{spec}", accepted)
    return device
