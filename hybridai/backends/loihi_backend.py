"""Backend family ``loihi``: trained spiking networks on an emulated Loihi 1 chip.

``compile(model)`` quantizes an ``nn.Sequential`` of ``[nn.Linear, LIF | CUBA]`` pairs (reset to zero,
optionally ending in a decoder) to Loihi 1 registers (``hybridai.neuromorphic.loihi.quantize``) and
returns a ``QuantizedNetwork`` that runs on hybridai's bit-exact integer emulator, batched in torch.

Target: none (the emulator). A real board (through NxSDK or Lava on Intel's cloud) would come as a
plugin family with its own target; nothing here talks to hardware.

Options: ``quirks`` (``"nengo"``, default, nengo-loihi's emulator rules; or ``"lava"``, Lava 0.10's
bit-accurate models) and ``device`` (torch device the emulator runs on, default ``"cpu"``).

Capabilities: not differentiable (train with ``loihi.fake_quantize`` instead); ``exact=False``
because outputs are those of the quantized network, not the float model's (deterministic and
noise-free, and bit-exact to the chip's integer arithmetic: ``extra["bit_exact_emulation"]``).
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import BackendUnavailableError, invalid
from .base import Capabilities, NeuromorphicBackend
from .registry import register

OPTIONS = ("quirks", "device")


def _device(spec: Any) -> torch.device:
    accepted = "a torch device string: 'cpu', 'cuda' or 'cuda:N'"
    if not isinstance(spec, str | torch.device):
        raise invalid("device", spec, accepted)
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError):
        raise invalid("device", spec, accepted) from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise BackendUnavailableError(
                f"device={spec!r}: CUDA is not available on this machine (torch.cuda.is_available() is False); "
                "accepted here: 'cpu'"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise BackendUnavailableError(
                f"device={spec!r}: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    elif device.type != "cpu":
        raise invalid("device", spec, accepted)
    return device


@register("loihi")
class LoihiBackend(NeuromorphicBackend):
    """Loihi 1 (first generation) compartments emulated bit for bit in torch integers."""

    def __init__(
        self, target: str | None = None, *, quirks: str = "nengo", device: Any = "cpu", **options: Any
    ) -> None:
        from ..neuromorphic.loihi import check_quirks

        if target is not None:
            raise invalid(
                "backend", f"loihi:{target}", "'loihi' (the emulator; a real board would come as a plugin family)"
            )
        if options:
            raise invalid("options", options, f"only {OPTIONS}")
        self.quirks = check_quirks(quirks)
        self.device = _device(device)
        given = {
            k: v
            for k, v in (("quirks", quirks), ("device", device))
            if (k, v) not in (("quirks", "nengo"), ("device", "cpu"))
        }
        super().__init__(None, **given)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            differentiable=False,
            exact=False,
            devices=(str(self.device),),
            extra={
                "bit_exact_emulation": True,
                "quirks": self.quirks,
                "input": "non-negative integer spike counts [T, B, F]",
                "latency_steps_per_layer": 1,
            },
        )

    def compile(self, model: Any, *, calibration: Any = None) -> Any:
        """Quantize ``model`` and return a ``QuantizedNetwork`` (a ``CompiledNetwork``) on the emulator."""
        from ..neuromorphic.loihi import quantize

        return quantize(model, quirks=self.quirks, calibration=calibration, device=str(self.device))
