"""Backend family ``loihi2``: trained sigma-delta networks on an emulated Loihi 2 chip.

Every chip package has the same shape: ``plan`` (trained model -> the chip's registers), ``network`` (the
runner, a ``CompiledNetwork``), ``backend`` (this module: the verb ``compile`` and the registry class).

``compile(model)`` quantizes an ``nn.Sequential`` of a SigmaDelta input layer, ``[nn.Linear(bias=False) or
TimeDistributed(nn.Conv2d(bias=False)), SigmaDelta]`` pairs and an optional read-out Linear (and decoder) to
Loihi 2 registers (``plan.plan``) and returns a ``Loihi2Network`` (``network``) that runs on hybridai's
bit-exact integer emulator of Lava's fixed-point rules, batched in torch. ``Loihi2Backend.compile`` calls it
with the backend's options.

Target: none (the emulator); a board would come as a plugin family. Options: ``device`` (the torch device
the emulator runs on, default ``"cpu"``). Energy: Intel has published no per-operation energy figures for
Loihi 2, so ``hybridai.deploy(..., backend="loihi2")`` estimates energy only from constants the user gives
(``energy={...}``) and says so otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hybridai.core.capabilities import ChipCapabilities
from hybridai.core.contracts import ChipCompiler
from hybridai.core.errors import described, invalid
from hybridai.neuromorphic.fixed_point import check_device, check_emulator

if TYPE_CHECKING:
    import torch

    from hybridai.neuromorphic.loihi2.network import Loihi2Network

OPTIONS = ("device",)


def compile(  # noqa: A001  (the chip compiler's verb)
    model: Any, *, calibration: Any = None, device: str | torch.device = "cpu"
) -> Loihi2Network:
    """Quantize ``model`` to Loihi 2 registers (``plan.plan``) and return the runnable ``Loihi2Network`` on
    ``device`` (``"cpu"``, or a CUDA device this machine has; anything else is refused by name).
    ``calibration``: None; the grids are the model's own, so a calibration batch is refused, not ignored."""
    from hybridai.neuromorphic.loihi2.network import Loihi2Network
    from hybridai.neuromorphic.loihi2.plan import plan

    if calibration is not None:
        raise invalid("calibration", described(calibration), "None on loihi2 (it quantizes from the model alone)")
    device = check_device(device)
    planned = plan(model)
    return Loihi2Network(planned.stages, planned.decoder, planned.width, device)


class Loihi2Backend(ChipCompiler):
    """Loihi 2 (second generation) graded Dense and sigma-delta neurons, emulated bit for bit in torch."""

    def __init__(self, target: str | None = None, *, device: Any = "cpu", **options: Any) -> None:
        check_emulator("loihi2", target, options, OPTIONS)
        self.device = check_device(device)
        super().__init__(None, **({"device": device} if str(self.device) != "cpu" else {}))

    @property
    def capabilities(self) -> ChipCapabilities:
        from hybridai.neuromorphic.loihi2.plan import ACCEPTS, SUPPORTED

        return ChipCapabilities(
            bit_exact=True,
            devices=(str(self.device),),
            layers=ACCEPTS,
            takes=SUPPORTED,
            event_word="graded messages",
            takes_calibration=False,
            extra={
                "input": "the float model's input [T, B, F] or [T, B, C, H, W]; the host sends integer deltas",
                "messages": "graded: one event per non-zero integer payload",
                "latency_steps_per_layer": 1,
            },
        )

    def compile(self, model: Any, *, calibration: Any = None) -> Loihi2Network:
        """``loihi2.compile(model, device=...)`` with this backend's device (a calibration batch is refused)."""
        return compile(model, calibration=calibration, device=self.device)
