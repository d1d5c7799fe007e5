"""The runner of Akida: a quantized network in BrainChip's engine, built as an ``akida.Model``, run, counted.

``AkidaNetwork`` (what ``akida.compile`` returns) takes the integer network that ``plan.quantize`` derives
from a trained torch ``nn.Sequential`` and builds an ``akida.Model`` (InputData, Dense1D, Conv2D v2 layers)
holding the integer variables (``build_model``). Its ``run(x)`` quantizes the float input, runs Akida's engine
(software on this CPU when no chip is present), dequantizes the outputs to the float model's layout and counts
activity with the integer reference, which the engine matches bit for bit (checked on every run).

Layout: torch is NCHW and flattens (C, H, W); Akida is NHWC and flattens (H, W, C). Conv kernels are stored
spatially flipped (Akida computes a true convolution); a Dense after a Flatten gets its weight rows permuted.
Akida is event based: a zero activation costs nothing, so synaptic operations count non-zero inputs only.

``integer_reference`` is the network in Akida's integer semantics (``shared/reference/akida.md``, plus the
measured saturation of ``acc * output_scales`` at signed 32 bits), in torch: int64 results, float64
convolutions (exact for these magnitudes), on the device of its input.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.core.errors import MissingExtraError
from hybridai.neuromorphic.akida.plan import (
    BUFFER_BITS,
    POST_OP_BITS,
    AkidaIntegerNetwork,
    QuantizedLayer,
    quantize_input,
)
from hybridai.neuromorphic.macs import dense_macs


@dataclass(frozen=True)
class LayerTrace:
    """Integer tensors of one layer on a batch (torch layout): input codes, accumulators (before any pooling),
    output codes."""

    inputs: torch.Tensor
    accumulators: torch.Tensor
    outputs: torch.Tensor


def _per_channel(v: torch.Tensor, dims: int, device: torch.device) -> torch.Tensor:
    return v.to(device).view(1, -1, *([1] * (dims - 2)))


def layer_reference(layer: QuantizedLayer, x: torch.Tensor) -> LayerTrace:
    """One layer with Akida's integer semantics (``shared/reference/akida.md``) on int64 codes ``x``."""
    dev = x.device
    xs = (x << layer.input_shift).to(torch.float64)
    w = layer.weights.to(device=dev, dtype=torch.float64)
    if layer.kind == "conv":
        acc = torch.nn.functional.conv2d(xs, w, stride=layer.stride, padding=layer.padding)
    else:
        acc = xs.reshape(xs.shape[0], -1) @ w.T
    acc = acc.round().to(torch.int64)
    pc = lambda v: _per_channel(v, acc.dim(), dev)  # noqa: E731
    acc = acc + (pc(layer.bias) << pc(layer.bias_shift))
    half = 2 ** (BUFFER_BITS - 1)
    acc = acc.clamp(-half, half - 1)
    y = acc
    if layer.pool:  # max commutes with the (monotone) ReLU and requantization that follow
        y = torch.nn.functional.max_pool2d(acc.to(torch.float64), layer.pool, layer.pool_stride).to(torch.int64)
    if layer.relu:
        clip = pc(layer.max_value) << pc(layer.max_value_shift).clamp(max=40)
        y = torch.minimum(y.clamp(min=0), clip)
    post = 2 ** (POST_OP_BITS - 1)
    y = (y * pc(layer.output_scales)).clamp(-post, post - 1)  # measured: the product saturates at int32
    shift = pc(layer.output_shift)
    left = (y << shift.clamp(min=0, max=31)).clamp(-post, post - 1)
    k = (-shift).clamp(min=0)
    right = (y + ((1 << k) >> 1)) >> k  # round half up: (y + 2^(k-1)) >> k, and y when k == 0
    y = torch.where(shift >= 0, left, right)
    if layer.output_bits < 8:
        y = y.clamp(0, 2**layer.output_bits - 1)
    else:
        y = y.clamp(0, 127) if layer.relu else y.clamp(-128, 127)
    return LayerTrace(inputs=x, accumulators=acc, outputs=y)


def integer_reference(net: AkidaIntegerNetwork, codes: torch.Tensor) -> list[LayerTrace]:
    """Run the integer network on input codes (from ``quantize_input``); one trace per layer, in order."""
    traces: list[LayerTrace] = []
    x = codes
    for layer in net.layers:
        trace = layer_reference(layer, x.reshape(x.shape[0], *layer.in_shape))
        traces.append(trace)
        x = trace.outputs
    return traces


