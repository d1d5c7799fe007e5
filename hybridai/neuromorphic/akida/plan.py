"""Quantization of a trained torch ``nn.Sequential`` to Akida's integer formats, and its integer reference.

Accepted models: ``nn.Linear`` / ``nn.Conv2d`` layers, each followed by ``nn.ReLU`` (only the last one may
go without), an ``nn.MaxPool2d`` after a Conv2d (Akida pools inside its Conv2D), ``nn.Flatten`` before the
first ``Linear`` of a convolutional stack, ``nn.Dropout`` and ``nn.Identity`` (no-ops at inference).

Number formats (``shared/reference/akida.md``):

- inputs: signed int8 codes ``round(x / input_scale)`` in [-127, 127] for ``input_bits=8``; unsigned codes
  in [0, 2^b - 1] for b = 1, 2, 4 (the inputs must then be non-negative);
- weights: symmetric per output channel int8 in [-127, 127];
- bias: an int8 mantissa times ``2^bias_shift`` in accumulator units;
- requantization: ``code = round_half_up(acc * output_scales / 2^k)`` (``output_shift = -k``) with the
  activation scale of each layer taken from the largest activation seen on the calibration batch.

``quantize(model, calibration)`` gives the ``AkidaIntegerNetwork`` (the plan); ``network.AkidaNetwork`` runs it
and ``akida.integer_reference`` computes the same network with Akida's integer semantics. Everything here is
torch layout (NCHW, torch's flatten order); ``network`` converts.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import torch
from torch import nn

from hybridai.core.errors import ConfigError, ShapeError, invalid
from hybridai.neuromorphic.nodes import module_of
from hybridai.spiking.graph import LayerGraph, LayerNode, lower

BITS = (1, 2, 4, 8)
BUFFER_BITS = 28  # Akida's signed accumulator width
POST_OP_BITS = 32  # acc * output_scales saturates at signed 32 bits; the quantizer keeps products below 2^31
ACCEPTS = ("dense", "conv", "relu", "pool", "flatten")  # layer kinds (hybridai.spiking.kind_of)
SUPPORTED = "nn.Linear, nn.Conv2d (stride 1, or 2 with kernel 1 or 3; padding 0 or k//2 with odd k), nn.ReLU, "
SUPPORTED += "nn.MaxPool2d (after a Conv2d or its ReLU), nn.Flatten (before the first Linear), nn.Dropout, nn.Identity"


@dataclass(frozen=True)
class QuantizedLayer:
    """One Akida layer (Dense1D or Conv2D) in integer form, weights in torch layout.

    weights: int64 ``[out, in]`` (dense) or ``[out, in, k, k]`` (conv, not flipped); the other integer
    variables are int64 per output channel. ``in_shape`` / ``out_shape``: per-sample torch shapes.
    ``in_scale`` / ``out_scale``: float value of one input / output code. ``max_value`` and
    ``max_value_shift`` bound the ReLU (``acc <= max_value << max_value_shift``).
    """

    name: str
    kind: str  # "dense" or "conv"
    weights: torch.Tensor
    bias: torch.Tensor
    bias_shift: torch.Tensor
    output_scales: torch.Tensor
    output_shift: torch.Tensor
    max_value: torch.Tensor
    max_value_shift: torch.Tensor
    relu: bool
    input_bits: int
    output_bits: int
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    in_scale: float = 1.0
    out_scale: float = 1.0
    weight_scale: torch.Tensor | None = None  # float per output channel
    input_shift: int = 0
    stride: int = 1
    padding: int = 0  # symmetric zero padding (torch convention), 0 or k // 2
    pool: int = 0  # max-pooling window after the conv (0: none), applied to the accumulators
    pool_stride: int = 0

    @property
    def kernel(self) -> int:
        return int(self.weights.shape[-1]) if self.kind == "conv" else 1


@dataclass(frozen=True)
class AkidaIntegerNetwork:
    """A whole network in Akida's integer formats: input quantization plus the layers in order."""

    input_shape: tuple[int, ...]  # per sample, torch layout: (F,) or (C, H, W)
    input_bits: int
    input_scale: float
    layers: tuple[QuantizedLayer, ...]

    @property
    def input_signed(self) -> bool:
        return self.input_bits == 8

    @property
    def output_scale(self) -> float:
        return self.layers[-1].out_scale


