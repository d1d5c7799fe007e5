"""Backend family ``torch``: classical (and spiking) layers on a torch device.

Targets: ``cpu`` (default), ``cuda``, ``cuda:N``, ``mps``. A target whose device is
missing on this machine is a clear error, not a silent fall-back to the CPU.
"""

from __future__ import annotations

from typing import Any

import torch

from hybridai.core.capabilities import PlacementCapabilities
from hybridai.core.contracts import Placement
from hybridai.core.devices import resolve_torch_device
from hybridai.core.errors import invalid


class TorchBackend(Placement):
    """Plain PyTorch on a CPU, CUDA or MPS device."""

    domains = ("classical", "spiking")

    def __init__(self, target: str | None = None, **options: Any) -> None:
        if options:
            raise invalid("options", sorted(options), "no options (the torch backend takes only a target)")
        self.device = resolve_torch_device(target)
        super().__init__(str(self.device) if target else None)

    @property
    def capabilities(self) -> PlacementCapabilities:
        return PlacementCapabilities(differentiable=True, exact=True, devices=(str(self.device),))

    def place(self, module: torch.nn.Module) -> torch.nn.Module:
        if not isinstance(module, torch.nn.Module):
            raise invalid("module", type(module).__name__, "a torch.nn.Module")
        return module.to(self.device)
