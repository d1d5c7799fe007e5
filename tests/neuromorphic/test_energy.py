"""Energy estimates: published Loihi constants with their source, user constants, MAC baseline."""

import pytest
import torch

from hybridai.core.chip import ChipRun, LayerActivity
from hybridai.core.errors import ConfigError
from hybridai.neuromorphic.energy import FP32_MAC, LOIHI_1, energy_model, estimate, mac_energy


def _run() -> ChipRun:
    layers = (
        LayerActivity("0: LIF", neurons=10, spikes=30, synaptic_ops=400, neuron_updates=200, active_updates=150),
        LayerActivity("1: LIF", neurons=2, spikes=5, synaptic_ops=60, neuron_updates=40, active_updates=40),
    )
    return ChipRun(torch.zeros(2, 2), layers, samples=2, time_steps=10, latency_steps=2)


def test_loihi_estimate_is_the_hand_computed_sum_of_events():
    result = estimate(_run(), LOIHI_1)
    first = 400 * 23.6e-12 + 150 * 81e-12 + 50 * 52e-12 + 30 * 1.7e-12
    second = 60 * 23.6e-12 + 40 * 81e-12 + 0 * 52e-12 + 5 * 1.7e-12
    assert result.per_layer == (("0: LIF", pytest.approx(first)), ("1: LIF", pytest.approx(second)))
    assert result.total == pytest.approx(first + second)
    assert result.per_sample == pytest.approx((first + second) / 2)
    assert dict(result.per_event)["synaptic_op"] == pytest.approx(460 * 23.6e-12)


def test_every_published_constant_names_its_source():
    assert energy_model("loihi") is LOIHI_1
    for _, constant in LOIHI_1.constants():
        assert "Davies et al." in constant.source and "2018" in constant.source
    assert energy_model("akida") is None  # no public per-event figures
    assert "Horowitz" in FP32_MAC.source and mac_energy(1000) == pytest.approx(4.6e-9)


def test_user_constants_replace_published_ones_and_keep_their_source():
    model = energy_model(
        "akida", {"synaptic_op": (1e-12, "my board, 2026"), "neuron_update_active": 2e-12, "neuron_update_inactive": 0}
    )
    assert model.synaptic_op.source == "my board, 2026" and model.neuron_update_active.source == "user-supplied"
    assert model.spike is None
    assert estimate(_run(), model).total == pytest.approx(460e-12 + 190 * 2e-12)


@pytest.mark.parametrize(
    "constants, named",
    [
        ({"synaptic_op": 1e-12}, "neuron_update_active"),
        ({"synaptic_op": 1, "neuron_update_active": 1, "neuron_update_inactive": 1, "hop": 1}, "hop"),
        ({"synaptic_op": -1.0, "neuron_update_active": 1, "neuron_update_inactive": 1}, "synaptic_op"),
        ([1, 2, 3], "energy"),
    ],
)
def test_bad_constants_are_named(constants, named):
    with pytest.raises(ConfigError, match=named):
        energy_model("loihi", constants)
