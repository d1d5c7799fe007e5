"""A trained LIF network as a lava-dl netx file (CUBA neurons), and the spikes Lava computes on it.

``export_netx(model, path, example=counts)`` writes the ``[nn.Linear, LIF]`` pairs of a model that
``hybridai.neuromorphic.loihi.compile`` accepts (reset to zero) and returns ``NetxExport``: the example's input
spike counts (``.input``, ``[T, F]``, entering the file's first layer) and the spikes a Lava sink on the output
port receives over the same T steps (``.output``, ``[T, N]``, one step later per layer), computed with hybridai's
compartments under Lava's rules (``quirks="lava"``: Lava 0.10's ``PyLifModelBitAcc``).

What netx builds from a ``CUBA`` neuron (lava-dl 0.6): Lava's ``LIF`` with ``vth = vThMant``, ``du = iDecay - 1``
(Lava adds 1: the current keeps ``(4096 - iDecay) / 4096``), ``dv = vDecay``, ``bias_mant`` = the file's bias and
``bias_exp = 6``, binary spikes between layers; its Dense computes ``W @ spikes`` exactly (netx derives the
weight exponent from the values) and the neuron shifts it left by 6. So a pair keeps hybridai's mantissas ``w``
and decays, with the weight exponent 0: the membrane's scale is ``k 2^6`` (``k`` mantissa units per float
weight), the threshold ``round(threshold k)`` and the bias ``round(bias k)`` (times 2^6 in Lava). hybridai's own
Loihi plan picks the largest weight exponent that fits (finer thresholds); the netx network is the same one at
exponent 0. Refused by name, before a file is written: CUBA layers (snnTorch's reset drops the step after a spike,
a refractory delay Lava's LIF does not have), a membrane output, thresholds or decays per neuron (netx holds one
per layer), biases beyond 13 bits, and inputs that are not spike counts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from hybridai.core.errors import invalid
from hybridai.neuromorphic.fixed_point import check_integer, graded_sums
from hybridai.neuromorphic.loihi.compartments import CompartmentConfig, run_compartments
from hybridai.neuromorphic.loihi.plan import VTH_MAX, parse, plan_pair
from hybridai.neuromorphic.netx import (
    INPUT_MESSAGE_BITS,
    HostReadout,
    NetxExport,
    check_example,
    check_target,
    check_width,
    write,
)
from hybridai.spiking import CUBA

__all__ = ["LifLayer", "export_netx", "lif_layers", "run_netx"]

ACTIVITY_SHIFT = 6  # Lava's LIF shifts its synaptic input left by 6 (and netx's bias_exp is 6)
BIAS_LIMIT = 4095  # Lava's bias_mant: 13 bits, signed


@dataclass(frozen=True)
class LifLayer:
    """One pair as the file holds it: Dense mantissas ``[N, F]``, the current and voltage decays (Lava's ``du``
    and ``dv``), ``vth`` (``vThMant``) and ``bias`` (``bias_mant``, shifted by 6)."""

    name: str
    weights: torch.Tensor
    du: int
    dv: int
    vth: int
    bias: torch.Tensor

    @property
    def config(self) -> CompartmentConfig:
        """The compartments Lava builds for the layer (bias ``<< 6``, no refractory period)."""
        return CompartmentConfig(du=self.du, dv=self.dv, vth_mant=self.vth, bias_mant=self.bias, bias_exp=6)


def lif_layers(model: Any) -> tuple[list[LifLayer], HostReadout]:
    """The netx layers of ``model`` (module docstring) and what the host applies to their spikes."""
    pairs, decoder = parse(model, "nengo")  # CUBA is refused below, with netx's reason
    layers = []
    for pair in pairs:
        where = f"{pair.spiking.where} ({pair.spiking.type_name})"
        if isinstance(pair.neuron, CUBA):
            accepted = (
                "LIF: snnTorch's CUBA reset to zero also drops the step after a spike (a refractory delay of 2), and "
                "netx builds Lava's LIF, which has no refractory period"
            )
            raise invalid(where, "CUBA", accepted)
        if pair.neuron.output != "spikes":
            raise invalid(f"{where} output", pair.neuron.output, "'spikes' (a Lava sink receives the spikes)")
        planned = plan_pair(pair)
        threshold = pair.neuron.threshold.detach().double().cpu().reshape(-1)
        vth = _one(f"{where} threshold", torch.round(threshold * planned.k).clamp(max=VTH_MAX).long())
        du = _one(f"{where} beta (current decay)", planned.du)
        dv = _one(f"{where} beta", planned.dv)
        bias = pair.linear.bias
        scaled = torch.zeros(planned.weights.shape[0], dtype=torch.int64)
        if bias is not None:
            scaled = torch.round(bias.detach().double().cpu() * planned.k).long()
        if bool((scaled.abs() > BIAS_LIMIT).any()):
            largest = int(scaled.abs().max())
            accepted = f"|bias| * {planned.k:g} (mantissa units per weight unit) up to {BIAS_LIMIT} (Lava's bias_mant)"
            raise invalid(f"{pair.dense.where} (nn.Linear) bias", f"{largest} in netx's units", accepted)
        layers.append(LifLayer(pair.name, planned.weights.clone(), du, dv, vth, scaled))
    return layers, HostReadout(1.0, None, decoder)


def _one(name: str, values: torch.Tensor) -> int:
    """The one value of a register netx holds per layer, or a ConfigError when the neurons differ."""
    if bool((values != values.reshape(-1)[0]).any()):
        shown = f"values from {int(values.min())} to {int(values.max())} across the neurons"
        raise invalid(name, shown, "one value for the layer (netx holds one register per layer)")
    return int(values.reshape(-1)[0])


def run_netx(layers: list[LifLayer], counts: Any) -> torch.Tensor:
    """The spikes (int64 ``[T, B, N]``) Lava's fixed-point models send on the output port of ``layers`` for the
    input spike counts ``counts`` ``[T, B, F]``: each Dense delivers one step later, shifted left by 6 into
    Lava's LIF (``run_compartments`` with ``quirks="lava"``)."""
    current = torch.as_tensor(counts).long()
    for layer in layers:
        q = torch.zeros(*current.shape[:2], layer.weights.shape[0], dtype=torch.int64, device=current.device)
        q[1:] = graded_sums(layer.weights.to(current.device), current[:-1], 0) << ACTIVITY_SHIFT
        current = run_compartments(layer.config, q, quirks="lava").spikes.long()
    return current


