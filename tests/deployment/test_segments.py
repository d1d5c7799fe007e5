"""Cutting a model asks the chip what it takes: one predicate for a layer's kind, regions bounded by the chip's
layer kinds, a frames chip's front end, and today's rules without a chip (issue 29, part 1 and 2)."""

from __future__ import annotations

import pytest
from torch import nn

import hybridai
from hybridai.core.capabilities import ChipCapabilities
from hybridai.core.errors import ConfigError
from hybridai.deployment import cut
from hybridai.neuromorphic.segments import chips_taking
from hybridai.spiking import LIF, RateDecoder, SigmaDelta, SpikeCountDecoder, TimeDistributed, kind_of
from hybridai.spiking.graph import is_spiking


def caps(name: str) -> ChipCapabilities:
    return hybridai.backends.get(name).capabilities


def labels(model: nn.Module, chip: str | None = None) -> list[str]:
    return [s.label for s in cut(model, caps(chip) if chip else None, chip=chip or "the chip")]


def sigma_delta_model() -> nn.Sequential:
    """The issue's model, its circuit left out (a Tanh stands in: the cut around the chip is the point)."""
    return nn.Sequential(
        SigmaDelta(input="value"),
        TimeDistributed(nn.Linear(6, 8, bias=False)),
        SigmaDelta(features=8),
        RateDecoder(),
        nn.Linear(8, 2),
        nn.Tanh(),
    )


def test_kind_of_is_the_one_predicate_and_unwraps_time_distributed():
    assert kind_of(TimeDistributed(nn.Linear(2, 3))) == "dense"
    assert kind_of(TimeDistributed(TimeDistributed(nn.Conv2d(1, 1, 3)))) == "conv"
    assert [kind_of(m) for m in (LIF(0.9), hybridai.CUBA(), SigmaDelta(), SpikeCountDecoder(), nn.Tanh())] == [
        "lif",
        "cuba",
        "sigma_delta",
        "decoder",
        None,
    ]
    assert is_spiking(SigmaDelta()) and is_spiking(LIF(0.9)) and not is_spiking(TimeDistributed(nn.Linear(2, 2)))
    assert hybridai.spiking.kind_of is kind_of


def test_without_a_chip_a_sigma_delta_layer_counts_as_spiking():
    # the issue: deploy(..., chip="loihi2") said "the model has no spiking layers"
    assert labels(sigma_delta_model()) == ["spiking [0-3]", "classical [4-5]"]


def test_a_chip_bounds_its_region_by_the_kinds_it_takes():
    model = nn.Sequential(
        nn.Linear(4, 6), LIF(0.9), nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 3), LIF(0.9), SpikeCountDecoder()
    )
    assert labels(model) == ["spiking [0-6]"]  # no chip: the region runs through the ReLU, as before
    assert labels(model, "loihi") == ["spiking [0-2]", "classical [3]", "spiking [4-6]"]  # loihi takes no ReLU
    with_noops = nn.Sequential(nn.Linear(4, 6), nn.Dropout(0.1), LIF(0.9), nn.Identity(), SpikeCountDecoder())
    assert labels(with_noops, "loihi") == ["spiking [0-4]"]  # no-ops are taken


def test_a_chip_that_declares_nothing_gets_the_region_whole():
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), LIF(0.9), SpikeCountDecoder(), nn.Tanh())
    assert (
        [s.label for s in cut(model, ChipCapabilities(), chip="plugin")]
        == labels(model)
        == [
            "spiking [0-3]",
            "classical [4]",
        ]
    )


def test_a_spiking_layer_the_chip_does_not_take_is_refused_by_name_with_the_chips_that_do():
    with pytest.raises(ConfigError) as caught:
        cut(sigma_delta_model(), caps("loihi"), chip="loihi")
    message = str(caught.value)
    assert message.startswith("model[0]='SigmaDelta' is not valid; accepted: a layer loihi compiles"), message
    assert "loihi takes an nn.Sequential of [nn.Linear, hybridai.LIF" in message  # its capabilities.takes
    assert "sigma_delta layers run on 'loihi2'" in message
    lif = nn.Sequential(nn.Linear(4, 6), LIF(0.9), SpikeCountDecoder(), nn.Linear(6, 2))
    with pytest.raises(
        ConfigError, match=r"model\[1\]='LIF'.*akida takes nn.Linear.*lif layers run on 'loihi', 'nengo'"
    ):
        cut(lif, caps("akida"), chip="akida")
    assert set(chips_taking("lif")) == {"loihi", "nengo"} and chips_taking("sigma_delta") == ["loihi2"]


def cnn(relu_after_features: bool) -> nn.Sequential:
    features = [nn.Linear(16, 8), *([nn.ReLU()] if relu_after_features else [])]
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), *features, nn.Linear(8, 2), nn.Tanh()
    )


def test_a_frames_chip_takes_the_front_end_up_to_its_output_layer():
    # hidden layers of a frames chip are ReLU layers: the feature Linear without one is the chip's output layer
    # its segment is the chip's (domain spiking), labelled by what runs there: ReLU activations, not spikes
    assert labels(cnn(relu_after_features=False), "akida") == ["activations [0-4]", "classical [5-6]"]
    assert labels(cnn(relu_after_features=True), "akida") == ["activations [0-6]", "classical [7]"]
    assert [s.domain for s in cut(cnn(relu_after_features=True), caps("akida"), chip="akida")] == [
        "spiking",
        "classical",
    ]
    assert labels(cnn(relu_after_features=True)) == ["classical [0-7]"]  # no chip: a CNN is classical


def test_a_frames_chip_refuses_a_first_layer_it_does_not_take():
    with pytest.raises(ConfigError, match=r"model\[0\]='Tanh' is not valid; accepted: a first layer akida compiles"):
        cut(nn.Sequential(nn.Tanh(), nn.Linear(2, 2)), caps("akida"), chip="akida")
    with pytest.raises(ConfigError, match=r"no nn.Linear or nn.Conv2d for akida"):
        cut(nn.Sequential(nn.ReLU(), nn.Tanh()), caps("akida"), chip="akida")
