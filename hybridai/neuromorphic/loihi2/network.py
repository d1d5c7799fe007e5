"""A chain of Loihi 2 layers (graded Dense into sigma-delta neurons) emulated on one aligned clock.

``run_graded_network(layers, a_in, readout)`` runs an input group of sigma-delta neurons on the host's integer
input ``a_in`` ``[T, B, F]``, then every ``GradedLayer`` on the messages of the one before, delivered through
its Dense synapses (``graded_dense`` without the one-step buffer: the caller shifts the clocks), and an
optional read-out Dense whose integer sums the host reads. Same integers as ``graded_dense`` and
``run_sigma_delta`` layer by layer; faster: where a layer's values provably stay in a float dtype's exact
range and in int32 (nothing wraps), it runs in float32 or float64 lanes, one GEMM and a few in-place
operations per step on cache-sized buffers (``SigmaDeltaLanes``); else the int64 rules with Lava's wraps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from hybridai.neuromorphic.loihi2.graded_dense import graded_sums
from hybridai.neuromorphic.loihi2.registers import per_neuron
from hybridai.neuromorphic.loihi2.sigma_delta import SigmaDeltaConfig, SigmaDeltaLanes, exact_lanes, run_sigma_delta


@dataclass(frozen=True)
class GradedLayer:
    """A group of sigma-delta neurons and the Dense synapses in front of it (``weights`` ``[N, F]`` int64, the
    effective mantissas, and ``weight_exp``); ``weights=None`` for the input group fed by the host."""

    name: str
    config: SigmaDeltaConfig
    weights: torch.Tensor | None = None
    weight_exp: int = 0


class GradedRun(NamedTuple):
    """Messages of every layer ``[T, B, N]`` (integers, in the dtype the layer ran in: float32, float64 or int64),
    the non-zero inputs each layer received (events its neurons processed), and the read-out sums ``[T, B, C]``
    (None without a read-out)."""

    messages: list[torch.Tensor]
    active: list[int]
    readout: torch.Tensor | None


def _largest(x: torch.Tensor) -> float:
    """``max |x|`` in one pass (no ``|x|`` tensor)."""
    if not x.numel():
        return 0.0
    low, high = torch.aminmax(x)
    return max(float(high), -float(low))


def _summed(x: torch.Tensor) -> torch.Tensor:
    """``|x|`` summed over time ``[B, N]`` (one pass, no copy), rounded up: float32 sums of whole numbers lose at
    most ``T`` relative float32 epsilons, far inside the margin of 1e-4."""
    summed = torch.linalg.vector_norm(x if x.is_floating_point() else x.double(), ord=1, dim=0)
    return summed.double() * (1 + 1e-4)


def _largest_sum(x: torch.Tensor) -> float:
    """A bound on any neuron's running sum of ``x`` ``[T, B, N]``: the largest summed magnitude."""
    return float(_summed(x).max()) if x.numel() else 0.0


def run_graded_network(layers: list[GradedLayer], a_in: torch.Tensor, readout: torch.Tensor | None = None) -> GradedRun:
    """Run ``layers`` (the first without weights) on int64 ``a_in`` ``[T, B, F]``; ``readout`` ``[C, N]`` int64
    mantissas (weight_exp 0) read the last layer's messages as sums."""
    x, messages, active = a_in, [], []
    for layer in layers:
        x, events = _layer(layer, x)
        messages.append(x)
        active.append(events)
    sums = None
    if readout is not None:
        bound = _largest(x) * float(readout.abs().sum(1).max())
        lanes = exact_lanes(bound)
        sums = x.to(lanes) @ readout.to(lanes).T if lanes is not None else x.long().cpu() @ readout.cpu().T
    return GradedRun(messages, active, sums)


def _layer(layer: GradedLayer, x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(messages, non-zero inputs) of one layer on ``x``: the host's input or the previous messages."""
    config, w, exp = layer.config, layer.weights, layer.weight_exp
    n = x.shape[2] if w is None else w.shape[0]
    vth, bias = (per_neuron(name, getattr(config, name), n, x.device) for name in ("vth", "bias"))
    registers = float(bias.abs().max()) + float(vth.max())
    if w is None:
        largest, product = _largest_sum(x) + registers, 0.0
    else:
        # every neuron's sigma is at most |W| times the summed |messages| of its sample (a floor moves each
        # delivered sum by less than 1: T more), each step's sum at most |W| times the largest message
        magnitude = w.abs().double()
        reach = _summed(x) @ magnitude.T if x.numel() else magnitude.new_zeros(1)
        largest = float(reach.max()) * 2.0**exp + x.shape[0] + registers
        product = _largest(x) * float(magnitude.sum(1).max()) * 2.0 ** max(exp, 0)
    lanes = exact_lanes(max(2 * largest, product)) if 2 * largest < 2**31 and not config.cum_error else None
    if lanes is None:  # the int64 rules, wraps as Lava's int32
        a = x.long() if w is None else graded_sums(w, x.long(), exp)
        return run_sigma_delta(config, a).messages, int(torch.count_nonzero(a))
    source = x.to(lanes)
    synapses = None if w is None else (w.T.to(lanes).contiguous(), exp)
    group = SigmaDeltaLanes(config, vth, bias, (x.shape[1], n), source, synapses, count=w is not None)
    out = torch.empty(x.shape[0], x.shape[1], n, dtype=lanes, device=x.device)
    for t in range(x.shape[0]):
        group.step(source[t], out[t])
    events = int(group.active) if w is not None else int(torch.count_nonzero(x))
    return out, events
