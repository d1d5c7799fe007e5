"""A trained spiking ``nn.Sequential`` as a ``nengo.Network``: the plan of every layer, and the network built.

``plan(model)`` maps each ``LIF``/``CUBA`` layer (with the ``nn.Linear`` before it) onto the constants of an
ensemble of ``nengo.LIF`` neurons (``NengoLayerPlan``); ``build_network(plans)`` builds the ``nengo.Network``
of those ensembles, driven through their ``.neurons`` (no decoders). ``network.NengoNetwork`` (what
``nengo.compile`` returns) runs it sample by sample and counts activity.

How the discrete hybridai layer ``U_t = beta * U_{t-1} + x_t`` becomes nengo's exactly integrated
``v += (J - v) * (1 - exp(-dt / tau_rc))`` with unit threshold:

- ``tau_rc = -dt / ln(beta)`` (seconds), so ``exp(-dt / tau_rc) = beta``; ``beta = 0`` uses
  ``tau_rc = dt / 30`` (decay ``exp(-30) = 9e-14``, below float32 resolution; an exact 0 makes nengo's
  spike-time interpolation divide 0 by 0); ``beta = 1`` (no leak) is refused.
- current ``J = gain * x`` with ``gain = 1 / ((1 - beta) * threshold)`` per neuron, so ``v = U / threshold``;
  the Linear bias becomes the ensemble's bias current ``gain * b``; ``min_voltage = -inf`` (hybridai
  never clips a negative membrane).
- nengo spikes are ``1/dt`` high, so transforms between ensembles are ``W * dt``.
- LIF (``reset="zero"``): ``tau_ref = 0``. nengo then zeroes the voltage after a spike and integrates
  the next step in full, which is hybridai's rule: spikes agree spike for spike (up to float rounding
  at threshold ties: torch computes in float32, nengo in float64).
- CUBA (``reset="zero"``): ``I_t = alpha * I_{t-1} + x_t`` is ``nengo.Lowpass(tau_s)`` with
  ``tau_s = -dt / ln(alpha)`` on an input scaled by ``1 / (1 - alpha)`` (nengo discretises Lowpass by
  zero-order hold, ``y_t = alpha * y_{t-1} + (1 - alpha) * u_t``, no delay: exact); ``alpha = 0`` is
  ``synapse=None``. The Linear bias goes through the same synapse (a constant node), as in hybridai.
  snnTorch's CUBA reset holds the membrane at 0 for the whole step after a spike; nengo measures
  ``tau_ref`` from the sub-step threshold crossing, so no constant ``tau_ref`` reproduces that step.
  ``tau_ref = 1.5 dt`` (default ``cuba_refractory_steps``) matches mean rates: the discrete rule
  waits one step plus, on average, half a step of rounding up to the next step. Rates then agree
  within a few percent of the step rate; spike times do not agree exactly.
- ``reset="subtract"`` cannot be expressed: ``nengo.LIF`` only resets to zero (it has no
  subtractive option), so such layers are refused.

Timing: the input node gives ``x[t]`` at nengo's step ``t + 1`` (its first step is ``t = dt``). A
connection with ``synapse=None`` acts within the step (LIF layers add no delay), but nengo schedules
every synapse as an end-of-step update, so a Lowpass (CUBA with ``alpha > 0``) delivers one step
late. Each layer therefore starts ``delay`` steps late (the Lowpass synapses before and at it), its
bias is switched on at the same step (a gated node), and ``network.NengoNetwork`` runs ``T + latency_steps``
steps and reads each layer's own T-step window: outputs line up with the float model's time axis
and ``ChipRun.latency_steps`` is the number of Lowpass synapses on the path.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from hybridai.core.errors import bounded_int, invalid
from hybridai.neuromorphic.nodes import module_of
from hybridai.spiking.graph import LayerNode, lower
from hybridai.spiking.neurons import CUBA, LIF

# the neuron models nengo.LIF reproduces: LIF, and CUBA with a nengo.Lowpass synapse for its current
NEURON_MODELS = (LIF, CUBA)
NEURON_NAMES = " or ".join(model.__name__ for model in NEURON_MODELS)
ACCEPTS = ("dense", *(model.kind for model in NEURON_MODELS), "decoder")  # layer kinds (hybridai.spiking.kind_of)
SUPPORTED = (
    f"an nn.Sequential of nn.Linear and {' / '.join(f'hybridai.{model.__name__}' for model in NEURON_MODELS)} "
    "layers (reset='zero'), "
    "optionally ending in a SpikeCountDecoder, RateDecoder or MembraneDecoder (nn.Identity, nn.Dropout skipped)"
)
MAX_WIDTH = 2**31 - 1  # the widest input accepted (numpy refuses far larger sizes; this one already needs 16 GiB)
BETA_ZERO_TAU_STEPS = 1 / 30  # tau_rc for beta = 0, in steps: decay exp(-30) = 9e-14 (0 breaks nengo)


@dataclass(frozen=True)
class NengoLayerPlan:
    """One spiking layer as nengo will run it: the incoming weights and the neuron constants.

    weight: ``[n, n_in]`` Linear weight, or None for an identity connection (no Linear before the layer).
    bias: ``[n]`` Linear bias in membrane units per step (zeros without a bias).
    threshold: ``[n]`` hybridai thresholds (membrane units); ``gain`` maps them onto nengo's 1.
    tau_rc, tau_ref, tau_s: seconds (``tau_s`` None for LIF and for CUBA with ``alpha = 0``).
    """

    index: str
    name: str
    kind: str
    n_in: int
    n: int
    weight: np.ndarray | None
    bias: np.ndarray
    threshold: np.ndarray
    alpha: float | None
    beta: float
    dt: float
    output: str
    tau_rc: float
    tau_ref: float
    tau_s: float | None

    @property
    def gain(self) -> np.ndarray:
        """Current per membrane unit, per neuron: ``1 / ((1 - exp(-dt / tau_rc)) * threshold)`` (``1 - beta``
        as nengo itself computes it, so that ``v = U / threshold`` to rounding)."""
        return 1.0 / (-math.expm1(-self.dt / self.tau_rc) * self.threshold)

    @property
    def synaptic_scale(self) -> float:
        """``1 / (1 - alpha)``: undoes Lowpass's ``(1 - alpha)`` input factor (1 without a synapse)."""
        return 1.0 if self.tau_s is None else 1.0 / -math.expm1(-self.dt / self.tau_s)

    def fan_out(self) -> np.ndarray:
        """Synapses leaving each input unit ``[n_in]`` (non-zero weights; 1 for an identity connection)."""
        if self.weight is None:
            return np.ones(self.n_in, dtype=np.int64)
        return np.count_nonzero(self.weight, axis=0).astype(np.int64)


