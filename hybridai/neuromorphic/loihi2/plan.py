"""A trained sigma-delta network compiled to Loihi 2 registers and run on the integer emulator.

``compile_network(model)`` takes an ``nn.Sequential``::

    SigmaDelta(input="value" or "delta")      # the input layer: the host sends it integer deltas
    [nn.Linear(bias=False), SigmaDelta] ...   # graded Dense synapses into sigma-delta neurons
                                              # (or TimeDistributed(nn.Conv2d(bias=False)), SigmaDelta)
    nn.Linear(bias=False)                     # optional read-out: integer sums read by the host
    SpikeCountDecoder() or RateDecoder()      # optional, after the read-out: sum or mean over time

and returns a ``Loihi2Network`` whose ``run(x)`` takes the float model's input ``[T, B, F]``.

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

Time: each Dense holds a message one step (its buffer), so layer ``l`` acts at chip step ``t + l`` on what
the float model computes at step ``t``. The emulator runs every layer on that aligned clock (a layer's bias
acts from its first input step, as the Loihi 1 emulator does); ``ChipRun.latency_steps`` is the number of
Dense layers and ``time_steps`` adds them to T.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.loihi.plan import check_device
from hybridai.neuromorphic.loihi2.network import Convolution, GradedLayer, run_graded_network
from hybridai.neuromorphic.loihi2.sigma_delta import SigmaDeltaConfig
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
    if graph.decoder is not None and not stages[-1].readout:
        raise invalid(graph.decoder.where, graph.decoder.type_name, "a decoder only after the read-out nn.Linear")
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
    layer: SigmaDelta = stage.node.module
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


def plan(stages: list[Stage]) -> list[StagePlan]:
    """Registers for every stage from the current float parameters (module docstring)."""
    plans: list[StagePlan] = []
    for stage in stages:
        previous = plans[-1].grid if plans else None
        weights, exp = (None, 0)
        if stage.readout:
            weights, exp = quantize_weights(stage.dense.module.weight, 1.0)
            plans.append(StagePlan(stage.node.label, None, weights, 0, previous * 2.0**exp, "messages"))
            continue
        layer: SigmaDelta = stage.node.module
        if stage.dense is not None:
            weights, exp = quantize_weights(stage.dense.module.weight, previous / layer.scale)
        bias = layer.integer_bias()
        config = SigmaDeltaConfig(vth=layer.threshold_steps, bias=int(bias) if bias.numel() == 1 else bias.cpu())
        source = layer.input if stage.dense is None else "messages"
        conv = None
        if stage.dense is not None and stage.dense.kind == "conv":
            m = stage.dense.module
            conv = Convolution(tuple(m.stride), tuple(m.padding), tuple(m.dilation), m.groups)
        plans.append(StagePlan(stage.node.label, config, weights, exp, layer.scale, source, conv))
    return plans


def chip_weight(plan: StagePlan, previous_grid: float) -> torch.Tensor:
    """The float weight (float64, CPU) that computes on the float model what ``plan``'s Dense computes."""
    unit = plan.grid if plan.config is None else plan.grid * 2.0**plan.weight_exp
    return plan.weights.double() * (unit / previous_grid)


