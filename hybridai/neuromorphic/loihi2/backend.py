"""Backend family ``loihi2``: trained sigma-delta networks on an emulated Loihi 2 chip.

``compile(model)`` quantizes an ``nn.Sequential`` of a SigmaDelta input layer, ``[nn.Linear(bias=False) or
TimeDistributed(nn.Conv2d(bias=False)), SigmaDelta]`` pairs and an optional read-out Linear (and decoder) to
Loihi 2 registers (``hybridai.neuromorphic.loihi2.plan``) and returns a ``Loihi2Network`` that runs on
hybridai's bit-exact integer emulator of Lava's fixed-point rules, batched in torch.

Target: none (the emulator); a board would come as a plugin family. Options: ``device`` (the torch device
the emulator runs on, default ``"cpu"``). Energy: Intel has published no per-operation energy figures for
Loihi 2, so ``hybridai.deploy(..., backend="loihi2")`` estimates energy only from constants the user gives
(``energy={...}``) and says so otherwise.
"""

from __future__ import annotations

from typing import Any

from hybridai.core.capabilities import ChipCapabilities
from hybridai.core.contracts import ChipCompiler

OPTIONS = ("device",)


class Loihi2Backend(ChipCompiler):
    """Loihi 2 (second generation) graded Dense and sigma-delta neurons, emulated bit for bit in torch."""

    def __init__(self, target: str | None = None, *, device: Any = "cpu", **options: Any) -> None:
        from hybridai.neuromorphic.loihi.backend import check_emulator
        from hybridai.neuromorphic.loihi.plan import check_device

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
            extra={
                "input": "the float model's input [T, B, F] or [T, B, C, H, W]; the host sends integer deltas",
                "messages": "graded: one event per non-zero integer payload",
                "latency_steps_per_layer": 1,
            },
        )

    def compile(self, model: Any, *, calibration: Any = None) -> Any:
        """Quantize ``model`` and return a ``Loihi2Network`` (a ``CompiledNetwork``); ``calibration`` is not needed
        (the grids are the model's own) and is ignored."""
        from hybridai.neuromorphic.loihi2.plan import compile_network

        return compile_network(model, device=self.device)
