"""Backend family ``torch``: classical (and spiking) layers on a torch device.

Targets: ``cpu`` (default), ``cuda``, ``cuda:N``, ``mps``. A target whose device is
missing on this machine is a clear error, not a silent fall-back to the CPU.
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import BackendUnavailableError, invalid
from .base import Capabilities, ClassicalBackend
from .registry import register


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


@register("torch")
class TorchBackend(ClassicalBackend):
    """Plain PyTorch on a CPU, CUDA or MPS device."""

    domains = ("classical", "spiking")

    def __init__(self, target: str | None = None, **options: Any) -> None:
        if options:
            raise invalid("options", options, "no options (the torch backend takes only a target)")
        self.device = resolve_torch_device(target)
        super().__init__(str(self.device) if target else None)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(differentiable=True, exact=True, devices=(str(self.device),))

    def place(self, module: torch.nn.Module) -> torch.nn.Module:
        if not isinstance(module, torch.nn.Module):
            raise invalid("module", type(module).__name__, "a torch.nn.Module")
        return module.to(self.device)