def import_akida() -> Any:
    """The ``akida`` module, or MissingExtraError naming the ``akida`` extra."""
    try:
        import akida
    except ImportError:
        raise MissingExtraError("akida", "akida", "the Akida backend") from None
    return akida


def _akida_weights(layer: QuantizedLayer) -> np.ndarray:
    """The layer's int8 weights in Akida's layout: conv (k, k, in, out) flipped; dense (X, F) in H, W, C order."""
    w = layer.weights
    if layer.kind == "conv":
        return w.flip(-1, -2).permute(2, 3, 1, 0).numpy().astype(np.int8)
    if len(layer.in_shape) == 3:  # after a Flatten: torch rows are (C, H, W), Akida's (H, W, C)
        c, h, wd = layer.in_shape
        w = w.reshape(-1, c, h, wd).permute(0, 2, 3, 1).reshape(w.shape[0], -1)
    return w.T.contiguous().numpy().astype(np.int8)


def _akida_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    return (1, 1, shape[0]) if len(shape) == 1 else (shape[1], shape[2], shape[0])


def build_model(net: AkidaIntegerNetwork) -> Any:
    """An ``akida.Model`` computing ``net``: InputData then one Dense1D or Conv2D per layer, variables set."""
    akida = import_akida()
    model = akida.Model()
    model.add(akida.InputData(_akida_shape(net.input_shape), input_bits=net.input_bits))
    for layer in net.layers:
        act = akida.ActivationType.ReLU if layer.relu else akida.ActivationType.NoActivation
        if layer.kind == "conv":
            if layer.padding == 0:
                padding = akida.Padding.Valid
            else:  # torch pads k//2 on both sides; with stride 2 Akida's SameUpper does that, Same pads TF-style
                padding = akida.Padding.Same if layer.stride == 1 else akida.Padding.SameUpper
            pooling = {}
            if layer.pool:
                pooling = {"pool_type": akida.PoolType.Max, "pool_size": layer.pool, "pool_stride": layer.pool_stride}
            model.add(
                akida.Conv2D(
                    int(layer.weights.shape[0]),
                    layer.kernel,
                    kernel_stride=layer.stride,
                    padding=padding,
                    output_bits=layer.output_bits,
                    activation=act,
                    **pooling,
                )
            )
        else:
            model.add(akida.Dense1D(int(layer.weights.shape[0]), output_bits=layer.output_bits, activation=act))
        target = model.layers[-1]
        target.set_variable("weights", _akida_weights(layer))
        values = {
            "bias": (layer.bias, np.int8),
            "bias_shift": (layer.bias_shift, np.uint8),
            "output_scales": (layer.output_scales, np.uint8),
            "output_shift": (layer.output_shift, np.int8),
        }
        if layer.relu:
            values["max_value"] = (layer.max_value, np.uint8)
            values["max_value_shift"] = (layer.max_value_shift, np.uint8)
        for name, (value, dtype) in values.items():
            target.set_variable(name, value.numpy().astype(dtype))
        shift = target.get_variable("input_shift")
        target.set_variable("input_shift", np.full(shift.shape, layer.input_shift, dtype=shift.dtype))
    return model


def _to_akida_input(net: AkidaIntegerNetwork, codes: torch.Tensor) -> np.ndarray:
    x = codes.cpu()
    x = x.reshape(x.shape[0], 1, 1, -1) if len(net.input_shape) == 1 else x.permute(0, 2, 3, 1)
    return np.ascontiguousarray(x.numpy().astype(np.int8 if net.input_signed else np.uint8))


def _from_akida_output(layer: QuantizedLayer, y: np.ndarray) -> torch.Tensor:
    out = torch.from_numpy(np.asarray(y, dtype=np.int64))
    if layer.kind == "dense":
        return out.reshape(out.shape[0], -1)
    return out.permute(0, 3, 1, 2).contiguous()


def count_activity(net: AkidaIntegerNetwork, traces: list[LayerTrace]) -> tuple[LayerActivity, ...]:
    """Events per layer from integer traces, summed over the batch.

    neurons: potentials the layer computes per sample (a pooling conv's positions before pooling).
    spikes: non-zero output codes (after pooling). synaptic_ops: non-zero input codes times their fan-out
    (dense: the units; conv: for each output position, the non-zero inputs in its receptive field, times the
    output channels). neuron_updates: neurons x samples. active_updates: potentials whose accumulator is non-zero.
    """
    rows = []
    for layer, trace in zip(net.layers, traces, strict=True):
        samples = trace.inputs.shape[0]
        nonzero_in = trace.inputs != 0
        if layer.kind == "conv":
            per_position = nonzero_in.sum(dim=1, keepdim=True).to(torch.float64)
            ones = torch.ones(1, 1, layer.kernel, layer.kernel, dtype=torch.float64, device=per_position.device)
            field = torch.nn.functional.conv2d(per_position, ones, stride=layer.stride, padding=layer.padding)
            syn = int(field.sum().round().item()) * int(layer.weights.shape[0])
        else:
            syn = int(nonzero_in.sum().item()) * int(layer.weights.shape[0])
        neurons = int(trace.accumulators[0].numel())  # potentials computed (before any pooling)
        rows.append(
            LayerActivity(
                name=layer.name,
                neurons=neurons,
                spikes=int((trace.outputs != 0).sum().item()),
                synaptic_ops=syn,
                neuron_updates=neurons * samples,
                active_updates=int((trace.accumulators != 0).sum().item()),
            )
        )
    return tuple(rows)


