"""hybridai.deploy has one door: its keywords; ``deploy(model, chip, **options)`` is that door with the whole model on
the chip, and the former keyword names are refused naming deploy's own."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import ConfigError, HybridAIError


def snn() -> nn.Sequential:
    with torch.random.fork_rng():
        torch.manual_seed(2)
        return nn.Sequential(nn.Linear(20, 8), hybridai.LIF(0.9, reset="zero"), hybridai.SpikeCountDecoder())


def events() -> torch.Tensor:
    return (torch.rand(10, 6, 20, generator=torch.Generator().manual_seed(3)) < 0.4).float() * 3


def same(report_a, report_b) -> None:
    """Two reports of one batch agree on everything but the wall seconds."""
    assert [(s.name, s.backend, s.agreement, s.alone) for s in report_a.segments] == [
        (s.name, s.backend, s.agreement, s.alone) for s in report_b.segments
    ]
    run_a, run_b = report_a.run, report_b.run
    assert torch.equal(run_a.outputs, run_b.outputs)
    assert [(a.name, a.spikes, a.synaptic_ops, a.neuron_updates) for a in run_a.layers] == [
        (a.name, a.spikes, a.synaptic_ops, a.neuron_updates) for a in run_b.layers
    ]
    assert report_a.energy.per_sample == report_b.energy.per_sample and report_a.agreement == report_b.agreement


@pytest.mark.parametrize("quirks", ["lava", "nengo"])
def test_the_one_chip_form_builds_the_keyword_form_s_deployment(quirks):
    model, x, labels = snn(), events(), torch.arange(6) % 8
    alias = hybridai.deploy(model, "loihi", quirks=quirks)
    keywords = hybridai.deploy(model, chip="loihi", chip_options={"quirks": quirks})
    assert alias.segments == keywords.segments == [("spiking [0-2]", "loihi")]
    assert alias.backend.quirks == keywords.backend.quirks == quirks  # the options reach the chip either way
    same(alias.report(x, labels), keywords.report(x, labels))
    assert alias.report(x).run.layers[0].spikes > 0  # not a vacuous comparison


def test_the_one_chip_form_without_a_chip_is_loihi():
    model, x = snn(), events()
    same(hybridai.deploy(model).report(x), hybridai.deploy(model, chip="loihi").report(x))


@pytest.mark.parametrize(
    ("old", "value", "new", "shown"),
    [
        ("spiking", "loihi", "chip=", "spiking='loihi'"),
        (
            "spiking_options",
            {"quirks": "lava", "token": "secret"},
            "chip_options=",
            "spiking_options=['quirks', 'token']",
        ),
    ],
)
@pytest.mark.parametrize("positional", [(), ("loihi",)])
def test_the_former_keyword_names_are_refused_naming_deploy_s_own(old, value, new, shown, positional):
    with pytest.raises(ConfigError) as caught:
        hybridai.deploy(snn(), *positional, **{old: value})
    message = str(caught.value)
    assert isinstance(caught.value, HybridAIError)
    assert message.startswith(f"{shown} is not valid; accepted: {new} in its place"), message
    assert "secret" not in message  # an option's value is not shown


def test_chip_options_belong_to_the_keyword_form_and_options_to_the_one_chip_form():
    with pytest.raises(ConfigError, match=r"^chip_options='dict' is not valid; accepted: None in the one-chip form"):
        hybridai.deploy(snn(), "loihi", chip_options={"quirks": "lava"})
    with pytest.raises(ConfigError, match=r"^options=\['quirks'\] is not valid; accepted: chip_options=\{\.\.\.\}"):
        hybridai.deploy(snn(), chip="loihi", quirks="lava")
    with pytest.raises(ConfigError, match=r"^backend='loihi' is not valid; accepted: None when chip=, quantum="):
        hybridai.deploy(snn(), "loihi", chip="loihi")


def test_a_backend_that_is_no_chip_is_refused_naming_the_registered_chips():
    with pytest.raises(ConfigError) as caught:
        hybridai.deploy(snn(), chip="statevector")
    message = str(caught.value)
    assert message.startswith("chip='statevector'")
    assert all(repr(name) in message for name in ("loihi", "loihi2", "akida", "nengo"))
