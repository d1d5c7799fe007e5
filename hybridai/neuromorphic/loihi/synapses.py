"""Loihi 1 synapses and feed-forward chains of layers, on the compartment emulator of ``loihi``.

Weight formats per quirk set, the weight exponent, the one-step synaptic delay and ``run_network``
(see the ``compartments`` module docstring for the rules and their sources). Import from ``loihi``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from hybridai.core.errors import ShapeError, bounded_int, invalid
from hybridai.neuromorphic.fixed_point import check_integer
from hybridai.neuromorphic.loihi.compartments import WEIGHT_EXP_RANGE, CompartmentConfig, Compartments, check_quirks


def weight_range(quirks: str, weights: torch.Tensor | None = None) -> tuple[int, int, str]:
    """(low, high, rule) of the weight mantissas a quirk set accepts for this matrix."""
    if check_quirks(quirks) == "nengo":
        return -254, 254, "even integers in [-254, 254] (nengo-loihi's mixed-sign format: 7-bit magnitudes x 2)"
    if weights is not None and weights.numel() and bool((weights >= 0).all()):
        return 0, 255, "integers in [0, 255] (Lava, all excitatory)"
    if weights is not None and weights.numel() and bool((weights <= 0).all()):
        return -255, 0, "integers in [-255, 0] (Lava, all inhibitory)"
    return -256, 255, "integers in [-256, 255] (Lava, mixed signs: the least significant bit is dropped)"


def check_weights(weights: Any, weight_exp: Any, quirks: str = "nengo", name: str = "weights") -> torch.Tensor:
    """Validate a weight mantissa matrix ``[N, F]`` and its exponent; return the mantissas that act (int64).

    Lava drops the least significant bit of a mixed-sign matrix (``(w >> 1) << 1``); nengo-loihi
    requires even mantissas (it stores 7-bit magnitudes doubled).
    """
    w = check_integer(weights, name, rank=2)
    bounded_int(f"{name} weight_exp", weight_exp, *WEIGHT_EXP_RANGE)
    low, high, rule = weight_range(quirks, w)
    if (w < low).any() or (w > high).any():
        raise invalid(name, f"tensor with range [{int(w.min())}, {int(w.max())}]", rule)
    if quirks == "nengo" and (w % 2 != 0).any():
        raise invalid(name, f"tensor with odd value {int(w[w % 2 != 0][0])}", rule)
    if quirks == "lava" and low == -256:
        w = (w >> 1) << 1
    return w


def synaptic_input(counts: torch.Tensor, weights: torch.Tensor, weight_exp: int, quirks: str) -> torch.Tensor:
    """q [T, B, N] (int64) that input spike counts [T, B, F] deliver through mantissas ``weights`` [N, F]
    (checked by ``check_weights``).

    No delay here (``run_network`` adds it).
    """
    counts = check_integer(counts, "counts")
    weights = check_weights(weights, weight_exp, quirks)
    if counts.shape[2] != weights.shape[1]:
        raise invalid(
            "counts.shape",
            tuple(counts.shape),
            f"[T, B, {weights.shape[1]}] (weights are {tuple(weights.shape)})",
            ShapeError,
        )
    syn = _synapses(counts, weights.to(counts.device), weight_exp, quirks)
    summed = torch.matmul(counts.to(syn.matrix.dtype), syn.matrix)
    return (syn.post(summed) if syn.post is not None else summed).to(torch.int64)


class _Synapses(NamedTuple):
    """How input spike counts [..., F] become q: ``counts @ matrix`` ([F, N]), then ``post`` when not None;
    ``q_max``: a bound of every |q|."""

    matrix: torch.Tensor
    post: Callable[[torch.Tensor], torch.Tensor] | None
    q_max: float


def _synapses(counts: torch.Tensor, weights: torch.Tensor, weight_exp: int, quirks: str) -> _Synapses:
    """The synapses of ``weights`` (checked mantissas [N, F]) for these counts (see ``_Synapses``).

    The weighted sum is a float matmul (CUDA has no int64 matmul), float32 when every partial sum stays
    below 2^24 before the power-of-two scaling folded into ``matrix`` (then exact: scaling by 2^k commutes
    with rounding), float64 otherwise."""
    after: int | None
    if quirks == "nengo":  # per weight: (w7 shifted by 1 + weight_exp, floor when negative), then << 6
        w7, s2 = weights >> 1, 1 + weight_exp
        per_spike, after = (w7, s2 + 6) if s2 >= 0 else (w7 >> -s2, 6)
    else:  # Lava shifts the summed input by weight_exp (floor when negative), then << 6
        per_spike, after = weights, (weight_exp + 6 if weight_exp >= 0 else None)
    most = float(counts.max()) if counts.numel() else 0.0
    largest = most * float(per_spike.abs().sum(1).max())
    if largest * 2.0 ** (after if after is not None else 6) >= 2**52:
        raise invalid("x", f"spike counts up to {int(counts.max())}", "counts small enough for exact sums", ShapeError)
    # the largest sum of one sign a compartment can receive bounds |q|
    one_sign = most * float(torch.maximum(per_spike.clamp(min=0).sum(1), (-per_spike).clamp(min=0).sum(1)).max())
    # float32 sums are exact below 2^24 on the CPU; CUDA may run float32 matmuls in TF32, so float64 there
    dtype = torch.float32 if largest < 2**24 and counts.device.type == "cpu" else torch.float64
    matrix = per_spike.to(dtype).T
    if after is not None:
        return _Synapses(matrix * 2.0**after, None, one_sign * 2.0**after)
    scale = 2.0**weight_exp

    def post(summed: torch.Tensor) -> torch.Tensor:
        return torch.floor(summed.double() * scale) * 64.0

    return _Synapses(matrix, post, math.ceil(one_sign * scale) * 64.0)


@dataclass(frozen=True)
class LoihiLayer:
    """One chip layer: dense synapses (weight mantissas ``[N, F]``, one exponent) into N compartments."""

    weights: torch.Tensor
    weight_exp: int
    config: CompartmentConfig
    name: str = ""

    def __post_init__(self) -> None:
        """Types, rank and the exponent's range checked here; the mantissas' range (per quirks) by ``run_network``."""
        object.__setattr__(self, "weights", check_integer(self.weights, "weights", rank=2))
        object.__setattr__(self, "weight_exp", bounded_int("weight_exp", self.weight_exp, *WEIGHT_EXP_RANGE))
        if not isinstance(self.config, CompartmentConfig):
            raise invalid("config", type(self.config).__name__, "a hybridai.neuromorphic.loihi.CompartmentConfig")
        if not isinstance(self.name, str):
            raise invalid("name", self.name, "a str (the layer's label)")

    @property
    def n_out(self) -> int:
        return self.weights.shape[0]

    @property
    def n_in(self) -> int:
        return self.weights.shape[1]


class LayerRun(NamedTuple):
    """One layer of ``run_network``, on the chip's clock (S steps, the padding included).

    spikes (bool), v (after reset), v_pre (before reset): ``[S, B, N]`` (v and v_pre int64, or None when
    not recorded); synaptic_ops: input spikes delivered times their fan-out; active: updates with
    non-zero u, v, q or a bias acting.
    """

    spikes: torch.Tensor
    v: torch.Tensor | None
    v_pre: torch.Tensor | None
    synaptic_ops: int
    active: int


def run_network(
    layers: list[LoihiLayer], counts: torch.Tensor, quirks: str = "nengo", record: tuple[str, ...] = ("v", "v_pre")
) -> list[LayerRun]:
    """Run a feed-forward chain of layers on input spike counts [S, B, F] (host input at step t).

    Every layer delivers one step late: layer l (1-based) sees at step t the spikes its source sent at
    t - 1, so its first input can arrive at step l. Its bias acts from step l on (a layer switched on
    when its first input can arrive), so the chain computes the delay-free dynamics shifted by l
    steps. Layers are simulated one after the other over all steps (exact for a feed-forward chain).
    ``record``: which of ``"v"``, ``"v_pre"`` to return (spikes and counts always).
    """
    check_quirks(quirks)
    if not isinstance(layers, list | tuple) or not layers:
        shown = layers if not isinstance(layers, list | tuple) else f"an empty {type(layers).__name__}"
        raise invalid("layers", shown, "a non-empty list of hybridai.neuromorphic.loihi.LoihiLayer")
    counts = check_integer(counts, "x", non_negative=True)
    if not isinstance(record, tuple | list) or not set(record) <= {"v", "v_pre"}:
        raise invalid("record", record, "a tuple of 'v' and/or 'v_pre'")
    record = tuple(record)
    source = counts
    runs = []
    for index, layer in enumerate(layers, start=1):
        if not isinstance(layer, LoihiLayer):
            raise invalid(f"layers[{index - 1}]", type(layer).__name__, "a hybridai.neuromorphic.loihi.LoihiLayer")
        weights = check_weights(layer.weights, layer.weight_exp, quirks, name=f"layer {index} weights")
        if source.shape[2] != weights.shape[1]:
            raise invalid(
                "x.shape" if index == 1 else f"layer {index} weights.shape",
                tuple(source.shape) if index == 1 else tuple(weights.shape),
                f"{weights.shape[1]} input features" if index == 1 else f"[N, {source.shape[2]}]",
                ShapeError,
            )
        weights = weights.to(source.device)
        delivered = source[:-1]
        syn = _synapses(delivered, weights, layer.weight_exp, quirks)
        fan_out = (weights != 0).sum(0)  # [F]
        ops = int((delivered.sum((0, 1), dtype=torch.int64) * fan_out).sum())
        group = Compartments(layer.config, weights.shape[0], source.device, quirks)
        steps, batch = source.shape[0], source.shape[1]
        out = group.simulate_steps(
            _delayed_input(delivered, syn), syn.q_max, steps, batch, bias_from=index, record=record
        )
        runs.append(LayerRun(out["spikes"], out.get("v"), out.get("v_pre"), ops, out["active"]))
        source = out["spikes"]
    return runs


def _delayed_input(delivered: torch.Tensor, syn: _Synapses) -> Callable[[int], torch.Tensor | None]:
    """q at step t of spikes ``delivered`` [S - 1, B, F] (non-negative) one step late, one matrix product per step
    into a reused buffer (no [S, B, N] input held in memory; a product over all steps at once is no faster: its
    output leaves the cache).

    The product is a float32 GEMM when every sum is exact in float32 (``_synapses``), else float64, with the shift
    folded into the matrix: exact with every BLAS. (oneDNN's int8 product, ``torch._int_mm``, was 4x faster on an
    AVX-512 VNNI CPU, but on AVX-512 CPUs without VNNI its int16 intermediate sums saturate: binary spikes against
    a weight of -128 came out 12,800 off; so it is not used.)"""
    batch, device, n = delivered.shape[1], delivered.device, syn.matrix.shape[1]
    matrix, post = syn.matrix, syn.post
    spikes = torch.empty(batch, delivered.shape[2], dtype=matrix.dtype, device=device)
    summed = torch.empty(batch, n, dtype=matrix.dtype, device=device)

    def float_input(t: int) -> torch.Tensor | None:
        if t == 0:
            return None
        torch.mm(spikes.copy_(delivered[t - 1]), matrix, out=summed)
        return post(summed) if post is not None else summed

    return float_input