def _uniform(layer_name: str, argument: str, tensor: torch.Tensor, accepted: str) -> float:
    """The one value of a per-layer constant in ``[0, 1)``; per-neuron values and 1 are refused."""
    values = tensor.detach().cpu().double().reshape(-1)
    if not bool((values == values[0]).all()):
        raise invalid(
            f"{layer_name}.{argument}",
            f"per-neuron values in [{float(values.min()):.4g}, {float(values.max()):.4g}]",
            f"one {argument} per layer (nengo.LIF and nengo.Lowpass take one time constant per ensemble)",
        )
    value = float(values[0])
    if not 0.0 <= value < 1.0:
        raise invalid(f"{layer_name}.{argument}", value, accepted)
    return value


def _tau(decay: float, dt: float) -> float:
    """Time constant (seconds) whose per-step decay ``exp(-dt / tau)`` is ``decay``."""
    return dt * BETA_ZERO_TAU_STEPS if decay <= 0 else -dt / math.log(decay)


def check_refractory_steps(steps: Any) -> float:
    """``cuba_refractory_steps`` as a float, or a ConfigError unless it is a finite number >= 0."""
    real = isinstance(steps, numbers.Real) and not isinstance(steps, bool | np.bool_)
    # compared before float(): an int beyond float's range would overflow, a NaN fails every comparison
    if not real or not 0 <= steps <= sys.float_info.max:
        raise invalid("cuba_refractory_steps", steps, "a finite number of time steps >= 0, e.g. 1.5")
    return float(steps)


