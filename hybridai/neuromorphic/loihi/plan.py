"""Registers of Loihi 1 from a trained hybridai spiking model: what the chip is told to compute.

``plan(model)`` takes an ``nn.Sequential`` of ``[nn.Linear, LIF | CUBA]`` pairs (reset to zero),
optionally ending in a decoder (``SpikeCountDecoder``, ``RateDecoder``, ``MembraneDecoder``), and
returns a ``LoihiPlan``: one ``LoihiLayerPlan`` (weight mantissas, exponent, compartment registers) per
pair, the decoder the host applies and the float model's dtype. ``network.LoihiNetwork`` runs it;
``backend.compile`` is both in one call.

Mapping of one pair (units: a float membrane value ``U`` is ``U * scale`` integer units on the chip):

* weights: mantissa ``w = 2 round(W k / 2)`` (even, |w| <= 254, legal under both quirk sets) with
  ``k = 254 / max|W|``; one exponent ``weight_exp`` per layer; ``scale = k * 2^(6 + weight_exp)``.
  ``weight_exp`` is the largest in [0, 7] whose threshold and bias fit their registers and whose
  worst-case input (every input at its largest count, every weight at once) stays inside q's
  21 bits and u's 23 bits; when even 0 does not fit the threshold, ``k`` is halved (fewer mantissa
  bits) until it does. Negative exponents (lossy on the chip) are never chosen.
* LIF: ``du = 4095`` (u = q each step: no current memory), ``dv = round(4096 (1 - beta))``.
* CUBA: ``du = round(4096 (1 - alpha)) - 1`` (Loihi 1 applies du with offset 1: the current keeps
  ``(4095 - du) / 4096 = alpha``), ``dv`` from beta. snnTorch's ``Synaptic`` reset to zero also
  drops the step after a spike (``U = (1 - S_prev)(beta U + I)``): that is nengo-loihi's refractory
  delay 2, so CUBA needs ``quirks="nengo"`` (Lava's bit-accurate LIF has no refractory period). The
  float CUBA adds its bias to the current, the chip adds it to the voltage: CUBA after a biased
  Linear is refused.
* threshold: ``vth_mant = round(threshold * scale / 64)``; a threshold above the largest membrane the
  inputs can drive (a non-spiking readout, e.g. ``threshold=1e9``) is clamped to 2^17 - 1 and only
  that bound constrains the scale; bias: ``round(b * scale)`` as
  ``bias_mant << bias_exp`` with the smallest exponent that fits; decays clipped to 0..4095
  (beta = 0 gives dv = 4095, a factor 1/4096).
* voltage limits: ``vmin_exp = 23``, ``vmax_exp = 7`` (v in +-(2^23 - 1), as wide as the float model allows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import nn

from hybridai.core.errors import ConfigError, invalid
from hybridai.neuromorphic.fixed_point import check_integer
from hybridai.neuromorphic.loihi.compartments import CompartmentConfig, check_quirks
from hybridai.neuromorphic.nodes import module_of
from hybridai.spiking.graph import LayerNode, lower
from hybridai.spiking.neurons import CUBA, LIF

MANTISSA = 254  # largest even weight mantissa legal under both quirk sets
VTH_MAX = 2**17 - 1
BIAS_MAX = 4095 << 7
Q_LIMIT = (1 << 21) - 1
U_LIMIT = (1 << 23) - 1
# the neuron models Loihi 1's compartments implement: LIF (no current memory) and CUBA (a current decay du)
NEURON_MODELS = (LIF, CUBA)
NEURON_NAMES = " or ".join(f"hybridai.{model.__name__}" for model in NEURON_MODELS)
ACCEPTS = ("dense", *(model.kind for model in NEURON_MODELS), "decoder")  # layer kinds (hybridai.spiking.kind_of)
SUPPORTED = (
    f"an nn.Sequential of [nn.Linear, {NEURON_NAMES} (reset='zero')] pairs, "
    "optionally ending in a SpikeCountDecoder, RateDecoder or MembraneDecoder (nn.Identity, nn.Dropout skipped)"
)


@dataclass(frozen=True)
class Pair:
    """One ``nn.Linear`` of the model and the neuron layer after it (one of ``NEURON_MODELS``; nodes of its
    ``LayerGraph``)."""

    dense: LayerNode
    spiking: LayerNode

    @property
    def linear(self) -> nn.Linear:
        return module_of(self.dense, nn.Linear)

    @property
    def neuron(self) -> LIF | CUBA:
        neuron = self.spiking.module  # ``parse`` pairs a Linear only with one of NEURON_MODELS
        assert isinstance(neuron, NEURON_MODELS), f"{self.spiking.where} holds a {self.spiking.type_name}"
        return neuron

    @property
    def name(self) -> str:
        return self.spiking.label


def parse(model: Any, quirks: str) -> tuple[list[Pair], nn.Module | None]:
    """The Linear + spiking pairs and the optional decoder of ``model``, or a ConfigError naming the layer."""
    check_quirks(quirks)
    if not isinstance(model, nn.Sequential):
        raise invalid("model", type(model).__name__, SUPPORTED)
    graph = lower(model, target="loihi", accepts=ACCEPTS, supported=SUPPORTED)
    layers = graph.layers[:-1] if graph.decoder is not None else graph.layers
    pairs: list[Pair] = []
    for i in range(0, len(layers), 2):
        dense = layers[i]
        if dense.kind != "dense":
            raise invalid(dense.where, dense.type_name, f"nn.Linear at this position; {SUPPORTED}")
        spiking = layers[i + 1] if i + 1 < len(layers) else None
        if spiking is None or not isinstance(spiking.module, NEURON_MODELS):
            raise invalid(
                spiking.where if spiking is not None else f"the layer after {dense.where}",
                spiking.type_name if spiking is not None else "nothing",
                f"{NEURON_NAMES} after the nn.Linear {dense.where}; {SUPPORTED}",
            )
        pairs.append(Pair(dense, spiking))
    for i, pair in enumerate(pairs):
        _check_pair(pair, quirks, last=i == len(pairs) - 1)
    return pairs, graph.decoder.module if graph.decoder is not None else None


def _check_pair(pair: Pair, quirks: str, last: bool) -> None:
    neuron, where = pair.neuron, f"{pair.spiking.where} ({pair.spiking.type_name})"
    if neuron.reset != "zero":
        raise invalid(f"{where} reset", neuron.reset, "'zero' (Loihi resets the voltage to 0 after a spike)")
    if neuron.output == "both" or (neuron.output == "membrane" and not last):
        raise invalid(f"{where} output", neuron.output, "'spikes', or 'membrane' on the last spiking layer")
    if isinstance(neuron, CUBA):
        if quirks == "lava":
            raise invalid(
                "quirks",
                quirks,
                f"'nengo' for {where}: snnTorch's CUBA reset to zero also drops the step after a spike, which is "
                "a refractory delay of 2, and Lava's bit-accurate LIF has no refractory period",
            )
        bias = pair.linear.bias
        if bias is not None and bool((bias != 0).any()):
            raise invalid(
                f"{pair.dense.where} (nn.Linear) bias",
                "non-zero",
                f"bias=False before {where}: the float CUBA adds a bias to its current, Loihi adds it to the voltage",
            )
    linear = f"{pair.dense.where} (nn.Linear)"
    for name, tensor in (("weight", pair.linear.weight), ("bias", pair.linear.bias)):
        if tensor is not None and not bool(torch.isfinite(tensor.detach()).all()):
            raise invalid(f"{linear} {name}", "a tensor containing NaN or inf", "finite values")
    for name in ("alpha", "beta", "threshold"):
        learnt: torch.Tensor | None = getattr(neuron, name, None)
        if learnt is not None and not bool(torch.isfinite(learnt.detach()).all()):
            raise invalid(f"{where} {name}", "a tensor containing NaN or inf (learnt)", "finite values")
    if (neuron.threshold.detach() <= 0).any():
        raise invalid(
            f"{where} threshold",
            float(neuron.threshold.detach().min()),
            "thresholds > 0 (a threshold <= 0 fires always)",
        )


@dataclass
class LoihiLayerPlan:
    """The registers of one quantized pair and the float-to-integer scale of its membrane."""

    name: str
    kind: str
    weights: torch.Tensor  # int64 [N, F] mantissas
    k: float  # mantissa units per float weight unit
    weight_exp: int
    scale: float  # integer voltage units per float membrane unit
    du: torch.Tensor
    dv: torch.Tensor
    vth_mant: torch.Tensor
    bias_mant: torch.Tensor
    bias_exp: torch.Tensor
    refractory: int
    output: str

    @property
    def bias(self) -> torch.Tensor:
        return self.bias_mant << self.bias_exp

    def config(self) -> CompartmentConfig:
        return CompartmentConfig(
            du=self.du,
            dv=self.dv,
            vth_mant=self.vth_mant,
            bias_mant=self.bias_mant,
            bias_exp=self.bias_exp,
            refractory=self.refractory,
            vmin_exp=23,
            vmax_exp=7,
        )


def _per_neuron(tensor: torch.Tensor, n: int) -> torch.Tensor:
    return torch.broadcast_to(tensor.detach().double().cpu().reshape(-1), (n,)).clone()


def plan_pair(pair: Pair, max_count: float = 1.0) -> LoihiLayerPlan:
    """Registers for one pair from its current float parameters (see the module docstring)."""
    weight = pair.linear.weight.detach().double().cpu()
    n = weight.shape[0]
    bias = (
        pair.linear.bias.detach().double().cpu()
        if pair.linear.bias is not None
        else torch.zeros(n, dtype=torch.float64)
    )
    neuron = pair.neuron
    threshold = _per_neuron(neuron.threshold, n)
    du, dv = _decays(neuron, n)
    keep_u = float((4095 - du).max()) / 4096  # the slowest current decay: u grows to q / (1 - keep_u)
    # the largest membrane the inputs can drive (all inputs at their largest count, steady state): a
    # threshold above it is never reached, so only the bound needs to fit (a non-spiking readout)
    keep_v = (4096 - dv).double() / 4096
    drive = weight.abs().sum(1) * max_count + bias.abs()
    reach = torch.where(keep_v < 1, drive / ((1 - keep_u) * (1 - keep_v).clamp(min=1e-300)), torch.inf)
    w_max = float(weight.abs().max())
    if w_max == 0:
        w_max = max(float(threshold.max()), float(bias.abs().max()), 1e-12)
    fit = _WeightScale(weight, torch.minimum(threshold, reach), bias, keep_u, max_count)
    k, weight_exp, mantissas = fit.choose(MANTISSA / w_max, pair.name)
    scale = k * 2.0 ** (6 + weight_exp)
    vth_mant = torch.round(threshold * scale / 64).clamp(max=VTH_MAX).long()  # clamps only unreachable ones
    bias_int = torch.round(bias * scale)
    bias_exp = torch.ceil(torch.log2(torch.clamp(bias_int.abs() / 4095, min=1))).long()
    bias_mant = torch.round(bias_int / 2.0**bias_exp).long()
    return LoihiLayerPlan(
        name=pair.name,
        kind=type(neuron).__name__,
        weights=mantissas,
        k=k,
        weight_exp=weight_exp,
        scale=scale,
        du=du,
        dv=dv,
        vth_mant=vth_mant,
        bias_mant=bias_mant,
        bias_exp=bias_exp,
        refractory=2 if isinstance(neuron, CUBA) else 1,
        output=neuron.output,
    )


def _decays(neuron: LIF | CUBA, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(du, dv) per compartment: LIF keeps no current (du 4095); CUBA's du carries Loihi 1's offset of 1."""
    beta = _per_neuron(neuron.beta.clamp(0, 1), n)
    dv = torch.round(4096 * (1 - beta)).clamp(0, 4095).long()
    if not isinstance(neuron, CUBA):
        return torch.full((n,), 4095, dtype=torch.int64), dv
    alpha = _per_neuron(neuron.alpha.clamp(0, 1), n)
    return (torch.round(4096 * (1 - alpha)) - 1).clamp(0, 4095).long(), dv


