"""hybridai.deploy: the report compares float model and chip, prices events, and refuses bad input."""

import pytest
import torch
from torch import nn

import hybridai
from hybridai.cli import main
from hybridai.core.errors import ConfigError, UnsupportedOperationError
from hybridai.deployment import deploy


def _snn(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(12, 16),
        hybridai.LIF(0.85, reset="zero"),
        nn.Linear(16, 4),
        hybridai.LIF(0.85, reset="zero"),
        hybridai.SpikeCountDecoder(),
    )


def _spikes(batch: int = 6, steps: int = 20) -> torch.Tensor:
    return (torch.rand(steps, batch, 12, generator=torch.Generator().manual_seed(1)) < 0.4).float()


def test_nengo_report_agrees_with_the_float_lif_model_and_counts_activity():
    model, x = _snn(), _spikes()
    labels = model(x).argmax(1)
    report = deploy(model, "nengo").report(x, labels)
    assert report.agreement["prediction agreement"] == 1.0  # nengo's LIF with tau_ref=0 is hybridai's reset-to-zero
    assert report.agreement["accuracy, float model"] == report.agreement["accuracy, deployed"] == 1.0
    assert report.agreement["max |difference|"] == 0.0
    hidden = model[1](model[0](x))
    assert report.run.layers[0].spikes == int(hidden.sum())
    assert report.run.layers[0].neuron_updates == 16 * 20 * 6
    assert report.energy is None
    text = str(report)
    assert "no public per-event figures" in text and "spikes/step" in text


def test_user_energy_constants_are_priced_and_printed_with_their_source():
    model, x = _snn(), _spikes()
    constants = {"synaptic_op": (1e-11, "bench 7"), "neuron_update_active": 5e-11, "neuron_update_inactive": 2e-11}
    report = deploy(model, "nengo", energy=constants).report(x)
    run = report.run
    expected = sum(
        a.synaptic_ops * 1e-11 + a.active_updates * 5e-11 + (a.neuron_updates - a.active_updates) * 2e-11
        for a in run.layers
    )
    assert report.energy.total == pytest.approx(expected)
    assert "bench 7" in str(report) and "nJ per sample" in str(report)


def test_deploy_refuses_non_neuromorphic_backends_and_non_models():
    with pytest.raises(ConfigError, match=r"backend='torch' is a placement, not a chip compiler.*'nengo'"):
        deploy(_snn(), "torch")
    with pytest.raises(ConfigError, match="model"):
        deploy("model.pt", "nengo")
    with pytest.raises(ConfigError, match="labels.shape"):
        deploy(_snn(), "nengo").report(_spikes(), torch.zeros(3))
    with pytest.raises(ConfigError, match="labels"):  # spikes out, no classes to score
        deploy(_snn()[:4], "nengo").report(_spikes(), torch.zeros(6))


def test_a_neuromorphic_backend_cannot_be_placed_layer_by_layer():
    with pytest.raises(UnsupportedOperationError, match="hybridai.deploy"):
        hybridai.place(_snn(), spiking="nengo")
    with pytest.raises(UnsupportedOperationError, match="hybridai.deploy"):
        hybridai.LIF(0.9, backend="nengo")


def test_cli_deploy_report_prints_the_report(tmp_path, capsys):
    model, x = _snn(), _spikes()
    torch.save(model, tmp_path / "model.pt")
    torch.save((x, model(x).argmax(1)), tmp_path / "data.pt")
    assert main(["deploy-report", str(tmp_path / "model.pt"), str(tmp_path / "data.pt"), "--backend", "nengo"]) == 0
    out = capsys.readouterr().out
    assert "prediction agreement" in out and "accuracy, deployed" in out and "nengo" in out
    code = main(["deploy-report", str(tmp_path / "missing.pt"), str(tmp_path / "data.pt"), "--backend", "nengo"])
    assert code == 2 and "missing.pt" in capsys.readouterr().err
