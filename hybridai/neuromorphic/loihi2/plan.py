"""Registers of Loihi 2 from a trained sigma-delta network: what the chip is told to compute.

``plan(model)`` takes an ``nn.Sequential``::

    SigmaDelta(input="value" or "delta")      # the input layer: the host sends it integer deltas
    [nn.Linear(bias=False), SigmaDelta] ...   # graded Dense synapses into sigma-delta neurons
                                              # (or TimeDistributed(nn.Conv2d(bias=False)), SigmaDelta)
    nn.Linear(bias=False)                     # optional read-out: integer sums read by the host
    SpikeCountDecoder() or RateDecoder()      # optional, after the read-out: sum or mean over time

and returns a ``Loihi2Plan``: one ``StagePlan`` (sigma-delta registers, Dense or Conv mantissas and exponent,
grid) per chip layer, the decoder the host applies and the input width. ``network.Loihi2Network`` runs it
(``run(x)`` on the float model's input ``[T, B, F]``); ``backend.compile`` is both in one call.

Mapping (every SigmaDelta needs ``cum_error=True``, Loihi 2's rule, and a power-of-two ``scale``):

* a SigmaDelta of grid ``s`` holds its state in units of ``s``: ``vth = threshold_steps``,
  ``bias = round(bias / s)``, ReLU, ``state_exp = 0`` (messages in the same units);
* the input layer's host input is ``round(x / s)`` differenced over time (``input="value"``) or
  ``floor(x / s)`` (``input="delta"``): sigma is then exactly the float layer's integer activation;
* a Linear between grids ``s_in`` and ``s_out`` acts on the chip as ``W s_in / s_out = m 2^e``: even 8-bit
  mantissas ``m`` in [-254, 254] (legal in every Lava sign mode) and the smallest ``weight_exp`` ``e`` whose
  mantissas fit; Dense shifts the sum by ``e`` (floor for ``e < 0``), which is the float layer's per-step
  floor to its grid. What the float model computes with the weights ``m 2^e s_out / s_in``
  (``fake_quantize``) the chip computes, message for message;
* a ``TimeDistributed(nn.Conv2d(bias=False))`` is quantized the same way and delivers by convolution (Lava's
  ``Conv``: zero padding, any stride, dilation and groups); the SigmaDelta after it has one bias; messages
  reaching a Linear from feature maps are flattened, as ``TimeDistributed(nn.Flatten())`` does;
* the read-out Linear keeps ``weight_exp = 0`` on a grid ``s_in 2^e`` of its own: its sums are exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import nn

from hybridai.core.errors import invalid
from hybridai.neuromorphic.loihi2.graded_chain import Convolution
from hybridai.neuromorphic.loihi2.sigma_delta import SigmaDeltaConfig
from hybridai.neuromorphic.nodes import module_of
from hybridai.spiking.graph import LayerNode, lower
from hybridai.spiking.sigma_delta import SigmaDelta

MANTISSA = 254  # the largest even 8-bit magnitude every Lava sign mode keeps
ACCEPTS = ("sigma_delta", "dense", "conv", "flatten", "decoder")  # layer kinds (hybridai.spiking.kind_of)
SUPPORTED = (
    "an nn.Sequential: SigmaDelta (the input layer), then [nn.Linear(bias=False) or TimeDistributed(nn.Conv2d("
    "bias=False)), SigmaDelta] pairs (TimeDistributed(nn.Flatten()) before a Linear on feature maps), optionally "
    "an nn.Linear(bias=False) read-out and a SpikeCountDecoder or RateDecoder"
)


def quantize_weights(weight: torch.Tensor, ratio: float) -> tuple[torch.Tensor, int]:
    """(mantissas int64, weight_exp) for float ``weight`` acting as ``weight * ratio`` on the chip (module
    docstring): the smallest exponent whose even mantissas fit in [-254, 254]."""
    w = weight.detach().double().cpu() * ratio
    largest = float(w.abs().max()) if w.numel() else 0.0
    exp = math.ceil(math.log2(largest / MANTISSA)) if largest > 0 else 0
    exp = min(max(exp, -31), 31)
    mantissas = (2 * torch.round(w / 2.0**exp / 2)).clamp(-MANTISSA, MANTISSA).long()
    return mantissas, exp


@dataclass(frozen=True)
class Stage:
    """One chip layer from the model: the SigmaDelta (or the read-out Linear) and the Linear or Conv2d in front."""

    node: LayerNode  # the SigmaDelta, or the read-out Linear
    dense: LayerNode | None  # the Linear or Conv2d in front (None for the input layer)

    @property
    def readout(self) -> bool:
        return self.node.kind == "dense"

    @property
    def sigma_delta(self) -> SigmaDelta:
        """The SigmaDelta of a stage that is not the read-out."""
        return module_of(self.node, SigmaDelta)

    @property
    def synapse(self) -> nn.Linear | nn.Conv2d | None:
        """The Linear or Conv2d in front (None for the input layer)."""
        if self.dense is None:
            return None
        return module_of(self.dense, nn.Conv2d) if self.dense.kind == "conv" else module_of(self.dense, nn.Linear)


def parse(model: Any) -> tuple[list[Stage], nn.Module | None]:
    """The chip layers and the optional decoder of ``model``, or one ConfigError naming the layer."""
    if not isinstance(model, nn.Sequential):
        raise invalid("model", type(model).__name__, SUPPORTED)
    graph = lower(model, target="loihi2", accepts=ACCEPTS, supported=SUPPORTED)
    layers = graph.layers[:-1] if graph.decoder is not None else graph.layers
    nodes = [n for n in layers if n.kind != "flatten"]  # messages into a Dense are flattened on the chip
    if nodes[0].kind != "sigma_delta":
        raise invalid(nodes[0].where, nodes[0].type_name, f"a SigmaDelta input layer first; {SUPPORTED}")
    stages = [Stage(nodes[0], None)]
    for i in range(1, len(nodes), 2):
        dense, after = nodes[i], nodes[i + 1] if i + 1 < len(nodes) else None
        if dense.kind not in ("dense", "conv"):
            raise invalid(dense.where, dense.type_name, f"an nn.Linear or nn.Conv2d after a SigmaDelta; {SUPPORTED}")
        if dense.kind == "conv" and after is None:
            raise invalid(dense.where, dense.type_name, "a Conv2d followed by a SigmaDelta (the read-out is a Linear)")
        if after is not None and after.kind != "sigma_delta":
            raise invalid(after.where, after.type_name, f"a SigmaDelta after {dense.where}; {SUPPORTED}")
        stages.append(Stage(after or dense, dense))
    if graph.decoder is not None and graph.decoder.type_name not in ("SpikeCountDecoder", "RateDecoder"):
        raise invalid(graph.decoder.where, graph.decoder.type_name, "SpikeCountDecoder or RateDecoder (sums of deltas)")
    for stage in stages:
        _check(stage, first=stage is stages[0])
    return stages, graph.decoder.module if graph.decoder is not None else None


def _check(stage: Stage, first: bool) -> None:
    if stage.dense is not None:
        synapse = stage.dense.module
        if synapse.bias is not None:
            raise invalid(
                f"{stage.dense.where}.bias",
                "a bias",
                f"nn.{stage.dense.type_name}(..., bias=False): a bias would be added to every delta; give the "
                "SigmaDelta bias=",
            )
        if not bool(torch.isfinite(synapse.weight.detach()).all()):
            raise invalid(f"{stage.dense.where}.weight", "a tensor containing NaN or inf", "finite values")
        if stage.dense.kind == "conv":
            if synapse.padding_mode != "zeros" or isinstance(synapse.padding, str):
                accepted = "padding_mode='zeros' with numeric padding (Lava's Conv pads with zeros)"
                raise invalid(f"{stage.dense.where}.padding", synapse.padding, accepted)
            if stage.node.module.bias.numel() != 1:
                raise invalid(
                    f"{stage.node.where}.bias", f"{stage.node.module.bias.numel()} values", "one bias after a Conv2d"
                )
    if stage.readout:
        return
    layer = stage.sigma_delta
    where = stage.node.where
    if not layer.cum_error:
        raise invalid(
            f"{where}.cum_error", False, "True: Loihi 2's sigma-delta neurons carry the unsent residue (retrain)"
        )
    if layer.scale != 2.0 ** round(math.log2(layer.scale)):
        raise invalid(f"{where}.scale", layer.scale, "a power of two (the chip's grids are binary: 2**-6, 2**-8, ...)")
    if not first and layer.input != "delta":
        raise invalid(f"{where}.input", layer.input, "'delta' after synapses (it sums the incoming deltas)")
    if not bool(torch.isfinite(layer.bias.detach()).all()):
        raise invalid(f"{where}.bias", "a tensor containing NaN or inf", "finite values")


@dataclass(frozen=True)
class StagePlan:
    """The registers of one chip layer: its sigma-delta config (None for the read-out), the Dense mantissas
    ``[N, F]`` and exponent in front (None for the input layer), and the grid of its state."""

    name: str
    config: SigmaDeltaConfig | None
    weights: torch.Tensor | None
    weight_exp: int
    grid: float  # float units per integer unit of the layer's state (its messages or read-out sums)
    input: str  # "value" or "delta" (the input layer); "messages" (after a Dense)
    conv: Convolution | None = None  # the geometry of a Conv2d in front


def plan_stages(stages: list[Stage]) -> list[StagePlan]:
    """Registers for every stage from the current float parameters (module docstring)."""
    plans: list[StagePlan] = []
    for stage in stages:
        previous = plans[-1].grid if plans else None
        synapse = stage.synapse
        weights: torch.Tensor | None = None
        exp = 0
        if stage.readout:
            assert synapse is not None and previous is not None  # the read-out Linear follows a SigmaDelta
            weights, exp = quantize_weights(synapse.weight, 1.0)
            plans.append(StagePlan(stage.node.label, None, weights, 0, previous * 2.0**exp, "messages"))
            continue
        layer = stage.sigma_delta
        if synapse is not None:
            assert previous is not None  # synapses only after the input layer
            weights, exp = quantize_weights(synapse.weight, previous / layer.scale)
        bias = layer.integer_bias()
        config = SigmaDeltaConfig(vth=layer.threshold_steps, bias=int(bias) if bias.numel() == 1 else bias.cpu())
        source = layer.input if stage.dense is None else "messages"
        conv = None
        if isinstance(synapse, nn.Conv2d):
            assert not isinstance(synapse.padding, str)  # refused by _check
            conv = Convolution(_pair(synapse.stride), _pair(synapse.padding), _pair(synapse.dilation), synapse.groups)
        plans.append(StagePlan(stage.node.label, config, weights, exp, layer.scale, source, conv))
    return plans


def _pair(value: tuple[int, ...]) -> tuple[int, int]:
    """A Conv2d's stride, padding or dilation: the pair it holds (``nn.Conv2d`` makes every one a pair)."""
    first, second = value
    return first, second


def chip_weight(plan: StagePlan, previous_grid: float) -> torch.Tensor:
    """The float weight (float64, CPU) that computes on the float model what ``plan``'s Dense computes."""
    unit = plan.grid if plan.config is None else plan.grid * 2.0**plan.weight_exp
    assert plan.weights is not None, "chip_weight: a plan with a Dense or Conv in front"
    return plan.weights.double() * (unit / previous_grid)


class Loihi2Plan(NamedTuple):
    """What ``plan`` derives from a model: registers per chip layer, the decoder (None without) and the input
    width the host sends (None when the input layer takes any number of features)."""

    stages: list[StagePlan]
    decoder: nn.Module | None
    width: int | None


def plan(model: Any) -> Loihi2Plan:
    """Registers for every chip layer of ``model`` (see the module docstring)."""
    stages, decoder = parse(model)
    plans = plan_stages(stages)
    synapse = stages[1].synapse if len(stages) > 1 else None
    width = stages[0].sigma_delta.features
    if isinstance(synapse, nn.Linear):
        width = synapse.in_features
    return Loihi2Plan(plans, decoder, width)