class Loihi2Network(CompiledNetwork):
    """A sigma-delta network quantized to Loihi 2 registers, run on the bit-exact integer emulator.

    ``run(x)`` takes the float model's input ``[T, B, F]`` and returns a ``ChipRun`` in the float model's
    output layout; ``messages(x)`` the integer messages of every sigma-delta layer ``[T, B, N]`` (int64).
    """

    backend = "loihi2"

    def __init__(
        self, plans: list[StagePlan], decoder: nn.Module | None, width: int | None, device: torch.device
    ) -> None:
        self.plans, self.decoder, self.width, self.device = plans, decoder, width, device
        self.layers = [
            GradedLayer(p.name, p.config, None if p.weights is None else p.weights.to(device), p.weight_exp, p.conv)
            for p in plans
            if p.config is not None
        ]
        last = plans[-1]
        self.readout = last.weights.to(device) if last.config is None else None

    def host_input(self, x: Any) -> torch.Tensor:
        """The integer input (int64 ``[T, B, F]``) the host sends the input layer for the float input ``x``."""
        maps = len(self.plans) > 1 and self.plans[1].conv is not None
        accepted = (
            "a real tensor [T, B, C, H, W] (time-major feature maps)"
            if maps
            else (f"a real tensor [T, B, {self.width or 'F'}] (time-major frames)")
        )
        if not torch.is_tensor(x) or x.is_complex() or x.ndim != (5 if maps else 3) or 0 in x.shape:
            raise invalid("x", tuple(x.shape) if torch.is_tensor(x) else type(x).__name__, accepted, ShapeError)
        if self.width is not None and x.shape[2] != self.width:
            raise invalid("x.shape", tuple(x.shape), accepted, ShapeError)
        if not bool(torch.isfinite(x).all()):
            raise invalid("x", "a tensor containing NaN or inf", "finite values", ShapeError)
        first = self.plans[0]
        grid = x.to(self.device, torch.float64) / first.grid
        if bool((grid.abs() >= 2**31).any()):
            largest = float(x.abs().max())
            accepted = f"|x| below {2**31 * first.grid:g}: the host sends 32-bit integers on the grid {first.grid:g}"
            raise invalid("x", f"a tensor with |x| up to {largest:g}", accepted, ShapeError)
        if first.input == "delta":
            return torch.floor(grid).long()
        steps = torch.round(grid).long()
        return torch.diff(steps, dim=0, prepend=torch.zeros_like(steps[:1]))

    def messages(self, x: Any) -> list[torch.Tensor]:
        """The integer messages (int64 ``[T, B, N]``) of every sigma-delta layer for the float input ``x``."""
        return [m.long() for m in run_graded_network(self.layers, self.host_input(x)).messages]

    def run(self, x: Any) -> ChipRun:
        a_in = self.host_input(x)
        steps, batch = a_in.shape[:2]
        graded = run_graded_network(self.layers, a_in, self.readout)
        last = self.plans[-1]
        source = graded.readout if graded.readout is not None else graded.messages[-1]
        out = source.double() * last.grid
        out = out.to(x.dtype if x.is_floating_point() else torch.get_default_dtype())
        if self.decoder is not None:
            out = self.decoder(out)
        dense = len(self.plans) - 1  # each Dense holds a message one step: the chip runs T + dense steps
        outputs = [*graded.messages, *([graded.readout] if graded.readout is not None else [])]
        counts = zip(outputs, graded.sent, [*graded.active, None], graded.synaptic_ops, graded.dense_ops, strict=False)
        layers = [
            _activity(stage, *layer_counts, (steps + dense) * batch)
            for stage, layer_counts in zip(self.plans, counts, strict=True)
        ]
        return ChipRun(out, tuple(layers), batch, steps + dense, dense)

    def describe(self) -> list[dict[str, Any]]:
        rows = []
        for p in self.plans:
            row: dict[str, Any] = {"layer": p.name, "grid": p.grid, "input": p.input}
            if p.config is not None:
                vth, bias = torch.as_tensor(p.config.vth), torch.as_tensor(p.config.bias)
                row |= {
                    "kind": "Loihi 2 sigma-delta neurons (ReLU, residue carried)",
                    "vth": int(vth.max()),
                    "bias": (int(bias.min()), int(bias.max())),
                    "state_exp": p.config.state_exp,
                }
            else:
                row["kind"] = "read-out: Dense sums read by the host"
            if p.conv is not None:
                row["conv"] = {"kernel": tuple(p.weights.shape[2:])} | {
                    k: getattr(p.conv, k) for k in ("stride", "padding", "dilation", "groups")
                }
            if p.weights is not None:
                row |= {
                    "neurons": p.weights.shape[0],  # output channels after a Conv2d
                    "inputs": p.weights.shape[1],
                    "weight_exp": p.weight_exp,
                    "weight_mantissa_range": (int(p.weights.min()), int(p.weights.max())),
                    "weight_bits": "8-bit signed mantissa, even (valid in every Lava sign mode)",
                }
            rows.append(row)
        return rows


def _activity(
    plan: StagePlan, out: torch.Tensor, sent: int, active: int | None, ops: int, dense_ops: int, chip_steps: int
) -> LayerActivity:
    """Events of one chip layer (``chip_steps``: steps times samples), as ``run_graded_network`` counts them:
    graded messages once per non-zero payload (``sent``); every neuron is updated on each chip step."""
    neurons = out[0, 0].numel()
    return LayerActivity(
        name=plan.name,
        neurons=neurons,
        spikes=0 if active is None else sent,  # the read-out's sums are read by the host, not sent
        synaptic_ops=ops,
        neuron_updates=neurons * chip_steps,
        active_updates=sent if active is None else active,
        dense_synaptic_ops=dense_ops,
    )


def compile_network(model: Any, *, device: torch.device | str) -> Loihi2Network:
    """Quantize ``model`` (see the module docstring) and return the runnable network on ``device`` (``"cpu"``, or
    a CUDA device this machine has; anything else is refused by name)."""
    device = check_device(device)
    stages, decoder = parse(model)
    plans = plan(stages)
    synapse = stages[1].dense if len(stages) > 1 else None
    width = stages[0].node.module.features
    if synapse is not None and synapse.kind == "dense":
        width = synapse.module.in_features
    return Loihi2Network(plans, decoder, width, device)