def export_netx(model: Any, path: str | os.PathLike[str], *, example: Any) -> NetxExport:
    """Write ``model``'s LIF pairs to the netx file ``path`` and return the example's spikes (module docstring).
    ``example``: one input ``[T, F]`` of spike counts (non-negative integers). Nothing is written when anything is
    refused."""
    layers, host = lif_layers(model)
    example = check_example(example, "one input [T, F] of spike counts (time-major, no batch axis)")
    counts = check_integer(example, "example", rank=2, non_negative=True).long().unsqueeze(1)
    if counts.shape[2] != layers[0].weights.shape[1]:
        accepted = f"[T, {layers[0].weights.shape[1]}] (the first Linear's inputs)"
        raise invalid("example.shape", tuple(example.shape), accepted)
    check_width("the input spike counts", counts, INPUT_MESSAGE_BITS)
    output = run_netx(layers, counts)
    neurons = [
        {"type": "CUBA", "vThMant": x.vth, "iDecay": x.du + 1, "vDecay": x.dv, "refDelay": 1, "gradedSpike": False}
        for x in layers
    ]
    target = check_target(path)
    biases = [x.bias if bool((x.bias != 0).any()) else None for x in layers]
    write(
        target,
        [
            {"type": "dense", "shape": [x.weights.shape[0]], "weight": x.weights, "bias": bias, "neuron": neuron}
            for x, bias, neuron in zip(layers, biases, neurons, strict=True)
        ],
    )
    return NetxExport(target, counts[:, 0].cpu(), output[:, 0].cpu(), layers, host)
