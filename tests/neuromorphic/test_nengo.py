"""The nengo backend against the float model: LIF spike for spike, CUBA in rate, activity, errors.

Oracles: hybridai's LIF/CUBA (themselves checked against snnTorch) and nengo's own simulator.
"""

from __future__ import annotations

import math

import nengo
import numpy as np
import pytest
import torch
from torch import nn

import hybridai.neuromorphic.nengo.backend  # noqa: F401  (registers the "nengo" family)
from hybridai import backends
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.neuromorphic.nengo import NengoNetwork, build_network
from hybridai.neuromorphic.nengo.plan import plan
from hybridai.spiking.encoding import MembraneDecoder, RateDecoder, SpikeCountDecoder
from hybridai.spiking.neurons import CUBA, LIF

DT = 1e-3


def _spikes(steps: int, batch: int, width: int, p: float = 0.3, seed: int = 0) -> torch.Tensor:
    return (torch.rand(steps, batch, width, generator=torch.Generator().manual_seed(seed)) < p).float()


def _linear(n_in: int, n_out: int, scale: float = 1.0, seed: int = 0, bias: bool = True) -> nn.Linear:
    torch.manual_seed(seed)
    layer = nn.Linear(n_in, n_out, bias=bias)
    with torch.no_grad():
        layer.weight.mul_(scale)
    return layer


def _learnt_threshold(value: float) -> LIF:
    """A LIF layer whose learnt threshold was trained to ``value`` (the constructor refuses thresholds <= 0)."""
    layer = LIF(0.9, reset="zero", learn_threshold=True)
    with torch.no_grad():
        layer.threshold.fill_(value)
    return layer


def _compile(model: nn.Module, **options) -> NengoNetwork:
    return backends.get("nengo", **options).compile(model)


def _layer_outputs(model: nn.Sequential, x: torch.Tensor) -> list[torch.Tensor]:
    """The float model's output after every spiking layer."""
    outs = []
    with torch.no_grad():
        for layer in model:
            x = layer(x)
            if isinstance(layer, LIF | CUBA):
                outs.append(x)
    return outs


def test_build_network_maps_decays_to_time_constants_and_weights_to_transforms():
    model = nn.Sequential(
        _linear(4, 6), LIF(0.9, threshold=0.5, reset="zero"), _linear(6, 3), CUBA(0.8, 0.7, reset="zero")
    )
    plans, _ = plan(model)
    net = build_network(plans)
    assert isinstance(net, nengo.Network)
    lif, cuba = net.layer_ensembles
    beta, alpha = float(model[1].beta), float(model[3].alpha)  # float32 values, as the layers hold them
    assert lif.neuron_type.tau_rc == pytest.approx(-DT / math.log(beta), rel=1e-12)
    assert cuba.neuron_type.tau_rc == pytest.approx(-DT / math.log(float(model[3].beta)), rel=1e-12)
    assert (lif.neuron_type.tau_ref, cuba.neuron_type.tau_ref) == (0.0, pytest.approx(1.5 * DT))
    assert lif.neuron_type.min_voltage == -np.inf
    assert np.allclose(lif.gain, 1 / ((1 - beta) * 0.5))  # U / threshold onto nengo's unit threshold
    (into_lif,) = [c for c in net.all_connections if c.pre_obj is net.input and c.post_obj.ensemble is lif]
    (into_cuba,) = [
        c for c in net.all_connections if getattr(c.pre_obj, "ensemble", None) is lif and c.post_obj.ensemble is cuba
    ]
    assert into_lif.synapse is None
    assert into_cuba.synapse.tau == pytest.approx(-DT / math.log(alpha), rel=1e-12)
    weight = model[2].weight.detach().double().numpy()
    assert np.allclose(into_cuba.transform.init, weight * DT / (1 - alpha))  # spikes of 1/dt, Lowpass gain 1-alpha
    assert net.latency_steps == 1


