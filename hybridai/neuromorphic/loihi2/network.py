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


class _Reach(NamedTuple):
    """What bounds the next layer's sums: per sample and neuron the summed ``|messages|`` over time ``[B, N]``
    (float64, rounded up) and the largest ``|message|``."""

    summed: torch.Tensor
    largest: float


def _reach(x: torch.Tensor) -> _Reach:
    """``_Reach`` of a whole ``[T, B, N]`` tensor, in passes without an ``|x|`` copy."""
    if not x.numel():
        return _Reach(torch.zeros(x.shape[1:], dtype=torch.float64, device=x.device), 0.0)
    summed = torch.linalg.vector_norm(x if x.is_floating_point() else x.double(), ord=1, dim=0)
    low, high = torch.aminmax(x)
    return _Reach(_rounded_up(summed), max(float(high), -float(low)))


def _rounded_up(summed: torch.Tensor) -> torch.Tensor:
    """Float32 sums of whole numbers lose at most ``T`` relative float32 epsilons: far inside a margin of 1e-4."""
    return summed.double() * (1 + 1e-4)


def run_graded_network(layers: list[GradedLayer], a_in: torch.Tensor, readout: torch.Tensor | None = None) -> GradedRun:
    """Run ``layers`` (the first without weights) on int64 ``a_in`` ``[T, B, F]``; ``readout`` ``[C, N]`` int64
    mantissas (weight_exp 0) read the last layer's messages as sums."""
    x, reach, messages, active = a_in, _reach(a_in), [], []
    for layer in layers:
        x, events, reach = _layer(layer, x, reach)
        messages.append(x)
        active.append(events)
    sums = None
    if readout is not None:
        bound = reach.largest * float(readout.abs().sum(1).max())
        lanes = exact_lanes(bound)
        sums = x.to(lanes) @ readout.to(lanes).T if lanes is not None else x.long().cpu() @ readout.cpu().T
    return GradedRun(messages, active, sums)


def _layer(layer: GradedLayer, x: torch.Tensor, reach: _Reach) -> tuple[torch.Tensor, int, _Reach]:
    """(messages, non-zero inputs, their reach) of one layer on ``x`` (the host's input or the previous
    messages), whose ``reach`` bounds what the layer's sums can become."""
    config, w, exp = layer.config, layer.weights, layer.weight_exp
    n = x.shape[2] if w is None else w.shape[0]
    vth, bias = (per_neuron(name, getattr(config, name), n, x.device) for name in ("vth", "bias"))
    registers = float(bias.abs().max()) + float(vth.max())
    if w is None:
        largest, product = float(reach.summed.max()) + registers, 0.0
    else:
        # every neuron's sigma is at most |W| times the summed |messages| of its sample (a floor moves each
        # delivered sum by less than 1: T more), each step's sum at most |W| times the largest message
        magnitude = w.abs().double()
        largest = float((reach.summed @ magnitude.T).max()) * 2.0**exp + x.shape[0] + registers
        product = reach.largest * float(magnitude.sum(1).max()) * 2.0 ** max(exp, 0)
    lanes = exact_lanes(max(2 * largest, product)) if 2 * largest < 2**31 and not config.cum_error else None
    if lanes is None:  # the int64 rules, wraps as Lava's int32
        a = x.long() if w is None else graded_sums(w, x.long(), exp)
        out = run_sigma_delta(config, a).messages
        return out, int(torch.count_nonzero(a)), _reach(out)
    source = x.to(lanes)
    synapses = None if w is None else (w.T.to(lanes).contiguous(), exp)
    group = SigmaDeltaLanes(config, vth, bias, (x.shape[1], n), source, synapses, count=w is not None)
    out = torch.empty(x.shape[0], x.shape[1], n, dtype=lanes, device=x.device)
    magnitude, summed, peak = (torch.zeros(x.shape[1], n, dtype=lanes, device=x.device) for _ in range(3))
    for t in range(x.shape[0]):
        summed.add_(torch.abs(group.step(source[t], out[t]), out=magnitude))
        torch.maximum(peak, magnitude, out=peak)
    events = int(group.active) if w is not None else int(torch.count_nonzero(x))
    return out, events, _Reach(_rounded_up(summed), float(peak.max()))
