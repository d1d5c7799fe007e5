"""Fake-quantized training: the chip's integer dynamics in floating point, with gradients.

``fake_quantize(model)`` wraps a spiking ``nn.Sequential`` (what ``loihi.compile`` accepts) in a
module whose forward pass computes, in float64 on integer values, exactly what the Loihi emulator
computes for the quantized network: even 8-bit weight mantissas and a weight exponent, decays
rounding toward zero, 21/23-bit wraps, voltage clipping, strict threshold, reset to zero, and the
refractory step of CUBA. The registers are re-derived from the current float parameters on every
call (``plan.plan_pair``), so training moves the float parameters and what is trained is
what the chip computes.

Gradients: every rounding, truncation and wrap is a straight-through estimator (its value is
exact, its gradient the identity: ``exact + (y - y.detach())`` adds an exact zero); spikes use the
layer's own surrogate at ``(v - vth) / scale`` (float membrane units), as in float training; resets
and refractory masks carry no gradient, as in the fused float layers.

Time: outputs are on the float model's clock. The chip's one-step delay per layer shifts layer l by
l steps and its bias acts from that step on (``loihi.run_network``), so the aligned chip network
computes the delay-free dynamics that this module computes; ``LoihiNetwork.trace`` and
``FakeQuantized(..., return_layers=True)`` agree spike for spike.

A hybrid model (the chip part, then host layers: ``Linear -> LIF ... -> RateDecoder -> Linear -> QuantumLayer ...``)
is cut where ``hybridai.deploy(model, chip="loihi")`` cuts it (``neuromorphic.segments.chip_front``): the chip part is
fake-quantized, the layers after it run as they are. The chip part computes in float64 and hands its spikes and
membranes over in the model's dtype (its first Linear's), as the emulator does, so a float32 model trains in float32.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hybridai.core.errors import ShapeError, invalid
from hybridai.neuromorphic.fixed_point import check_integer, wrap_f64
from hybridai.neuromorphic.loihi.compartments import V_LIMIT, check_quirks
from hybridai.neuromorphic.loihi.float_lanes import lava_wrap_f64
from hybridai.neuromorphic.loihi.plan import LoihiLayerPlan, max_count_of, parse, plan_pair
from hybridai.spiking.surrogate import Surrogate


class _Spike(torch.autograd.Function):
    """Heaviside ``v > vth`` forward; the layer's surrogate at ``(v - vth) / scale`` backward."""

    @staticmethod
    def forward(ctx: Any, v: torch.Tensor, vth: torch.Tensor, scale: float, surrogate: Surrogate) -> torch.Tensor:
        ctx.save_for_backward(v, vth)
        ctx.scale, ctx.surrogate = scale, surrogate
        return (v > vth).to(v.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        v, vth = ctx.saved_tensors
        shifted = (v - vth) / ctx.scale
        grad_v = ctx.surrogate.scaled_derivative(shifted, grad) / ctx.scale
        grad_vth = -grad_v.sum(0) if ctx.needs_input_grad[1] else None
        if grad_vth is not None and vth.ndim == 0:
            grad_vth = grad_vth.sum()
        return grad_v, grad_vth, None, None


def _ste(exact: torch.Tensor, approx: torch.Tensor) -> torch.Tensor:
    """``exact``'s value with ``approx``'s gradient (the added term is an exact zero)."""
    return exact + (approx - approx.detach())


def _trunc(y: torch.Tensor) -> torch.Tensor:
    return _ste(y.detach().trunc(), y)


class FakeQuantized(nn.Module):
    """``model`` computing the Loihi emulator's integer dynamics, trainable (see the module docstring).

    Args:
        model: what ``loihi.compile`` accepts; its parameters are shared (trained in place).
        quirks: ``"nengo"`` or ``"lava"``, as for the emulator.
        calibration: optional input counts bounding the first layer's input (as for ``compile``).
        rest: the layers after the chip part (a hybrid model's host layers), run as they are; None: none.
    """

    def __init__(
        self, model: nn.Module, *, quirks: str = "nengo", calibration: Any = None, rest: nn.Sequential | None = None
    ) -> None:
        super().__init__()
        self.quirks = check_quirks(quirks)
        parse(model, quirks)
        self.model = model
        self.max_count = max_count_of(calibration)
        self.rest = rest

    def plans(self) -> list[LoihiLayerPlan]:
        """The registers the current parameters quantize to (what ``loihi.compile`` would deploy)."""
        pairs, _ = parse(self.model, self.quirks)
        return [plan_pair(p, self.max_count if i == 0 else 1.0) for i, p in enumerate(pairs)]

    def forward(self, x: torch.Tensor, return_layers: bool = False) -> Any:
        """``x``: non-negative integer spike counts ``[T, B, F]``. With ``return_layers``, also the list of
        per-layer ``(spikes, membrane)`` tensors ``[T, B, N]`` (membrane before reset, float units)."""
        pairs, decoder = parse(self.model, self.quirks)
        dtype = pairs[0].linear.weight.dtype
        source = check_integer(x, "x", non_negative=True).double()
        width = pairs[0].linear.in_features
        if source.shape[2] != width:
            raise invalid("x.shape", tuple(x.shape), f"[T, B, {width}] time-major spike counts", ShapeError)
        layers = []
        for i, pair in enumerate(pairs):
            plan = plan_pair(pair, self.max_count if i == 0 else 1.0)
            spikes, membrane = self._layer(pair, plan, source)
            layers.append((spikes.to(dtype), membrane.to(dtype)))
            source = spikes
        spikes, membrane = layers[-1]
        out = membrane if pairs[-1].neuron.output == "membrane" else spikes
        if decoder is not None:
            out = decoder(out)
        if self.rest is not None:
            out = self.rest(out)
        return (out, layers) if return_layers else out

    def _layer(self, pair: Any, plan: LoihiLayerPlan, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        device, f64 = source.device, torch.float64
        n = plan.weights.shape[0]
        linear, neuron = pair.linear, pair.neuron

        def exact(t: torch.Tensor) -> torch.Tensor:
            return t.to(device=device, dtype=f64)

        most = float(source.detach().max()) if source.numel() else 0.0
        largest = most * float(plan.weights.abs().sum(1).max()) * 2.0 ** (6 + plan.weight_exp)
        if largest >= 2**52:  # the same bound as the emulator's (``run_network``): sums stay exact in float64
            raise invalid("x", f"spike counts up to {int(most)}", "counts small enough for exact sums", ShapeError)
        weight = linear.weight.to(f64)
        mantissas = _ste(exact(plan.weights), weight * plan.k)
        q_all = torch.matmul(source, (mantissas * 2.0 ** (6 + plan.weight_exp)).T)  # integer sums, exact in float64
        bias = _ste(exact(plan.bias), linear.bias.to(f64) * plan.scale) if linear.bias is not None else None
        vth = _ste(exact(plan.vth_mant) * 64, neuron.threshold.to(f64).expand(n) * plan.scale)
        keep_v = _ste(exact(4096 - plan.dv) / 4096, neuron.beta.to(f64).clamp(0, 1).expand(n))
        alpha = getattr(neuron, "alpha", None)
        keep_u = exact(4095 - plan.du) / 4096
        if alpha is not None:
            keep_u = _ste(keep_u, alpha.to(f64).clamp(0, 1).expand(n))
        nengo = self.quirks == "nengo"
        vmin, vmax = -float(V_LIMIT), float(V_LIMIT)  # vmin_exp 23 / vmax_exp 7 under nengo; Lava's clip
        batch = source.shape[1]
        u = torch.zeros(batch, n, dtype=f64, device=device)
        v = torch.zeros_like(u)
        refractory = torch.zeros(batch, n, dtype=torch.bool, device=device)
        spikes, membrane = [], []
        for q in q_all.unbind(0):
            if nengo:
                u = wrap_f64(_trunc(u * keep_u) + wrap_f64(q, 21), 23)
                u2 = wrap_f64(u + bias, 23) if bias is not None else u
                v = _trunc(v * keep_v) + u2
            else:
                u = lava_wrap_f64(_trunc(u * keep_u) + q)
                v = _trunc(v * keep_v) + u + (bias if bias is not None else 0.0)
            v = v.clamp(vmin, vmax)
            if plan.refractory > 1:  # CUBA: the step after a spike is held at 0 (refractory delay 2)
                v = v * (~refractory).to(f64)
            s = _Spike.apply(v, vth, plan.scale, neuron.surrogate)
            spikes.append(s)
            membrane.append(v / plan.scale)
            fired = s.detach() > 0
            v = v * (~fired).to(f64)
            refractory = fired
        return torch.stack(spikes), torch.stack(membrane)

    def extra_repr(self) -> str:
        return f"quirks={self.quirks!r}"


def fake_quantize(model: nn.Module, *, quirks: str = "nengo", calibration: Any = None) -> FakeQuantized:
    """Train what Loihi will compute: ``model`` (a chip model, or a hybrid ``nn.Sequential`` whose leading chip part,
    cut as ``hybridai.deploy(model, chip="loihi")`` cuts it, is followed by host layers) with its chip part
    fake-quantized (``quirks``, ``calibration`` as for the emulator) and the rest as it is, in the model's dtype."""
    if not isinstance(model, nn.Sequential):
        return FakeQuantized(model, quirks=quirks, calibration=calibration)  # refused there, by name
    from hybridai.neuromorphic.loihi.backend import LoihiBackend
    from hybridai.neuromorphic.segments import chip_front

    front, rest = chip_front(model, LoihiBackend(quirks=quirks).capabilities, chip="loihi")
    return FakeQuantized(front, quirks=quirks, calibration=calibration, rest=rest)