def _is_int(value: Any) -> bool:
    """An int (Python or numpy), not a bool: compared with ``==`` safely (a tensor or array is not)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def check_formats(input_bits: Any, activation_bits: Any, output_bits: Any, weight_bits: Any) -> tuple[int, int, int]:
    """``(input_bits, activation_bits, output_bits)`` as ints, or a ConfigError naming the first value Akida
    cannot take (bits in ``BITS``; weights 8 only)."""
    named = {"input_bits": input_bits, "activation_bits": activation_bits, "output_bits": output_bits}
    for argument, value in named.items():
        if not _is_int(value) or value not in BITS:
            raise invalid(argument, value, f"one of {BITS}")
    if not _is_int(weight_bits) or weight_bits != 8:
        raise invalid("weight_bits", weight_bits, "8 (Akida v2 layers store int8 weights)")
    return int(input_bits), int(activation_bits), int(output_bits)


def _conv_geometry(name: str, conv: nn.Conv2d) -> tuple[int, int, int]:
    """(kernel, stride, padding) of a Conv2d that Akida computes exactly, else a ConfigError naming it."""
    kh, kw = conv.kernel_size
    sh, sw = conv.stride
    pad = conv.padding
    if conv.groups != 1 or conv.dilation != (1, 1) or conv.padding_mode != "zeros" or kh != kw or sh != sw:
        got = f"kernel={conv.kernel_size}, stride={conv.stride}, groups={conv.groups}, dilation={conv.dilation}"
        raise ConfigError(
            f"layer {name} ({got}, padding_mode={conv.padding_mode!r}) has no exact Akida Conv2D; accepted: "
            "square kernels, equal strides, groups=1, dilation=1, padding_mode='zeros'"
        )
    k, s = kh, sh
    if pad == "valid":
        pad = (0, 0)
    elif pad == "same":
        pad = (k // 2, k // 2) if k % 2 == 1 else pad
    if s not in (1, 2) or (s == 2 and k not in (1, 3)):
        raise ConfigError(
            f"layer {name} has stride={conv.stride} with kernel {k}; "
            "accepted by Akida: stride 1, or 2 with kernel 1 or 3"
        )
    if pad == (0, 0):
        return k, s, 0
    if k % 2 == 1 and pad == (k // 2, k // 2):
        return k, s, k // 2
    raise ConfigError(
        f"layer {name} has padding={conv.padding} with kernel {k}; accepted: 0 (Akida VALID) or k//2 with odd k "
        "(Akida SAME); other paddings have no exact Akida equivalent"
    )


@dataclass
class _Block:
    """A Linear/Conv2d with the ReLU and MaxPool2d that follow it (in either order), as graph nodes."""

    node: LayerNode
    after_flatten: bool
    relu: bool = False
    pool: LayerNode | None = None
    last: int = 0  # position in the graph of the block's last node: its output is the block's activation

    @property
    def name(self) -> str:
        return self.node.label

    @property
    def module(self) -> nn.Linear | nn.Conv2d:
        module = self.node.module
        assert isinstance(module, nn.Linear | nn.Conv2d), f"{self.node.where}: a block starts at a Linear or Conv2d"
        return module


def _pool_geometry(name: str, pool: nn.MaxPool2d) -> tuple[int, int]:
    """(size, stride) of a MaxPool2d that Akida's Conv2D pooling computes exactly, else a ConfigError."""
    size, stride = pool.kernel_size, pool.stride if pool.stride is not None else pool.kernel_size
    pair = lambda v: tuple(v) if isinstance(v, tuple | list) else (v, v)  # noqa: E731
    (ph, pw), (sh, sw) = pair(size), pair(stride)
    if ph != pw or sh != sw or pair(pool.padding) != (0, 0) or pair(pool.dilation) != (1, 1) or pool.ceil_mode:
        raise ConfigError(
            f"layer {name} (kernel_size={size}, stride={stride}, padding={pool.padding}, dilation={pool.dilation}, "
            f"ceil_mode={pool.ceil_mode}) has no exact Akida pooling; accepted: square windows, equal strides, "
            "padding=0, dilation=1, ceil_mode=False"
        )
    return ph, sh