@dataclass(frozen=True)
class _WeightScale:
    """The search for mantissa units ``k`` and ``weight_exp`` (module docstring): float weights, the
    thresholds that must fit (``threshold_fit``), biases, the slowest current decay, the largest input count."""

    weight: torch.Tensor
    threshold_fit: torch.Tensor
    bias: torch.Tensor
    keep_u: float
    max_count: float

    def choose(self, k: float, name: str) -> tuple[float, int, torch.Tensor]:
        """(k, weight_exp, mantissas): the largest exponent that fits, starting from mantissa units ``k``,
        halved until exponent 0 does."""
        for _ in range(64):
            mantissas = (2 * torch.round(self.weight * k / 2)).clamp(-MANTISSA, MANTISSA).long()
            weight_exp = self._exponent(k, mantissas)
            if weight_exp >= 0:
                return k, weight_exp, mantissas
            k /= 2  # the threshold (or bias) is too large against the weights even at weight_exp 0
        # pragma: no cover - 64 halvings cover any finite ratio
        raise ConfigError(f"{name}: found no weight scale whose threshold and bias fit Loihi's registers")

    def _exponent(self, k: float, mantissas: torch.Tensor) -> int:
        """The largest weight_exp in [0, 7] whose registers fit and whose worst-case input stays inside q and
        u; 0 when only the registers fit (overflow risk accepted, as nengo-loihi does); -1 when nothing fits."""
        worst_in = float((mantissas.abs().sum(1).double() * self.max_count).max())
        fits_registers = None
        for weight_exp in range(7, -1, -1):
            scale = k * 2.0 ** (6 + weight_exp)
            vth = torch.round(self.threshold_fit * scale / 64)
            bias_int = torch.round(self.bias * scale)
            registers = bool(vth.max() <= VTH_MAX) and bool(bias_int.abs().max() <= BIAS_MAX)
            q_worst = worst_in * 2.0 ** (6 + weight_exp)
            if registers and fits_registers is None:
                fits_registers = weight_exp
            if registers and q_worst <= Q_LIMIT and q_worst / (1 - self.keep_u) <= U_LIMIT:
                return weight_exp
        return 0 if fits_registers is not None else -1


