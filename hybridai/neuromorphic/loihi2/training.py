"""Quantization-aware training for Loihi 2: the float model with the weights the chip will hold.

``fake_quantize(model)`` wraps a sigma-delta ``nn.Sequential`` (what the ``loihi2`` backend compiles) in a
module whose forward pass runs the model in float64 with every Linear's and Conv2d's weight replaced by the value its
8-bit mantissa and exponent represent (``plan.chip_weight``), re-derived from the float weights on every call.
The SigmaDelta layers already compute on the chip's grid, so this forward equals the chip message for
message (``Loihi2Network.messages``; read the float messages with ``record_messages()``). Gradients pass
straight through the weight rounding to the float weights (trained in place).
"""

from __future__ import annotations

import torch
from torch import nn

from hybridai.neuromorphic.loihi2.plan import chip_weight, parse, plan_stages


class FakeQuantized(nn.Module):
    """``model`` computing what the Loihi 2 emulator computes, trainable (see the module docstring)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        parse(model)
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        stages, decoder = parse(self.model)
        plans = plan_stages(stages)
        out = x.double()
        for i, (stage, registers) in enumerate(zip(stages, plans, strict=True)):
            synapse = stage.synapse
            if synapse is not None:
                weight = synapse.weight.double()
                exact = chip_weight(registers, plans[i - 1].grid).to(weight.device)
                weight = weight + (exact - weight).detach()
                if registers.conv is not None:  # per step, as TimeDistributed(Conv2d)
                    out = registers.conv(out.flatten(0, 1), weight).unflatten(0, out.shape[:2])
                else:  # feature maps reach a Linear flattened, as TimeDistributed(Flatten())
                    out = nn.functional.linear(out.flatten(2) if out.ndim > 3 else out, weight)
            if not stage.readout:
                out = stage.node.module(out)
        return decoder(out) if decoder is not None else out


def fake_quantize(model: nn.Module) -> FakeQuantized:
    """``FakeQuantized(model)``: train what the Loihi 2 chip will compute."""
    return FakeQuantized(model)