def plan(
    model: nn.Module, *, n_inputs: int | None = None, cuba_refractory_steps: float = 1.5
) -> tuple[list[NengoLayerPlan], nn.Module | None]:
    """The layers of ``model`` as nengo will run them, and the trailing decoder (or None).

    ``n_inputs`` is needed only when the model starts with a spiking layer of unknown size.
    Unsupported layers, ``reset="subtract"``, per-neuron decays, ``beta = 1`` or thresholds ``<= 0``
    raise a ``ConfigError`` naming the layer.
    """
    cuba_refractory_steps = check_refractory_steps(cuba_refractory_steps)
    if n_inputs is not None:  # nengo sizes its input node with it: an int numpy can allocate
        bounded_int("n_inputs", n_inputs, 1, MAX_WIDTH)
    graph = lower(model, target="nengo", accepts=ACCEPTS, supported=SUPPORTED, n_inputs=n_inputs)
    plans: list[NengoLayerPlan] = []
    spiking: list[LayerNode] = []
    pending: nn.Linear | None = None
    for node in graph:
        if node.kind == "dense":
            if pending is not None:
                raise invalid(node.where, "nn.Linear after nn.Linear", f"a {NEURON_NAMES} layer after each nn.Linear")
            pending = module_of(node, nn.Linear)
        elif isinstance(node.module, NEURON_MODELS):
            plans.append(_plan_layer(node, node.module, pending, cuba_refractory_steps))
            spiking.append(node)
            pending = None
    if pending is not None:
        raise invalid(graph.layers[-1].where, "a trailing nn.Linear", f"a {NEURON_NAMES} layer after each nn.Linear")
    for node in spiking[:-1]:
        if node.module.output != "spikes":
            raise invalid(
                f"{node.where}.output ({node.type_name})",
                node.module.output,
                "'spikes' for every spiking layer but the last",
            )
    dts = {p.dt for p in plans}
    if len(dts) > 1:
        raise invalid("model", f"spiking layers with dt={sorted(dts)}", "one dt (seconds per step) for every layer")
    return plans, graph.decoder.module if graph.decoder is not None else None


def _plan_layer(node: LayerNode, layer: LIF | CUBA, linear: nn.Linear | None, refractory: float) -> NengoLayerPlan:
    label, kind, n = node.where, node.type_name, node.width
    assert n is not None  # lower sizes every neuron layer
    if layer.reset != "zero":
        raise invalid(
            f"{label}.reset ({kind})",
            layer.reset,
            "reset='zero' (nengo.LIF resets the voltage to zero and has no subtractive reset; retrain with it)",
        )
    if layer.output not in ("spikes", "membrane"):
        raise invalid(f"{label}.output ({kind})", layer.output, "'spikes' or 'membrane' (one tensor, not a tuple)")
    for name in ("alpha", "beta", "threshold"):
        tensor = getattr(layer, name, None)
        if tensor is not None and not bool(torch.isfinite(tensor.detach()).all()):
            raise invalid(f"{label}.{name} ({kind})", "a tensor containing NaN or inf (learnt)", "finite values")
    if linear is not None:
        for name, tensor in (("weight", linear.weight), ("bias", linear.bias)):
            if tensor is not None and not bool(torch.isfinite(tensor.detach()).all()):
                where = f"the nn.Linear before {label}"
                raise invalid(f"{where} {name}", "a tensor containing NaN or inf", "finite values")
    threshold_values = layer.threshold.detach().cpu().double().reshape(-1)
    if not bool((threshold_values > 0).all()):
        raise invalid(f"{label}.threshold ({kind})", float(threshold_values.min()), "thresholds > 0")
    beta = _uniform(label, "beta", layer.beta.clamp(0, 1), "beta in [0, 1): nengo.LIF always leaks")
    alpha = None
    if kind == "CUBA":
        assert isinstance(layer, CUBA)  # a neuron whose type is named CUBA
        alpha = _uniform(label, "alpha", layer.alpha.clamp(0, 1), "alpha in [0, 1): nengo.Lowpass always decays")
    dt = layer.dt
    if linear is not None:
        weight = linear.weight.detach().cpu().double().numpy().copy()
        bias = linear.bias.detach().cpu().double().numpy().copy() if linear.bias is not None else np.zeros(n)
    else:
        weight, bias = None, np.zeros(n)
    return NengoLayerPlan(
        index=node.index,
        name=node.label,
        kind=kind,
        n_in=weight.shape[1] if weight is not None else n,
        n=n,
        weight=weight,
        bias=bias,
        threshold=np.broadcast_to(threshold_values.numpy(), (n,)).copy(),
        alpha=alpha,
        beta=beta,
        dt=dt,
        output=layer.output,
        tau_rc=_tau(beta, dt),
        tau_ref=0.0 if kind == "LIF" else refractory * dt,
        tau_s=None if alpha is None or alpha == 0 else _tau(alpha, dt),
    )