def max_count_of(calibration: Any) -> float:
    """The largest input spike count in ``calibration`` (1 when None: binary spikes assumed)."""
    if calibration is None:
        return 1.0
    counts = check_integer(calibration, "calibration", non_negative=True)
    return float(max(int(counts.max()), 1))


class LoihiPlan(NamedTuple):
    """What ``plan`` derives from a model: registers per pair, the decoder (None without), the float dtype."""

    layers: list[LoihiLayerPlan]
    decoder: nn.Module | None
    dtype: torch.dtype


def plan(model: Any, *, quirks: str = "nengo", calibration: Any = None) -> LoihiPlan:
    """Registers for every pair of ``model`` (see the module docstring) under ``quirks``.

    ``calibration``: optional input spike counts ``[T, B, F]``; its largest count bounds the first
    layer's worst-case input when choosing the weight exponent (binary spikes are assumed without it).
    """
    pairs, decoder = parse(model, quirks)
    max_count = max_count_of(calibration)
    layers = [plan_pair(pair, max_count if i == 0 else 1.0) for i, pair in enumerate(pairs)]
    return LoihiPlan(layers, decoder, pairs[0].linear.weight.dtype)


__all__ = [
    "ACCEPTS",
    "NEURON_MODELS",
    "SUPPORTED",
    "LoihiLayerPlan",
    "LoihiPlan",
    "Pair",
    "max_count_of",
    "parse",
    "plan",
    "plan_pair",
]
