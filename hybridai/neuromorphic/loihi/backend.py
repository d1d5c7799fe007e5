"""Backend family ``loihi``: trained spiking networks on an emulated Loihi 1 chip.

Every chip package has the same shape: ``plan`` (trained model -> the chip's registers), ``network`` (the
runner, a ``CompiledNetwork``), ``backend`` (this module: the verb ``compile`` and the registry class).

``compile(model)`` quantizes an ``nn.Sequential`` of ``[nn.Linear, LIF | CUBA]`` pairs (reset to zero,
optionally ending in a decoder) to Loihi 1 registers (``plan.plan``) and returns a ``LoihiNetwork``
(``network``) that runs on hybridai's bit-exact integer emulator, batched in torch. ``LoihiBackend.compile``
calls it with the backend's options.

Target: none (the emulator). A real board (through NxSDK or Lava on Intel's cloud) would come as a
plugin family with its own target; nothing here talks to hardware.

Options: ``quirks`` (``"nengo"``, default, nengo-loihi's emulator rules; or ``"lava"``, Lava 0.10's
bit-accurate models) and ``device`` (torch device the emulator runs on, default ``"cpu"``).

Capabilities: ``bit_exact=True`` (the chip's integer arithmetic, bit for bit), no ``hardware`` (emulated);
outputs are those of the quantized network, not the float model's, and carry no gradient (train what the
chip computes with ``loihi.fake_quantize``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hybridai.core.capabilities import ChipCapabilities
from hybridai.core.contracts import ChipCompiler
from hybridai.neuromorphic.fixed_point import check_device, check_emulator

if TYPE_CHECKING:
    import torch

    from hybridai.neuromorphic.loihi.network import LoihiNetwork

OPTIONS = ("quirks", "device")


def compile(  # noqa: A001  (the chip compiler's verb)
    model: Any, *, calibration: Any = None, quirks: str = "nengo", device: str | torch.device = "cpu"
) -> LoihiNetwork:
    """Quantize ``model`` to Loihi 1 registers (``plan.plan``) and return the runnable ``LoihiNetwork``.

    ``calibration``: optional input spike counts ``[T, B, F]``; its largest count bounds the first
    layer's worst-case input when choosing the weight exponent (binary spikes are assumed without it).
    ``quirks``: ``"nengo"`` or ``"lava"``; ``device``: where the emulator runs (``"cpu"``, ``"cuda"``, ``"cuda:N"``).
    """
    from hybridai.neuromorphic.loihi.network import LoihiNetwork
    from hybridai.neuromorphic.loihi.plan import plan

    planned = plan(model, quirks=quirks, calibration=calibration)
    return LoihiNetwork(planned.layers, planned.decoder, quirks, check_device(device), planned.dtype)


class LoihiBackend(ChipCompiler):
    """Loihi 1 (first generation) compartments emulated bit for bit in torch integers."""

    def __init__(
        self, target: str | None = None, *, quirks: str = "nengo", device: Any = "cpu", **options: Any
    ) -> None:
        from hybridai.neuromorphic.loihi.compartments import check_quirks

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
            event_word="spikes",
            extra={
                "quirks": self.quirks,
                "input": "non-negative integer spike counts [T, B, F]",
                "latency_steps_per_layer": 1,
            },
        )

    def compile(self, model: Any, *, calibration: Any = None) -> LoihiNetwork:
        """``loihi.compile(model, calibration=..., quirks=..., device=...)`` with this backend's options."""
        return compile(model, calibration=calibration, quirks=self.quirks, device=self.device)