def _parse(model: nn.Module) -> tuple[LayerGraph, list[_Block]]:
    """The graph of ``model`` and its compute blocks in order; errors name the offending layer and what is
    supported."""
    if not isinstance(model, nn.Sequential):
        raise invalid("model", type(model).__name__, f"an nn.Sequential of {SUPPORTED}")
    graph = lower(model, target="akida", accepts=ACCEPTS, supported=SUPPORTED)
    found: list[_Block] = []
    flattened = False
    for position, node in enumerate(graph):
        name, prev = node.label, found[-1] if found else None
        if node.time_distributed:
            raise invalid(node.where, f"TimeDistributed({node.type_name})", "layers unwrapped: Akida runs frames")
        if node.kind in ("dense", "conv"):
            if prev is not None and not prev.relu:
                raise ConfigError(
                    f"layer {prev.name} is not followed by nn.ReLU; accepted: only the last Linear/Conv2d "
                    "may go without ReLU (Akida's intermediate layers carry unsigned activations)"
                )
            if node.kind == "conv" and flattened:
                raise ConfigError(f"layer {name} follows nn.Flatten; accepted: Conv2d layers before the Flatten")
            if node.kind == "dense" and prev is not None and prev.node.kind == "conv" and not flattened:
                raise ConfigError(
                    f"layer {name} follows a Conv2d without nn.Flatten; accepted: an nn.Flatten() between"
                )
            if node.kind == "conv":
                _conv_geometry(name, module_of(node, nn.Conv2d))
            first_dense = flattened and not any(b.node.kind == "dense" for b in found)
            found.append(_Block(node, first_dense, last=position))
        elif node.kind == "relu":
            if prev is None or prev.relu or prev.last != position - 1:
                raise ConfigError(
                    f"layer {name} does not follow a Linear or Conv2d; accepted: ReLU right after one (or after "
                    "the MaxPool2d of a Conv2d)"
                )
            prev.relu, prev.last = True, position
        elif node.kind == "pool":
            if prev is None or prev.node.kind != "conv" or prev.pool is not None or prev.last != position - 1:
                raise ConfigError(
                    f"layer {name} does not follow a Conv2d (or its ReLU); accepted: one MaxPool2d right after a "
                    "Conv2d or its ReLU (Akida pools inside Conv2D)"
                )
            _pool_geometry(name, module_of(node, nn.MaxPool2d))
            prev.pool, prev.last = node, position
        else:  # flatten
            flatten = module_of(node, nn.Flatten)
            if (flatten.start_dim, flatten.end_dim) != (1, -1) or flattened:
                raise ConfigError(
                    f"layer {name} (Flatten(start_dim={flatten.start_dim}, end_dim={flatten.end_dim})); accepted: "
                    "one nn.Flatten() with the default dims, before the first Linear"
                )
            flattened = True
    if not found:
        raise invalid("model", "an nn.Sequential without Linear or Conv2d layers", f"a stack of {SUPPORTED}")
    if found[-1].pool is not None and not found[-1].relu:
        raise ConfigError(f"layer {found[-1].name} has a MaxPool2d but no ReLU; accepted: pooling after a ReLU layer")
    return graph, found


def check_model(model: nn.Module) -> None:
    """Raise a ConfigError naming the first layer of ``model`` that Akida cannot run exactly (before calibrating)."""
    _parse(model)


def _check_parameters(found: list[_Block]) -> None:
    """Every weight and bias finite (a NaN has no integer code), else a ConfigError naming the layer."""
    for block in found:
        for name in ("weight", "bias"):
            tensor = getattr(block.module, name, None)
            if tensor is not None and not bool(torch.isfinite(tensor.detach()).all()):
                raise invalid(f"layer {block.name} {name}", "a tensor containing NaN or inf", "finite values")