@pytest.mark.parametrize("inputs", ["spikes", "constant current", "random current"])
@pytest.mark.parametrize("beta", [0.0, 0.5, 0.9])
def test_lif_layer_is_spike_for_spike(inputs, beta):
    # Measured: with tau_ref = 0 nengo's exact exponential update IS hybridai's reset-to-zero rule, so
    # every spike agrees (no threshold ties occur with random weights; float32 vs float64 could only
    # flip a spike whose membrane lies within ~1e-7 of the threshold).
    model = nn.Sequential(_linear(8, 30, scale=2.0), LIF(beta, threshold=0.7, reset="zero"))
    if inputs == "spikes":
        x = _spikes(60, 3, 8)
    elif inputs == "constant current":
        x = torch.rand(3, 8, generator=torch.Generator().manual_seed(1)).expand(60, 3, 8).contiguous()
    else:
        x = torch.randn(60, 3, 8, generator=torch.Generator().manual_seed(2))
    run = _compile(model).run(x)
    expected = model(x).detach()
    assert expected.sum() > 50  # the comparison is not vacuous
    assert torch.equal(run.outputs, expected)
    assert (run.samples, run.time_steps, run.latency_steps) == (3, 60, 0)


def test_two_layer_lif_spikes_and_activity_counts():
    hidden_layers = [_linear(6, 20, scale=3.0, seed=1), LIF(0.9, reset="zero")]
    model = nn.Sequential(*hidden_layers, _linear(20, 5, scale=3.0, seed=2), LIF(0.8, reset="zero"))
    x = _spikes(80, 4, 6, seed=3)
    run = _compile(model).run(x)
    hidden, out = _layer_outputs(model, x)
    assert torch.equal(run.outputs, out)
    first, second = run.layers
    assert (first.name, second.name) == ("1: LIF", "3: LIF")
    assert (first.spikes, second.spikes) == (int(hidden.sum()), int(out.sum()))
    assert first.spikes > 100 and second.spikes > 10
    assert first.synaptic_ops == int(x.sum()) * 20  # binary input events x fan-out (dense weights)
    assert second.synaptic_ops == first.spikes * 5
    assert (first.neuron_updates, second.neuron_updates) == (20 * 80 * 4, 5 * 80 * 4)
    assert first.active_updates == first.neuron_updates  # the Linear bias drives every neuron every step


def test_active_updates_and_event_counting_follow_the_float_model():
    # No bias, sparse spike counts (values 0..2): active = previous voltage or input non-zero.
    model = nn.Sequential(_linear(5, 7, scale=2.0, bias=False), LIF(0.8, reset="zero", output="spikes"))
    counts = _spikes(40, 2, 5, p=0.1, seed=4) * 2
    run = _compile(model).run(counts)
    assert run.layers[0].synaptic_ops == int(counts.sum()) * 7  # a count of 2 is two events
    current = model[0](counts).detach().double()
    membrane = LIF(0.8, reset="zero", output="both").double()(current)
    spikes, mem = membrane
    after = mem * (1 - spikes)  # the voltage left after each step's reset
    previous = torch.cat([torch.zeros_like(after[:1]), after[:-1]])
    expected = int(((previous != 0) | (current != 0)).sum())
    assert run.layers[0].active_updates == expected < run.layers[0].neuron_updates
    currents = torch.randn(10, 2, 5, generator=torch.Generator().manual_seed(5)) * (_spikes(10, 2, 5, seed=6))
    run = _compile(model).run(currents)  # real-valued currents: one event per non-zero entry
    assert run.layers[0].synaptic_ops == int((currents != 0).sum()) * 7


def test_membrane_output_matches_including_spike_steps_and_decoders_apply():
    x = _spikes(50, 3, 8, seed=7)
    layers = [_linear(8, 10, scale=2.0, seed=8), LIF(0.9, reset="zero", output="membrane")]
    model = nn.Sequential(*layers)
    membrane = _compile(model).run(x).outputs
    expected = model(x).detach()
    assert (expected > 1).any()  # spike steps are included: nengo's voltage before its reset
    assert torch.allclose(membrane, expected, atol=1e-5)
    decoded = _compile(nn.Sequential(*layers, MembraneDecoder("max"))).run(x).outputs
    assert torch.allclose(decoded, expected.max(0).values, atol=1e-5)
    spiking = [_linear(8, 10, scale=2.0, seed=8), LIF(0.9, reset="zero")]
    for decoder in (SpikeCountDecoder(), RateDecoder()):
        model = nn.Sequential(*spiking, decoder)
        assert torch.equal(_compile(model).run(x).outputs, model(x).detach())


