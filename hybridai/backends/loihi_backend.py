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

from ..errors import invalid
from .base import Capabilities, NeuromorphicBackend
from .registry import register

OPTIONS = ("quirks", "device")


@register("loihi")
class LoihiBackend(NeuromorphicBackend):
    """Loihi 1 (first generation) compartments emulated bit for bit in torch integers."""

    def __init__(
        self, target: str | None = None, *, quirks: str = "nengo", device: Any = "cpu", **options: Any
    ) -> None:
        from ..neuromorphic.loihi import check_quirks
        from ..neuromorphic.loihi_quantize import check_device

        if target is not None:
            raise invalid(
                "backend", f"loihi:{target}", "'loihi' (the emulator; a real board would come as a plugin family)"
            )
        if options:
            raise invalid("options", options, f"only {OPTIONS}")
        self.quirks = check_quirks(quirks)
        self.device = check_device(device)
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

        return quantize(model, quirks=self.quirks, calibration=calibration, device=self.device)
