"""Backend family ``loihi``: trained spiking networks on an emulated Loihi 1 chip.

``compile(model)`` quantizes an ``nn.Sequential`` of ``[nn.Linear, LIF | CUBA]`` pairs (reset to zero,
optionally ending in a decoder) to Loihi 1 registers (``hybridai.neuromorphic.loihi.quantize``) and
returns a ``LoihiNetwork`` that runs on hybridai's bit-exact integer emulator, batched in torch.

Target: none (the emulator). A real board (through NxSDK or Lava on Intel's cloud) would come as a
plugin family with its own target; nothing here talks to hardware.

Options: ``quirks`` (``"nengo"``, default, nengo-loihi's emulator rules; or ``"lava"``, Lava 0.10's
bit-accurate models) and ``device`` (torch device the emulator runs on, default ``"cpu"``).

Capabilities: ``bit_exact=True`` (the chip's integer arithmetic, bit for bit), no ``hardware`` (emulated);
outputs are those of the quantized network, not the float model's, and carry no gradient (train what the
chip computes with ``loihi.fake_quantize``).
"""

from __future__ import annotations

from typing import Any

from hybridai.core.capabilities import ChipCapabilities
from hybridai.core.contracts import ChipCompiler
from hybridai.core.errors import invalid

OPTIONS = ("quirks", "device")


def check_emulator(family: str, target: str | None, options: dict[str, Any], accepted: tuple[str, ...]) -> None:
    """Refuse a target (an emulator family has none) and options outside ``accepted``."""
    if target is not None:
        raise invalid(
            "backend", f"{family}:{target}", f"'{family}' (the emulator; a real board would come as a plugin family)"
        )
    if options:
        raise invalid("options", sorted(options), f"only {accepted}")


class LoihiBackend(ChipCompiler):
    """Loihi 1 (first generation) compartments emulated bit for bit in torch integers."""

    def __init__(
        self, target: str | None = None, *, quirks: str = "nengo", device: Any = "cpu", **options: Any
    ) -> None:
        from hybridai.neuromorphic.loihi.compartments import check_quirks
        from hybridai.neuromorphic.loihi.plan import check_device

        check_emulator("loihi", target, options, OPTIONS)
        self.quirks = check_quirks(quirks)
        self.device = check_device(device)
        given = {
            k: v
            for k, v in (("quirks", quirks), ("device", device))
            if (k, v) not in (("quirks", "nengo"), ("device", "cpu"))
        }
        super().__init__(None, **given)

    @property
    def capabilities(self) -> ChipCapabilities:
        from hybridai.neuromorphic.loihi.plan import ACCEPTS, SUPPORTED

        return ChipCapabilities(
            bit_exact=True,
            devices=(str(self.device),),
            layers=ACCEPTS,
            takes=SUPPORTED,
            extra={
                "quirks": self.quirks,
                "input": "non-negative integer spike counts [T, B, F]",
                "latency_steps_per_layer": 1,
            },
        )

    def compile(self, model: Any, *, calibration: Any = None) -> Any:
        """Quantize ``model`` and return a ``LoihiNetwork`` (a ``CompiledNetwork``) on the emulator."""
        from hybridai.neuromorphic.loihi.plan import quantize

        return quantize(model, quirks=self.quirks, calibration=calibration, device=self.device)