class AkidaNetwork(CompiledNetwork):
    """A network quantized to Akida's formats, held as an ``akida.Model`` and run by BrainChip's engine.

    ``quantized`` holds the integer network (torch layout); ``model`` the ``akida.Model``;
    ``last_mismatches`` the output codes of the last run where the engine and the integer reference differed
    (0 expected; a warning is raised otherwise, since the activity counts come from the reference).
    """

    backend = "akida"

    def __init__(self, quantized: AkidaIntegerNetwork, source: torch.nn.Module | None = None) -> None:
        self.quantized = quantized
        self.model = build_model(quantized)
        self.last_mismatches = 0
        self._input_macs = dense_macs(source, quantized.input_shape) if source is not None else None

    @property
    def macs_per_sample(self) -> int | None:
        """Multiply-accumulates per sample of the float model (Linear and Conv2d), for a dense baseline."""
        return self._input_macs

    def forward_codes(self, codes: torch.Tensor) -> torch.Tensor:
        """Run Akida's engine on input codes (int64, torch layout); output codes (int64, torch layout)."""
        y = self.model.forward(_to_akida_input(self.quantized, codes))
        return _from_akida_output(self.quantized.layers[-1], y)

    def run(self, x: torch.Tensor) -> ChipRun:
        """Quantize ``x`` ([B, F] or [B, C, H, W] float), run the engine, dequantize, count events."""
        codes = quantize_input(self.quantized, x)
        out_codes = self.forward_codes(codes)
        traces = integer_reference(self.quantized, codes)
        ref = traces[-1].outputs.cpu()
        self.last_mismatches = int((ref != out_codes).sum().item())
        if self.last_mismatches:
            warnings.warn(
                f"akida engine and integer reference differ in {self.last_mismatches} output codes; "
                "activity counts come from the reference",
                RuntimeWarning,
                stacklevel=2,
            )
        outputs = (out_codes.to(torch.float32) * self.quantized.output_scale).to(x.device)
        return ChipRun(
            outputs=outputs,
            layers=count_activity(self.quantized, traces),
            samples=int(x.shape[0]),
            time_steps=1,
            latency_steps=0,
        )

    def describe(self) -> list[dict[str, Any]]:
        """Per layer: kind, shapes (torch and Akida), bits, scales and the integer shifts, per channel."""
        rows = []
        for layer, akl in zip(self.quantized.layers, self.model.layers[1:], strict=True):
            rows.append(
                {
                    "name": layer.name,
                    "kind": str(akl.parameters.layer_type).rsplit(".", 1)[-1],
                    "input_shape": layer.in_shape,
                    "output_shape": layer.out_shape,
                    "akida_output_shape": tuple(int(d) for d in akl.output_dims),
                    "kernel": layer.kernel,
                    "stride": layer.stride,
                    "padding": "valid" if layer.padding == 0 else "same",
                    "max_pool": (layer.pool, layer.pool_stride) if layer.pool else None,
                    "activation": "ReLU" if layer.relu else "none",
                    "weight_bits": 8,
                    "input_bits": layer.input_bits,
                    "output_bits": layer.output_bits,
                    "input_scale": layer.in_scale,
                    "output_scale": layer.out_scale,
                    "weight_scale": layer.weight_scale.tolist() if layer.weight_scale is not None else None,
                    "bias_shift": layer.bias_shift.tolist(),
                    "output_scales": layer.output_scales.tolist(),
                    "output_shift": layer.output_shift.tolist(),
                    "max_value": layer.max_value.tolist(),
                    "max_value_shift": layer.max_value_shift.tolist(),
                }
            )
        return rows

    def __repr__(self) -> str:
        kinds = ", ".join(f"{r['kind']}({r['name']})" for r in self.describe())
        return f"<AkidaNetwork input_bits={self.quantized.input_bits} layers=[{kinds}]>"
