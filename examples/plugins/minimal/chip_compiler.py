"""The smallest conforming ChipCompiler: "compiles" an ``nn.Sequential`` of ``Linear`` and ``LIF`` layers by
rounding its weights to 8 bits, and runs it in torch, counting the events a chip would process."""

import copy

import torch
from torch import nn

from hybridai.backends import ChipCapabilities, ChipCompiler
from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic import ChipRun, CompiledNetwork, LayerActivity
from hybridai.spiking import LIF


class MinimalChip(ChipCompiler):
    def __init__(self, target=None):  # no **options: the registry turns unknown options into ConfigErrors
        if target is not None:
            raise invalid("target", target, "none (this chip has no targets)")
        super().__init__()

    @property
    def capabilities(self):
        return ChipCapabilities(bit_exact=False, devices=("cpu",), takes_calibration=False)

    def compile(self, model, *, calibration=None):
        if calibration is not None:  # rounding needs no calibration batch: refused, not ignored
            raise invalid("calibration", type(calibration).__name__, "None (this chip rounds the model's weights)")
        if not isinstance(model, nn.Sequential):
            raise invalid("model", type(model).__name__, "an nn.Sequential of (Linear, LIF) pairs")
        for i, layer in enumerate(model):
            kind = nn.Linear if i % 2 == 0 else LIF
            if not isinstance(layer, kind) or getattr(layer, "output", "spikes") != "spikes":
                raise invalid(f"model[{i}]", type(layer).__name__, f"{kind.__name__} (Linear and LIF alternate)")
        if not model or len(model) % 2:
            raise invalid("model", f"{len(model)} layers", "an nn.Sequential of (Linear, LIF) pairs")
        return RoundedNetwork(model)


class RoundedNetwork(CompiledNetwork):
    backend = "minimal-chip"

    def __init__(self, model):
        self.model = copy.deepcopy(model).cpu().float()
        with torch.no_grad():
            for linear, lif in zip(self.model[::2], self.model[1::2], strict=True):
                scale = linear.weight.abs().max().clamp_min(1e-12) / 127  # 8-bit weights, one scale per layer
                linear.weight.copy_(torch.round(linear.weight / scale) * scale)
                lif.output, lif.stateful = "both", False  # the membrane too (to count active neurons), no carry

    def run(self, x):
        n_inputs = self.model[0].in_features
        if x.ndim != 3 or x.shape[-1] != n_inputs:
            raise invalid("x.shape", tuple(x.shape), f"[T, B, {n_inputs}] (time-major spikes)", ShapeError)
        layers, h = [], x.float()
        with torch.no_grad():
            for i, (linear, lif) in enumerate(zip(self.model[::2], self.model[1::2], strict=True)):
                events = int((h != 0).sum()) * linear.out_features  # each input event times its fan-out
                current = linear(h)
                spikes, mem = lif(current)
                before = torch.cat([torch.zeros_like(mem[:1]), mem[:-1]])  # the state each update starts from
                active = int(((before != 0) | (current != 0)).sum())
                n = current.shape[-1]
                layers.append(LayerActivity(f"{2 * i + 1}: LIF", n, int(spikes.sum()), events, current.numel(), active))
                h = spikes
        return ChipRun(h, tuple(layers), samples=x.shape[1], time_steps=x.shape[0], latency_steps=0)
