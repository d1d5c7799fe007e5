"""A chain of Loihi 2 layers (graded Dense into sigma-delta neurons) emulated on one aligned clock.

``run_graded_network(layers, a_in, readout)`` runs an input group of sigma-delta neurons on the host's integer
input ``a_in`` ``[T, B, F]``, then every ``GradedLayer`` on the messages of the one before, delivered through
its Dense synapses (``graded_dense`` without the one-step buffer: the caller shifts the clocks) or a
convolution of the same integer rule (weights ``[C', C / groups, kh, kw]``, on feature maps ``[T, B, C, H, W]``;
Lava's ``Conv`` process), and an optional read-out Dense whose integer sums the host reads. Messages reaching a
Dense from feature maps are flattened (``nn.Flatten``'s order). Same integers as ``graded_dense`` and
``run_sigma_delta`` layer by layer; faster: where a layer's values provably stay in a float dtype's exact
range and in int32 (nothing wraps), it runs in float32 or float64 lanes, one GEMM and a few in-place
operations per step on cache-sized buffers (``SigmaDeltaLanes``); else the int64 rules with Lava's wraps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch.nn import functional

from hybridai.core.errors import ShapeError, UnsupportedOperationError, invalid
from hybridai.neuromorphic.fixed_point import check_integer, graded_sums
from hybridai.neuromorphic.loihi2.registers import per_neuron
from hybridai.neuromorphic.loihi2.sigma_delta import (
    SigmaDeltaConfig,
    SigmaDeltaLanes,
    exact_lanes,
    run_sigma_delta,
    sigma_delta_lanes,
)


@dataclass(frozen=True)
class Convolution:
    """The geometry of a convolutional layer (``functional.conv2d``'s arguments)."""

    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1

    def __call__(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return functional.conv2d(x, weight, None, self.stride, self.padding, self.dilation, self.groups)

    def output_shape(self, shape: tuple[int, ...], weight: torch.Tensor) -> tuple[int, ...]:
        """The ``(C', H', W')`` of one sample's maps ``shape`` ``(C, H, W)``."""
        probe = torch.zeros(1, *shape, dtype=torch.float64, device=weight.device)
        return tuple(self(probe, weight.double()).shape[1:])


@dataclass(frozen=True)
class GradedLayer:
    """A group of sigma-delta neurons and the synapses in front of it: ``weights`` int64, the effective mantissas,
    ``[N, F]`` (Dense) or ``[C', C / groups, kh, kw]`` with a ``conv`` geometry, and ``weight_exp``;
    ``weights=None`` for the input group fed by the host. A convolutional group has one ``vth`` and ``bias``."""

    name: str
    config: SigmaDeltaConfig
    weights: torch.Tensor | None = None
    weight_exp: int = 0
    conv: Convolution | None = None


class GradedRun(NamedTuple):
    """Per layer: its messages ``[T, B, ...]`` (integers, in the dtype the layer ran in: float32, float64 or
    int64) and how many were sent (non-zero), the non-zero inputs it received (events its neurons processed), the
    synaptic events delivered into it (each incoming message times its targets; one per non-zero host input for
    the first) and those of a dense run (every input sent every step). Then the read-out sums ``[T, B, C]`` (None
    without a read-out), followed in ``sent`` (non-zero sums), ``synaptic_ops`` and ``dense_ops`` by the
    read-out's own counts."""

    messages: list[torch.Tensor]
    sent: list[int]
    active: list[int]
    synaptic_ops: list[int]
    dense_ops: list[int]
    readout: torch.Tensor | None


class _Reach(NamedTuple):
    """What bounds the next layer's sums: per sample and neuron the summed ``|messages|`` over time ``[B, ...]``
    (float64, rounded up) and the largest ``|message|``; and how many messages were sent (non-zero)."""

    summed: torch.Tensor
    largest: float
    sent: int


def _reach(x: torch.Tensor) -> _Reach:
    """``_Reach`` of a whole ``[T, B, ...]`` tensor, in passes without an ``|x|`` copy."""
    if not x.numel():
        return _Reach(torch.zeros(x.shape[1:], dtype=torch.float64, device=x.device), 0.0, 0)
    summed = torch.linalg.vector_norm(x if x.is_floating_point() else x.double(), ord=1, dim=0)
    low, high = torch.aminmax(x)
    return _Reach(_rounded_up(summed), max(float(high), -float(low)), int(torch.count_nonzero(x)))


def _rounded_up(summed: torch.Tensor) -> torch.Tensor:
    """Float32 sums of whole numbers lose at most ``T`` relative float32 epsilons: far inside a margin of 1e-4."""
    return summed.double() * (1 + 1e-4)


def run_graded_network(layers: list[GradedLayer], a_in: Any, readout: torch.Tensor | None = None) -> GradedRun:
    """Run ``layers`` (the first without weights) on integer ``a_in`` ``[T, B, ...]``; ``readout`` ``[C, N]``
    int64 mantissas (weight_exp 0) read the last layer's messages as sums."""
    x = _check_network(layers, a_in, readout)
    reach = _reach(x)
    run = GradedRun([], [], [], [], [], None)
    for layer in layers:
        if layer.weights is not None and layer.conv is None and x.ndim > 3:  # feature maps into a Dense
            x, reach = x.flatten(2), reach._replace(summed=reach.summed.flatten(1))
        if layer.weights is not None:  # every layer but the input group (_check_network)
            ops, dense = _synaptic_ops(layer.weights, layer.conv, x, reach.sent)
        else:
            ops, dense = reach.sent, x.numel()
        x, events, reach = _layer(layer, x, reach)
        run.messages.append(x)
        run.sent.append(reach.sent)
        run.active.append(events)
        run.synaptic_ops.append(ops)
        run.dense_ops.append(dense)
    if readout is None:
        return run
    x = x.flatten(2) if x.ndim > 3 else x
    ops, dense = _synaptic_ops(readout, None, x, reach.sent)
    lanes = exact_lanes(reach.largest * float(readout.abs().sum(1).max()))
    sums = x.to(lanes) @ readout.to(lanes).T if lanes is not None else x.long().cpu() @ readout.cpu().T
    run.sent.append(int(torch.count_nonzero(sums)))
    run.synaptic_ops.append(ops)
    run.dense_ops.append(dense)
    return run._replace(readout=sums)


def _check_network(layers: Any, a_in: Any, readout: Any) -> torch.Tensor:
    """``a_in`` as int64, once ``layers``, ``a_in`` and ``readout`` are what ``run_graded_network`` takes."""
    if not isinstance(layers, list | tuple) or not layers or not all(isinstance(g, GradedLayer) for g in layers):
        raise invalid("layers", layers, "a non-empty list of hybridai.neuromorphic.loihi2.GradedLayer")
    for i, layer in enumerate(layers):
        if (layer.weights is None) != (i == 0):
            accepted = "weights=None on the first (input) layer only: the others receive messages through synapses"
            raise invalid(f"layers[{i}].weights", "None" if layer.weights is None else "a tensor", accepted)
    x = check_integer(a_in, "a_in", rank=None)
    if x.ndim < 3 or 0 in x.shape:
        raise invalid("a_in.shape", tuple(x.shape), "a non-empty [T, B, ...] tensor of integers", ShapeError)
    if readout is not None and (not torch.is_tensor(readout) or readout.ndim != 2):
        shown = tuple(readout.shape) if torch.is_tensor(readout) else type(readout).__name__
        raise invalid("readout", shown, "None or int64 mantissas [C, N]", ShapeError)
    return x


def _synaptic_ops(weights: torch.Tensor, conv: Convolution | None, x: torch.Tensor, sent: int) -> tuple[int, int]:
    """(events, dense events) of messages ``x`` (``sent`` of them non-zero) into synapses ``weights``: every
    non-zero message reaches each of its targets once; a dense run sends every input every step."""
    steps, batch = x.shape[:2]
    if conv is None:
        return sent * weights.shape[0], steps * batch * x.shape[2] * weights.shape[0]
    per_input = (x != 0).sum(0, dtype=torch.float64)  # per sample and input: messages over time
    reached = conv(per_input, torch.ones(weights.shape, dtype=torch.float64, device=x.device))  # per output
    outputs = math.prod(conv.output_shape(tuple(x.shape[2:]), weights))
    return int(reached.sum()), steps * batch * outputs * weights[0].numel()


def _layer(layer: GradedLayer, x: torch.Tensor, reach: _Reach) -> tuple[torch.Tensor, int, _Reach]:
    """(messages, non-zero inputs, their reach) of one layer on ``x`` (the host's input or the previous
    messages), whose ``reach`` bounds what the layer's sums can become."""
    config, w, exp, conv = layer.config, layer.weights, layer.weight_exp, layer.conv
    if conv is not None:
        assert w is not None, f"layer {layer.name!r}: a convolution has weights"
        shape, n = conv.output_shape(tuple(x.shape[2:]), w), None
    else:
        n = x.shape[2] if w is None else w.shape[0]
        shape = x.shape[2:] if w is None else (n,)
        n = None if len(shape) > 1 else n  # input feature maps: one vth and bias
    vth, bias = (_register(layer, name, n, x.device) for name in ("vth", "bias"))
    registers = float(bias.abs().max()) + float(vth.max())
    if w is None:
        largest, product = float(reach.summed.max()) + registers, 0.0
    else:
        # every neuron's sigma is at most |W| times the summed |messages| of its sample (a floor moves each
        # delivered sum by less than 1: T more), each step's sum at most |W| times the largest message
        magnitude = w.abs().double()
        reached = conv(reach.summed, magnitude) if conv is not None else reach.summed @ magnitude.T
        largest = float(reached.max()) * 2.0**exp + x.shape[0] + registers
        product = reach.largest * float(magnitude.flatten(1).sum(1).max()) * 2.0 ** max(exp, 0)
    lanes = sigma_delta_lanes(config, largest, product)
    if lanes is None:  # the int64 rules, wraps as Lava's int32
        if conv is not None:
            raise UnsupportedOperationError(
                f"layer {layer.name!r}: its sums may leave int32 (Lava's wraps), which the emulator runs for Dense "
                "synapses only; accepted: smaller inputs, weights or thresholds"
            )
        a = x.long() if w is None else graded_sums(w, x.long(), exp)
        out = run_sigma_delta(config, a.flatten(2)).messages.reshape(a.shape)
        return out, reach.sent if w is None else int(torch.count_nonzero(a)), _reach(out)
    source = x.to(lanes)
    synapses = None
    if conv is not None:
        assert w is not None  # as above
        weight = w.to(lanes)
        synapses = (lambda m, out: out.copy_(conv(m, weight)), exp)
    elif w is not None:
        weight_t = w.T.to(lanes).contiguous()
        synapses = (lambda m, out: torch.mm(m, weight_t, out=out), exp)
    size = (x.shape[1], *shape)
    group = SigmaDeltaLanes(config, vth, bias, size, source, synapses, count=w is not None)
    out = torch.empty(x.shape[0], *size, dtype=lanes, device=x.device)
    magnitude, summed, peak, sent = (torch.zeros(size, dtype=lanes, device=x.device) for _ in range(4))
    for t in range(x.shape[0]):
        summed.add_(torch.abs(group.step(source[t], out[t]), out=magnitude))
        torch.maximum(peak, magnitude, out=peak)
        sent.add_(magnitude.clamp_(max=1))  # whole numbers: 1 where a message went out
    events = group.active() if w is not None else reach.sent
    return out, events, _Reach(_rounded_up(summed), float(peak.max()), int(sent.sum(dtype=torch.float64)))


def _register(layer: GradedLayer, name: str, n: int | None, device: torch.device) -> torch.Tensor:
    """``vth`` or ``bias`` of ``layer`` as int64: one value, or one per neuron of a Dense or input group."""
    value = getattr(layer.config, name)
    if n is None:
        tensor = torch.as_tensor(value, dtype=torch.int64, device=device)
        if tensor.numel() != 1:
            raise invalid(f"{layer.name}: config.{name}", f"{tensor.numel()} values", "one value for feature maps")
        return tensor.reshape(())
    return per_neuron(name, value, n, device)
