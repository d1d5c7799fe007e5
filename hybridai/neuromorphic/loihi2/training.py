"""Quantization-aware training for Loihi 2: the float model with the weights the chip will hold.

``fake_quantize(model)`` wraps a sigma-delta ``nn.Sequential`` (what the ``loihi2`` backend compiles) in a
module whose forward pass runs the model in float64 with every Linear's and Conv2d's weight replaced by the value its
8-bit mantissa and exponent represent (``plan.chip_weight``), re-derived from the float weights on every call.
The SigmaDelta layers already compute on the chip's grid, so this forward equals the chip message for
message (``Loihi2Network.messages``; read the float messages with ``record_messages()``). Gradients pass
straight through the weight rounding to the float weights (trained in place).

A hybrid model (the chip part, then host layers: ``SigmaDelta ... -> RateDecoder -> Linear -> QuantumLayer -> ...``)
is cut where ``hybridai.deploy(model, chip="loihi2")`` cuts it (``neuromorphic.segments.chip_front``): the chip part is
fake-quantized, the layers after it run as they are. The chip part computes in float64 and hands over in the model's
dtype (its parameters'), as the emulator hands its output over in the input's, so a float32 model trains in float32.
"""

from __future__ import annotations

import torch
from torch import nn

from hybridai.neuromorphic.loihi2.plan import chip_weight, parse, plan_stages


class FakeQuantized(nn.Module):
    """``model`` computing what the Loihi 2 emulator computes, trainable (see the module docstring).

    Args:
        model: the chip part (what ``loihi2.compile`` accepts); its parameters are shared (trained in place).
        rest: the layers after the chip part (a hybrid model's host layers), run as they are; None: none.
    """

    def __init__(self, model: nn.Module, rest: nn.Sequential | None = None) -> None:
        super().__init__()
        parse(model)
        self.model = model
        self.rest = rest

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        stages, decoder = parse(self.model)
        plans = plan_stages(stages)
        dtype = model_dtype(self.model, x)
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
        out = out.to(dtype)  # the emulator's hand-over: its float64 output cast before the decoder
        out = decoder(out) if decoder is not None else out
        return self.rest(out) if self.rest is not None else out


def model_dtype(model: nn.Module, x: torch.Tensor) -> torch.dtype:
    """The dtype ``model`` computes in: its first floating parameter's; else ``x``'s when floating; else float64."""
    param = next((p for p in model.parameters() if p.is_floating_point()), None)
    if param is not None:
        return param.dtype
    return x.dtype if torch.is_tensor(x) and x.is_floating_point() else torch.float64


def fake_quantize(model: nn.Module) -> FakeQuantized:
    """Train what Loihi 2 will compute: ``model`` (a chip model, or a hybrid ``nn.Sequential`` whose leading chip
    part, cut as ``hybridai.deploy(model, chip="loihi2")`` cuts it, is followed by host layers) with its chip part
    fake-quantized and the rest as it is, computing in the model's dtype."""
    if not isinstance(model, nn.Sequential):
        return FakeQuantized(model)  # refused there, by name
    from hybridai.neuromorphic.loihi2.backend import Loihi2Backend
    from hybridai.neuromorphic.segments import chip_front

    front, rest = chip_front(model, Loihi2Backend().capabilities, chip="loihi2")
    return FakeQuantized(front, rest)
