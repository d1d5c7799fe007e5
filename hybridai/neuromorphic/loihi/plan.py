"""Quantize a trained hybridai spiking model to Loihi 1 registers and run it on the integer emulator.

``quantize(model)`` takes an ``nn.Sequential`` of ``[nn.Linear, LIF | CUBA]`` pairs (reset to zero),
optionally ending in a decoder (``SpikeCountDecoder``, ``RateDecoder``, ``MembraneDecoder``), and
returns a ``LoihiNetwork``: one ``LoihiLayer`` (synapses + compartments) per pair, run by
``LoihiNetwork.run(x)`` on time-major non-negative integer spike counts ``[T, B, F]``.

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

Time: the chip delivers every spike one step late, so the output of layer L at chip step t + L is
the float model's step t. ``run`` simulates T + L steps (input padded with L zero steps) and drops
the first L output steps; ``ChipRun.latency_steps = L`` and ``time_steps = T + L`` (every layer is
updated on every simulated step, and so counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.core.errors import BackendUnavailableError, ConfigError, ShapeError, invalid
from hybridai.neuromorphic.loihi.compartments import CompartmentConfig, check_integer, check_quirks
from hybridai.neuromorphic.loihi.synapses import LoihiLayer, run_network
from hybridai.spiking.graph import LayerNode, lower
from hybridai.spiking.neurons import CUBA, LIF

MANTISSA = 254  # largest even weight mantissa legal under both quirk sets
VTH_MAX = 2**17 - 1
BIAS_MAX = 4095 << 7
Q_LIMIT = (1 << 21) - 1
U_LIMIT = (1 << 23) - 1
ACCEPTS = ("dense", "lif", "cuba", "decoder")  # layer kinds (hybridai.spiking.kind_of)
SUPPORTED = (
    "an nn.Sequential of [nn.Linear, hybridai.LIF or hybridai.CUBA (reset='zero')] pairs, "
    "optionally ending in a SpikeCountDecoder, RateDecoder or MembraneDecoder (nn.Identity, nn.Dropout skipped)"
)


@dataclass(frozen=True)
class Pair:
    """One ``nn.Linear`` of the model and the LIF or CUBA layer after it (nodes of its ``LayerGraph``)."""

    dense: LayerNode
    spiking: LayerNode

    @property
    def linear(self) -> nn.Linear:
        return self.dense.module

    @property
    def neuron(self) -> LIF | CUBA:
        return self.spiking.module

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
        if spiking is None or spiking.kind not in ("lif", "cuba"):
            raise invalid(
                spiking.where if spiking is not None else f"the layer after {dense.where}",
                spiking.type_name if spiking is not None else "nothing",
                f"hybridai.LIF or hybridai.CUBA after the nn.Linear {dense.where}; {SUPPORTED}",
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
        tensor = getattr(neuron, name, None)
        if tensor is not None and not bool(torch.isfinite(tensor.detach()).all()):
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


def check_device(spec: Any) -> torch.device:
    """``spec`` as a torch device the emulator can run on here (the CPU or an existing CUDA device)."""
    accepted = "a torch device string: 'cpu', 'cuda' or 'cuda:N'"
    if not isinstance(spec, str | torch.device):
        raise invalid("device", spec, accepted)
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError):
        raise invalid("device", spec, accepted) from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise BackendUnavailableError(
                f"device={spec!r}: CUDA is not available on this machine (torch.cuda.is_available() is False); "
                "accepted here: 'cpu'"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise BackendUnavailableError(
                f"device={spec!r}: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    elif device.type != "cpu":
        raise invalid("device", spec, accepted)
    return device


def max_count_of(calibration: Any) -> float:
    """The largest input spike count in ``calibration`` (1 when None: binary spikes assumed)."""
    if calibration is None:
        return 1.0
    counts = check_integer(calibration, "calibration", non_negative=True)
    return float(max(int(counts.max()), 1))


class LoihiNetwork(CompiledNetwork):
    """A model quantized to Loihi 1 registers, run on the bit-exact integer emulator.

    ``run(x)`` takes non-negative integer spike counts ``[T, B, F]`` (any dtype holding whole numbers)
    and returns a ``ChipRun`` whose outputs have the float model's layout and units.
    """

    backend = "loihi"

    def __init__(
        self,
        plans: list[LoihiLayerPlan],
        decoder: nn.Module | None,
        quirks: str,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        self.plans = plans
        self.layers = [LoihiLayer(p.weights.to(device), p.weight_exp, p.config(), p.name) for p in plans]
        self.decoder = decoder
        self.quirks = quirks
        self.device = device
        self.dtype = dtype
        self.n_inputs = plans[0].weights.shape[1]

    @property
    def latency_steps(self) -> int:
        return len(self.plans)

    def _check_input(self, x: Any) -> torch.Tensor:
        if not torch.is_tensor(x) or x.ndim != 3 or x.shape[2] != self.n_inputs or 0 in x.shape:
            shown = tuple(x.shape) if torch.is_tensor(x) else type(x).__name__
            raise invalid("x.shape", shown, f"[T, B, {self.n_inputs}] time-major spike counts (T, B >= 1)", ShapeError)
        return check_integer(x, "x", non_negative=True)

    def trace(self, x: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        """Per layer, aligned to the float model's clock ``[T, B, N]``: ``spikes`` (float), ``membrane``
        (v before reset, float units), ``v`` and ``v_pre`` (integers); plus the raw runs under ``"run"``."""
        counts = self._check_input(x).to(self.device)
        steps, latency = counts.shape[0], self.latency_steps
        padded = torch.cat([counts, counts.new_zeros(latency, *counts.shape[1:])])
        runs = run_network(self.layers, padded, self.quirks)
        out = []
        for index, (plan, run) in enumerate(zip(self.plans, runs, strict=True), start=1):
            window = slice(index, index + steps)
            out.append(
                {
                    "spikes": run.spikes[window].to(self.dtype),
                    "membrane": (run.v_pre[window].double() / plan.scale).to(self.dtype),
                    "v": run.v[window],
                    "v_pre": run.v_pre[window],
                    "run": run,
                }
            )
        return out

    def run(self, x: torch.Tensor) -> ChipRun:
        """Run a batch and count the chip's events over all T + L simulated steps."""
        traced = self.trace(x)
        steps, batch = x.shape[0], x.shape[1]
        last = traced[-1]
        outputs = last["membrane"] if self.plans[-1].output == "membrane" else last["spikes"]
        if self.decoder is not None:
            outputs = self.decoder(outputs)
        layers = []
        simulated = steps + self.latency_steps
        for plan, layer in zip(self.plans, traced, strict=True):
            run, n = layer["run"], plan.weights.shape[0]
            layers.append(
                LayerActivity(
                    name=plan.name,
                    neurons=n,
                    spikes=int(run.spikes.sum()),
                    synaptic_ops=run.synaptic_ops,
                    neuron_updates=n * simulated * batch,
                    active_updates=run.active,
                )
            )
        return ChipRun(
            outputs=outputs.to(x.device),
            layers=tuple(layers),
            samples=batch,
            time_steps=simulated,
            latency_steps=self.latency_steps,
        )

    def describe(self) -> list[dict[str, Any]]:
        """Per layer: kind, size, decays, threshold, weight format, scale and bias."""

        def span(t: torch.Tensor) -> int | tuple[int, int]:
            low, high = int(t.min()), int(t.max())
            return low if low == high else (low, high)

        rows = []
        for p in self.plans:
            rows.append(
                {
                    "layer": p.name,
                    "kind": f"Loihi 1 CUBA-LIF compartments ({p.kind})",
                    "neurons": p.weights.shape[0],
                    "inputs": p.weights.shape[1],
                    "du": span(p.du),
                    "dv": span(p.dv),
                    "vth_mant": span(p.vth_mant),
                    "refractory": p.refractory,
                    "weight_exp": p.weight_exp,
                    "weight_mantissa_range": (int(p.weights.min()), int(p.weights.max())),
                    "weight_bits": f"8-bit signed mantissa, even (7-bit magnitude x 2), quirks={self.quirks!r}",
                    "scale": p.scale,
                    "bias_mant": span(p.bias_mant),
                    "bias_exp": span(p.bias_exp),
                    "output": p.output,
                }
            )
        return rows


def quantize(
    model: Any, *, quirks: str = "nengo", calibration: Any = None, device: str | torch.device = "cpu"
) -> LoihiNetwork:
    """Quantize ``model`` to Loihi 1 registers (see the module docstring) and return the runnable network.

    ``calibration``: optional input spike counts ``[T, B, F]``; its largest count bounds the first
    layer's worst-case input when choosing the weight exponent (binary spikes are assumed without it).
    """
    pairs, decoder = parse(model, quirks)
    max_count = max_count_of(calibration)
    plans = [plan_pair(pair, max_count if i == 0 else 1.0) for i, pair in enumerate(pairs)]
    dtype = pairs[0].linear.weight.dtype
    return LoihiNetwork(plans, decoder, quirks, check_device(device), dtype)


__all__ = ["LoihiLayerPlan", "LoihiNetwork", "check_device", "max_count_of", "parse", "plan_pair", "quantize"]