def _float_activations(graph: LayerGraph, x: torch.Tensor, found: list[_Block]) -> list[torch.Tensor]:
    """The float output of each block (after its ReLU and pooling) on the calibration batch: the graph's
    layers run in order (the skipped Identity and Dropout are no-ops at inference)."""
    ends = {b.last for b in found}
    outs: list[torch.Tensor] = []
    with torch.no_grad():
        for position, node in enumerate(graph):
            x = node.module(x)
            if position in ends:
                outs.append(x)
    return outs


def _code_max(bits: int) -> int:
    """The largest code of a ``bits``-bit format: 127 for signed 8 bits, ``2^bits - 1`` for unsigned ones."""
    return 127 if bits == 8 else 2**bits - 1


def _round_half_up(x: torch.Tensor) -> torch.Tensor:
    return torch.floor(x + 0.5)


def _requant(m: float, bound: int, relu: bool, code_max: int) -> tuple[int, int, int, int]:
    """(output_scales, output_shift, max_value, max_value_shift) approximating ``code = acc * m``.

    output_scales / 2^k ~ m with output_scales <= 255, the largest k whose products acc * output_scales stay
    below 2^31 (``bound`` is the largest |acc|; with ReLU, the clip at max_value << max_value_shift, set just
    above the accumulator that saturates the output, bounds it as well).
    """
    k = math.floor(math.log2(255.0 / m))
    while True:
        scale = round(m * 2.0**k)
        if scale > 255:
            k -= 1
            continue
        mv, mvs = 127, 31  # Akida's defaults: no clipping within the 28-bit buffer
        worst = bound
        if relu:
            threshold = max(1, math.ceil((code_max - 0.5) * 2.0**k / scale))  # acc >= this saturates the code
            mvs = max(0, math.ceil(math.log2(threshold / 255.0))) if threshold > 255 else 0
            mv = math.ceil(threshold / 2**mvs)
            if mv > 255:
                mvs, mv = mvs + 1, math.ceil(threshold / 2 ** (mvs + 1))
            worst = min(bound, mv << mvs)
        if worst * scale < 2 ** (POST_OP_BITS - 1) or scale <= 1:
            return scale, -k, mv, mvs
        k -= 1


def quantize(
    model: nn.Module,
    calibration: torch.Tensor,
    *,
    input_bits: int = 8,
    activation_bits: int = 8,
    output_bits: int = 8,
    weight_bits: int = 8,
) -> AkidaIntegerNetwork:
    """Quantize a trained ``nn.Sequential`` for Akida, taking activation ranges from ``calibration``.

    calibration: a float batch in the model's input layout, ``[N, F]`` or ``[N, C, H, W]``.
    input_bits: bits of the input codes (8: signed; 1, 2, 4: unsigned, inputs must be >= 0).
    activation_bits: bits of the unsigned activations between layers. output_bits: bits of the last layer's
    outputs (signed 8-bit when the last layer has no ReLU). weight_bits: 8 (Akida v2's weights).
    """
    input_bits, activation_bits, output_bits = check_formats(input_bits, activation_bits, output_bits, weight_bits)
    graph, found = _parse(model)
    _check_parameters(found)
    calibration = _check_calibration(model, calibration, found[0])
    try:
        acts = _float_activations(graph, calibration, found)
    except RuntimeError as exc:
        raise ShapeError(f"calibration of shape {tuple(calibration.shape)} does not fit the model: {exc}") from None
    input_scale = _input_scale(calibration, input_bits)
    input_shape = tuple(calibration.shape[1:])
    layers: list[QuantizedLayer] = []
    shape, scale, bits = input_shape, input_scale, input_bits
    for i, (block, act) in enumerate(zip(found, acts, strict=True)):
        out_bits = output_bits if i == len(found) - 1 else activation_bits
        layer = _quantize_block(block, act, shape, scale, bits, out_bits)
        layers.append(layer)
        shape, scale, bits = layer.out_shape, layer.out_scale, out_bits
    return AkidaIntegerNetwork(input_shape, input_bits, input_scale, tuple(layers))