def test_cuba_synapse_is_exact_below_threshold_and_its_delay_is_aligned():
    # A Lowpass delivers one step late in nengo's schedule; outputs are re-aligned (latency_steps = 1).
    x = _spikes(40, 2, 6, seed=9)
    cuba = nn.Sequential(_linear(6, 8, seed=10), CUBA(0.8, 0.9, threshold=1e6, reset="zero", output="membrane"))
    run = _compile(cuba).run(x)
    assert run.latency_steps == 1
    assert torch.allclose(run.outputs, cuba(x).detach(), rtol=1e-5, atol=1e-5)
    # LIF -> CUBA: real spikes through the synapse; CUBA -> LIF: the second layer's bias waits for its input.
    lif_cuba = nn.Sequential(
        _linear(6, 12, scale=3.0, seed=11),
        LIF(0.7, reset="zero"),
        _linear(12, 4, seed=12),
        CUBA(0.6, 0.9, threshold=1e6, reset="zero", output="membrane"),
    )
    cuba_lif = nn.Sequential(
        _linear(6, 12, seed=13),
        CUBA(0.8, 0.9, threshold=1e6, reset="zero"),
        _linear(12, 4, seed=14),
        LIF(0.9, threshold=1e6, reset="zero", output="membrane"),
    )
    for model in (lif_cuba, cuba_lif):
        run = _compile(model).run(x)
        assert run.latency_steps == 1
        assert torch.allclose(run.outputs, model(x).detach(), rtol=1e-5, atol=1e-5)
    assert _layer_outputs(lif_cuba, x)[0].sum() > 50


def _cuba_rate_errors(refractory_steps: float) -> tuple[float, float, float]:
    errors, totals = [], []
    for seed, (alpha, beta) in enumerate([(0.8, 0.9), (0.5, 0.7), (0.9, 0.95)]):
        model = nn.Sequential(_linear(8, 30, seed=seed), CUBA(alpha, beta, reset="zero"))
        x = _spikes(200, 2, 8, seed=20 + seed)
        nengo_spikes = _compile(model, cuba_refractory_steps=refractory_steps).run(x).outputs
        torch_spikes = model(x).detach()
        errors.append((nengo_spikes.mean(0) - torch_spikes.mean(0)).abs())
        totals.append((float(nengo_spikes.sum()), float(torch_spikes.sum())))
    error = torch.cat([e.flatten() for e in errors])
    relative_total = abs(sum(n for n, _ in totals) / sum(t for _, t in totals) - 1)
    return float(error.mean()), float(error.max()), relative_total


def test_cuba_rates_match_within_tolerance():
    # Measured (180 neurons x 200 steps, mean rate 0.16 spikes/step): per-neuron rate error mean 0.007,
    # max 0.075 spikes/step, total spikes within 1.7 % (tau_ref of 1.0 / 2.0 steps: mean 0.048 / 0.025).
    # snnTorch's CUBA holds the membrane at zero for the whole step after a spike; nengo counts tau_ref
    # from the sub-step crossing: 1.5 steps matches best.
    mean, worst, total = _cuba_rate_errors(1.5)
    assert mean < 0.015 and worst < 0.15 and total < 0.05
    assert _cuba_rate_errors(1.0)[0] > 2 * mean  # one step of refractoriness fires too often
    assert _cuba_rate_errors(2.0)[0] > 2 * mean  # two steps too rarely


def test_model_starting_with_a_spiking_layer_takes_its_width_from_calibration():
    model = nn.Sequential(LIF(0.9, reset="zero"))
    x = torch.rand(30, 2, 5, generator=torch.Generator().manual_seed(30)) * 0.5
    compiled = backends.get("nengo").compile(model, calibration=x)
    assert torch.equal(compiled.run(x).outputs, model(x))
    with pytest.raises(ConfigError, match="n_inputs"):
        backends.get("nengo").compile(nn.Sequential(LIF(0.9, reset="zero")))


