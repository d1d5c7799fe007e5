"""Loihi 1 synapses and feed-forward chains of layers, on the compartment emulator of ``loihi``.

Weight formats per quirk set, the weight exponent, the one-step synaptic delay and ``run_network``
(see the ``loihi`` module docstring for the rules and their sources). Import from ``loihi``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from ..errors import ShapeError, invalid
from .loihi import WEIGHT_EXP_RANGE, CompartmentConfig, Compartments, check_integer, check_quirks


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
    low_e, high_e = WEIGHT_EXP_RANGE
    if isinstance(weight_exp, bool) or not isinstance(weight_exp, int) or not low_e <= weight_exp <= high_e:
        raise invalid(f"{name} weight_exp", weight_exp, f"an int in [{low_e}, {high_e}]")
    low, high, rule = weight_range(quirks, w)
    if (w < low).any() or (w > high).any():
        raise invalid(name, f"tensor with range [{int(w.min())}, {int(w.max())}]", rule)
    if quirks == "nengo" and (w % 2 != 0).any():
        raise invalid(name, f"tensor with odd value {int(w[w % 2 != 0][0])}", rule)
    if quirks == "lava" and low == -256:
        w = (w >> 1) << 1
    return w


def synaptic_input(counts: torch.Tensor, weights: torch.Tensor, weight_exp: int, quirks: str) -> torch.Tensor:
    """q [T, B, N] (int64) that input spike counts [T, B, F] deliver through checked mantissas ``weights`` [N, F].

    No delay here (``run_network`` adds it).
    """
    return _synaptic_input(check_integer(counts, "counts"), weights, weight_exp, quirks).to(torch.int64)


def _synaptic_input(counts: torch.Tensor, weights: torch.Tensor, weight_exp: int, quirks: str) -> torch.Tensor:
    """``synaptic_input`` as integer-valued float64. The weighted sum is a float matmul (CUDA has no int64
    matmul), float32 when every partial sum stays below 2^24 (then exact), float64 otherwise."""
    if quirks == "nengo":  # per weight: (w7 shifted by 1 + weight_exp, floor when negative), then << 6
        w7, s2 = weights >> 1, 1 + weight_exp
        per_spike, after = (w7, s2 + 6) if s2 >= 0 else (w7 >> -s2, 6)
    else:  # Lava shifts the summed input by weight_exp (floor when negative), then << 6
        per_spike, after = weights, None
    largest = float(counts.max()) * float(per_spike.abs().sum(1).max()) if counts.numel() else 0.0
    if largest * 2.0 ** (after if after is not None else max(weight_exp, 0) + 6) >= 2**52:
        raise invalid("x", f"spike counts up to {int(counts.max())}", "counts small enough for exact sums", ShapeError)
    # float32 sums are exact below 2^24 on the CPU; CUDA may run float32 matmuls in TF32, so float64 there
    dtype = torch.float32 if largest < 2**24 and counts.device.type == "cpu" else torch.float64
    summed = torch.matmul(counts.to(dtype), per_spike.to(dtype).T)
    if after is None:
        summed = (
            summed.double() * 2.0**weight_exp if weight_exp >= 0 else torch.floor(summed.double() * 2.0**weight_exp)
        )
        after = 6
    # float32 stays exact while |q| < 2^24 (half the memory of float64 for the whole run's input)
    final = torch.float32 if largest * 2.0**after < 2**24 else torch.float64
    return summed.to(final) * 2.0**after


@dataclass(frozen=True)
class LoihiLayer:
    """One chip layer: dense synapses (weight mantissas ``[N, F]``, one exponent) into N compartments."""

    weights: torch.Tensor
    weight_exp: int
    config: CompartmentConfig
    name: str = ""

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
    counts = check_integer(counts, "x", non_negative=True)
    source = counts
    runs = []
    for index, layer in enumerate(layers, start=1):
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
        q = _synaptic_input(delivered, weights, layer.weight_exp, quirks)
        fan_out = (weights != 0).sum(0)  # [F]
        ops = int((delivered * fan_out).sum())
        group = Compartments(layer.config, weights.shape[0], source.device, quirks)
        out = group.simulate(q, bias_from=index, record=tuple(record), delayed=True)
        runs.append(LayerRun(out["spikes"], out.get("v"), out.get("v_pre"), ops, out["active"]))
        source = out["spikes"].to(torch.int64)
    return runs