def _check_calibration(model: nn.Module, calibration: Any, first: _Block) -> torch.Tensor:
    """``calibration`` on the model's device and dtype, or an error naming the rank the first layer takes."""
    if not torch.is_tensor(calibration) or not calibration.is_floating_point():
        raise invalid("calibration", type(calibration).__name__, "a float tensor batch [N, F] or [N, C, H, W]")
    want_rank = 4 if first.node.kind == "conv" or first.after_flatten else 2
    if calibration.dim() != want_rank or calibration.shape[0] < 1:
        raise ShapeError(
            f"calibration has shape {tuple(calibration.shape)}; accepted: a non-empty batch of rank {want_rank} "
            f"({'[N, C, H, W]' if want_rank == 4 else '[N, F]'}) for layer {first.name}"
        )
    if not bool(torch.isfinite(calibration).all()):
        raise invalid("calibration", "a tensor containing NaN or inf", "finite values (activation ranges come from it)")
    param = next(model.parameters())
    return calibration.detach().to(device=param.device, dtype=param.dtype)


def _input_scale(calibration: torch.Tensor, input_bits: int) -> float:
    """The float value of one input code: the largest |input| maps onto the largest code."""
    x_min, x_max = float(calibration.min()), float(calibration.abs().max())
    if input_bits < 8 and x_min < 0:
        raise invalid(
            "input_bits",
            input_bits,
            f"8 (signed codes) for this calibration, whose minimum is {x_min:.4g}; "
            "1, 2 or 4 bits take non-negative inputs",
        )
    return (x_max / _code_max(input_bits)) or 1.0


def _quantize_block(
    block: _Block, act: torch.Tensor, shape: tuple[int, ...], scale: float, bits: int, out_bits: int
) -> QuantizedLayer:
    """One block as an Akida layer: its input has ``shape``, codes of ``bits`` bits worth ``scale`` each; its
    outputs ``out_bits`` bits scaled to the largest calibration activation ``act``."""
    name, module, relu = block.name, block.module, block.relu
    code_max = _code_max(out_bits)
    if out_bits < 8 and not relu:
        raise invalid("output_bits", out_bits, f"8 when the last layer ({name}) has no ReLU (its outputs are signed)")
    weights, weight_scale, bias = _quantize_weights(module, scale)
    top = float(act.max()) if relu else float(act.abs().max())
    out_scale = (top / code_max) or 1.0
    fan_bound = weights.reshape(weights.shape[0], -1).abs().sum(dim=1) * _code_max(bits)
    variables = _channel_variables(bias, fan_bound, scale * weight_scale / out_scale, relu, code_max)
    geometry = _geometry(block, shape)
    return QuantizedLayer(
        name=name,
        weights=weights,
        relu=relu,
        input_bits=bits,
        output_bits=out_bits,
        in_shape=tuple(shape),
        in_scale=scale,
        out_scale=out_scale,
        weight_scale=weight_scale.to(torch.float32),
        **variables,
        **geometry,
    )