def test_describe_lists_time_constants_scaling_and_synapse():
    model = nn.Sequential(_linear(4, 6), LIF(0.9, reset="zero"), _linear(6, 3), CUBA(0.8, 0.9, reset="zero"))
    rows = _compile(model).describe()
    assert [r["name"] for r in rows] == ["1: LIF", "3: CUBA"]
    assert rows[0]["tau_ref"] == 0.0 and rows[0]["synapse"] == "None"
    assert rows[0]["tau_rc"] == pytest.approx(-DT / math.log(0.9), rel=1e-6)
    assert rows[1]["synapse"].startswith("Lowpass(tau=") and rows[1]["tau_ref"] == pytest.approx(1.5 * DT)
    assert rows[0]["gain"] == pytest.approx(10.0, rel=1e-6)


def test_capabilities_are_honest_and_the_suite_passes():
    from hybridai.testing import assert_conforms

    caps = backends.get("nengo").capabilities
    assert caps.bit_exact is False and caps.hardware == ()  # continuous-time LIF in software
    assert_conforms("nengo")


@pytest.mark.parametrize(
    ("model", "words"),
    [
        (nn.Sequential(nn.Linear(3, 4), LIF(0.9)), ["model[1].reset", "'subtract'", "reset='zero'"]),
        (nn.Sequential(nn.Linear(3, 4), CUBA(0.8, 0.9)), ["model[1].reset", "CUBA", "subtractive"]),
        (nn.Sequential(nn.Linear(3, 4), nn.Tanh()), ["model[1]", "Tanh", "hybridai.LIF"]),
        (nn.Sequential(nn.Linear(3, 4), LIF(torch.tensor([0.5, 0.6, 0.7, 0.8]), reset="zero")), ["beta", "per-neuron"]),
        (nn.Sequential(nn.Linear(3, 4), LIF(1.0, reset="zero")), ["beta", "1.0", "[0, 1)"]),
        (nn.Sequential(nn.Linear(3, 4), _learnt_threshold(-1.0)), ["threshold", "-1.0", "> 0"]),
        (nn.Sequential(nn.Linear(3, 4), LIF(0.9, reset="zero", output="both")), ["output", "'both'"]),
        (
            nn.Sequential(
                nn.Linear(3, 4), LIF(0.9, reset="zero", output="membrane"), nn.Linear(4, 2), LIF(0.9, reset="zero")
            ),
            ["model[1]", "'membrane'", "'spikes'"],
        ),
        (nn.Sequential(nn.Linear(3, 4), LIF(0.9, reset="zero"), nn.Linear(4, 2)), ["trailing nn.Linear"]),
        (nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2), LIF(0.9, reset="zero")), ["model[1]", "nn.Linear"]),
        (
            nn.Sequential(nn.Linear(3, 4), LIF(0.9, reset="zero"), nn.Linear(4, 2), LIF(0.9, reset="zero", dt=2e-3)),
            ["dt", "0.001", "0.002"],
        ),
        (
            nn.Sequential(nn.Linear(3, 4), LIF(0.9, reset="zero"), RateDecoder(), nn.Linear(4, 2)),
            ["model[3]", "decoder"],
        ),
        ("not a model", ["model", "str"]),
    ],
)
def test_unsupported_models_are_refused_naming_the_layer(model, words):
    with pytest.raises(ConfigError) as info:
        _compile(model)
    for word in words:
        assert word in str(info.value)


def test_bad_inputs_and_options():
    compiled = _compile(nn.Sequential(_linear(4, 3), LIF(0.9, reset="zero")))
    with pytest.raises(ShapeError, match=r"x.shape=\(10, 2, 5\).*\[T, B, 4\]"):
        compiled.run(torch.zeros(10, 2, 5))
    with pytest.raises(ShapeError, match="x.shape"):
        compiled.run(torch.zeros(2, 4))
    with pytest.raises(ConfigError, match="NaN"):
        compiled.run(torch.full((3, 1, 4), float("nan")))
    with pytest.raises(HybridAIError, match="nengo:gpu"):
        backends.get("nengo:gpu")
    with pytest.raises(ConfigError, match="cuba_refractory_steps=-1"):
        backends.get("nengo", cuba_refractory_steps=-1)
    with pytest.raises(ConfigError, match="unroll"):
        backends.get("nengo", unroll=True)