class _Feed:
    """The input node's function: row ``t/dt - 1`` of the current sample ``[T, F]`` (zeros after T)."""

    def __init__(self, width: int, dt: float) -> None:
        self.dt = dt
        self.values = np.zeros((1, width))

    def __call__(self, t: float) -> np.ndarray:
        step = int(round(t / self.dt)) - 1
        return self.values[step] if 0 <= step < len(self.values) else np.zeros(self.values.shape[1])


class _Gate:
    """A bias node's function: 0 for the first ``delay`` steps (the layer's input has not arrived), then 1."""

    def __init__(self, delay: int, dt: float) -> None:
        self.delay, self.dt = delay, dt

    def __call__(self, t: float) -> float:
        return 1.0 if int(round(t / self.dt)) > self.delay else 0.0


def build_network(plans: Sequence[NengoLayerPlan]) -> Any:
    """The ``nengo.Network`` for planned layers.

    Extra attributes: ``feed`` (the input's ``_Feed``), ``input`` (node), ``layer_ensembles``,
    ``layer_probes`` (per layer: neuron ``output``, ``voltage``, ``input`` and, for a membrane
    output, ``refractory_time``), ``layer_delays`` (steps each layer runs behind the input) and
    ``latency_steps`` (the last layer's delay).
    """
    import nengo

    dt = plans[0].dt
    net = nengo.Network(label="hybridai")
    with net:
        net.feed = _Feed(plans[0].n_in, dt)
        net.input = nengo.Node(net.feed, size_out=plans[0].n_in, label="input")
        net.layer_ensembles, net.layer_probes, net.layer_delays = [], [], []
        source, spike_amplitude, delay = net.input, 1.0, 0  # the input carries values; ensembles spikes of 1/dt
        for p in plans:
            synapse = None if p.tau_s is None else nengo.Lowpass(p.tau_s)
            ensemble_bias = synapse is None and delay == 0  # else the bias waits for the input (a gated node)
            neuron = nengo.LIF(
                tau_rc=p.tau_rc,
                tau_ref=p.tau_ref,
                min_voltage=-np.inf,
                initial_state={"voltage": nengo.dists.Choice([0.0])},
            )
            ens = nengo.Ensemble(
                p.n,
                1,
                neuron_type=neuron,
                gain=p.gain,
                bias=p.gain * p.bias if ensemble_bias else np.zeros(p.n),
                label=p.name,
            )
            pre = source if source is net.input else source.neurons
            transform = spike_amplitude * p.synaptic_scale * (p.weight if p.weight is not None else np.eye(p.n))
            nengo.Connection(pre, ens.neurons, transform=transform, synapse=synapse)
            if not ensemble_bias and np.any(p.bias):
                gate = nengo.Node(_Gate(delay, dt), size_out=1, label=f"{p.name} bias")
                nengo.Connection(gate, ens.neurons, transform=(p.bias * p.synaptic_scale)[:, None], synapse=synapse)
            delay += synapse is not None
            net.layer_ensembles.append(ens)
            net.layer_delays.append(delay)
            net.layer_probes.append({key: nengo.Probe(ens.neurons, key) for key in ("output", "voltage", "input")})
            if p.output == "membrane":
                net.layer_probes[-1]["refractory_time"] = nengo.Probe(ens.neurons, "refractory_time")
            source, spike_amplitude = ens, dt
        net.latency_steps = delay
    return net