def _quantize_weights(
    module: nn.Linear | nn.Conv2d, in_scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(int8 weights as int64, float scale per output channel, bias in accumulator units, rounded)."""
    w = module.weight.detach().to(torch.float64).cpu()
    b = module.bias.detach().to(torch.float64).cpu() if module.bias is not None else torch.zeros(w.shape[0])
    w_scale = w.reshape(w.shape[0], -1).abs().amax(dim=1) / 127.0
    w_scale = torch.where(w_scale > 0, w_scale, torch.ones_like(w_scale))
    wq = _round_half_up(w / w_scale.view(-1, *([1] * (w.dim() - 1)))).clamp(-127, 127).to(torch.int64)
    return wq, w_scale, torch.round(b / (in_scale * w_scale))


class _ChannelVariables(TypedDict):
    """The int64 per-channel variables of a ``QuantizedLayer`` (``_channel_variables``)."""

    bias: torch.Tensor
    bias_shift: torch.Tensor
    output_scales: torch.Tensor
    output_shift: torch.Tensor
    max_value: torch.Tensor
    max_value_shift: torch.Tensor


def _channel_variables(
    bias: torch.Tensor, fan_bound: torch.Tensor, requant: torch.Tensor, relu: bool, code_max: int
) -> _ChannelVariables:
    """Per output channel: the bias as an int8 mantissa and shift, and the requantization of ``code = acc *
    requant`` (``_requant``) bounded by the largest accumulator (``fan_bound`` plus the bias)."""
    names = ("bias", "bias_shift", "output_scales", "output_shift", "max_value", "max_value_shift")
    values: dict[str, list[int]] = {n: [] for n in names}
    for c in range(len(bias)):
        shift = 0
        while abs(round(float(bias[c]) / 2**shift)) > 127:
            shift += 1
        mantissa = round(float(bias[c]) / 2**shift)
        bound = min(int(fan_bound[c]) + abs(mantissa) * 2**shift, 2 ** (BUFFER_BITS - 1))
        row = (mantissa, shift, *_requant(float(requant[c]), bound, relu, code_max))
        for n, v in zip(names, row, strict=True):
            values[n].append(v)
    as_int64 = {n: torch.tensor(v, dtype=torch.int64) for n, v in values.items()}
    return _ChannelVariables(
        bias=as_int64["bias"],
        bias_shift=as_int64["bias_shift"],
        output_scales=as_int64["output_scales"],
        output_shift=as_int64["output_shift"],
        max_value=as_int64["max_value"],
        max_value_shift=as_int64["max_value_shift"],
    )


def _geometry(block: _Block, shape: tuple[int, ...]) -> dict[str, Any]:
    """kind, stride, padding, pooling and output shape of a block whose input has ``shape`` (per sample)."""
    name = block.name
    if block.node.kind == "dense":
        linear = module_of(block.node, nn.Linear)
        if math.prod(shape) != linear.in_features:
            raise ShapeError(
                f"layer {name} has in_features={linear.in_features} but receives {math.prod(shape)} values "
                f"(shape {shape}); accepted: a model whose layers fit the calibration batch"
            )
        return {"kind": "dense", "out_shape": (linear.out_features,)}
    conv = module_of(block.node, nn.Conv2d)
    k, stride, pad = _conv_geometry(name, conv)
    _, h, wd = shape
    out_shape = (conv.out_channels, (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1)
    geometry = {"kind": "conv", "stride": stride, "padding": pad, "out_shape": out_shape}
    if block.pool is None:
        return geometry
    pool, pool_stride = _pool_geometry(block.pool.label, module_of(block.pool, nn.MaxPool2d))
    pooled = tuple((n - pool) // pool_stride + 1 for n in out_shape[1:])
    # Akida pools VALID after a VALID conv and TF-SAME after a SAME one: exact where SAME pads nothing
    same = tuple(-(-n // pool_stride) for n in out_shape[1:])
    pads = tuple(max((o - 1) * pool_stride + pool - n, 0) for o, n in zip(same, out_shape[1:], strict=True))
    if min(pooled) < 1 or (pad and (same != pooled or any(pads))):
        raise ConfigError(
            f"layer {block.pool.label} pools a {out_shape[1]}x{out_shape[2]} map with window "
            f"{pool}, stride {pool_stride} after a padded Conv2d; Akida pools such maps TF-SAME "
            f"({same[0]}x{same[1]}), torch gives {pooled[0]}x{pooled[1]}; accepted: windows that tile "
            "the map exactly, or padding=0 on the Conv2d"
        )
    return {**geometry, "pool": pool, "pool_stride": pool_stride, "out_shape": (out_shape[0], *pooled)}


def quantize_input(net: AkidaIntegerNetwork, x: torch.Tensor) -> torch.Tensor:
    """Input codes (int64, torch layout) of a float batch: ``round(x / input_scale)`` clipped to the input range."""
    shape = tuple(x.shape) if torch.is_tensor(x) else None
    if shape is None or shape[1:] != net.input_shape or len(shape) != len(net.input_shape) + 1 or shape[0] == 0:
        got = shape if shape is not None else type(x).__name__
        sizes = ", ".join(map(str, net.input_shape))
        raise ShapeError(f"x has shape {got}; accepted: a float tensor [B, {sizes}] with B >= 1")
    if x.is_complex() or not bool(torch.isfinite(x).all()):
        raise invalid("x", "a tensor containing NaN, inf or complex values", "finite real values", ShapeError)
    low, high = (-127, 127) if net.input_signed else (0, 2**net.input_bits - 1)
    return _round_half_up(x.detach().to(torch.float64) / net.input_scale).clamp(low, high).to(torch.int64)
