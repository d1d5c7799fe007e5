"""The loihi2 backend: a trained sigma-delta network compiled to Loihi 2 registers equals its quantization-aware
torch model on every message, counts its events honestly, and refuses what the chip cannot compute."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import HybridAIError, ShapeError
from hybridai.neuromorphic import loihi2
from hybridai.neuromorphic.loihi2.graded_dense import graded_sums
from hybridai.spiking import LIF, SigmaDelta, SpikeCountDecoder, record_messages


def network(seed: int = 0, first: str = "value", readout: bool = True, scale: float = 2**-6) -> nn.Sequential:
    gen = torch.Generator().manual_seed(seed)
    layers: list[nn.Module] = [
        SigmaDelta(threshold=0.05, scale=scale, input=first),
        nn.Linear(12, 24, bias=False),
        SigmaDelta(threshold=0.03, scale=2**-7, features=24, learn_bias=True),
        nn.Linear(24, 16, bias=False),
        SigmaDelta(threshold=0.08, scale=2**-5, features=16, bias=0.05),
    ]
    if readout:
        layers += [nn.Linear(16, 3, bias=False), SpikeCountDecoder()]
    model = nn.Sequential(*layers).double()
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen, dtype=torch.float64) * 0.6)
        model[2].bias.copy_(torch.randn(24, generator=gen, dtype=torch.float64) * 0.1)
    return model


def frames(seed: int = 1, steps: int = 25, batch: int = 5) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    base = torch.rand(1, batch, 12, generator=gen, dtype=torch.float64)
    drift = torch.cumsum(0.04 * torch.randn(steps, batch, 12, generator=gen, dtype=torch.float64), 0)
    return (base + drift).clamp(0, 1)


@pytest.mark.parametrize(("first", "readout"), [("value", True), ("delta", True), ("value", False)])
def test_the_deployed_network_equals_its_quantization_aware_model_on_every_message(first, readout):
    model = network(first=first, readout=readout)
    x = frames() if first == "value" else torch.diff(frames(), dim=0, prepend=torch.zeros(1, 5, 12).double())
    chip = hybridai.deploy(model, backend="loihi2")
    with record_messages() as record:
        expected = loihi2.fake_quantize(model)(x)
    messages = chip.compiled.messages(x)
    assert len(messages) == len(record.messages) == 3
    for float_messages, layer, integers in zip(record.messages, (model[0], model[2], model[4]), messages, strict=True):
        steps = float_messages / layer.scale
        assert torch.equal(steps, steps.round())  # the QAT model is on the grid
        assert torch.equal(steps.long(), integers)
        assert integers.ne(0).any() and integers.eq(0).any()  # some sent, some not
    assert torch.equal(chip.run(x), expected)  # read-out sums (or last messages) exactly


def test_the_emulator_equals_lavas_rules_layer_by_layer_in_every_lane():
    """run_graded_network (float32, float64 or int64 lanes, chosen by bounds) against graded_dense's sums and
    run_sigma_delta, layer by layer; large inputs push it out of float32 and out of int32 (Lava's wraps)."""
    gen = torch.Generator().manual_seed(3)
    w = torch.randint(-127, 128, (7, 6), generator=gen) * 2
    layers = [
        loihi2.GradedLayer("in", loihi2.SigmaDeltaConfig(vth=3, bias=2)),
        loihi2.GradedLayer("hidden", loihi2.SigmaDeltaConfig(vth=5, bias=torch.arange(7) - 3), w, -2),
    ]
    readout = torch.randint(-100, 100, (2, 7), generator=gen)
    lanes = {20: torch.float32, 2**16: torch.float64, 2**26: torch.int64}  # the hidden layer's
    for magnitude, dtype in lanes.items():
        a_in = torch.randint(-magnitude, magnitude, (15, 4, 6), generator=gen)
        run = loihi2.run_graded_network(layers, a_in, readout)
        assert run.messages[1].dtype == dtype
        first = loihi2.run_sigma_delta(layers[0].config, a_in).messages
        second = loihi2.run_sigma_delta(layers[1].config, graded_sums(w, first, -2)).messages
        assert torch.equal(run.messages[0].long(), first)
        assert torch.equal(run.messages[1].long(), second)
        assert torch.equal(run.readout.long(), second @ readout.T)
        assert run.active[0] == int(a_in.ne(0).sum()) and run.active[1] == int(graded_sums(w, first, -2).ne(0).sum())


def test_activity_counts_messages_once_and_compares_with_a_dense_run():
    model = network()
    x = frames()
    report = hybridai.deploy(model, backend="loihi2").report(x)
    messages = hybridai.deploy(model, backend="loihi2").compiled.messages(x)
    layers = report.run.layers
    assert [a.name for a in layers] == ["0: SigmaDelta", "2: SigmaDelta", "4: SigmaDelta", "5: Linear"]
    steps, batch = x.shape[:2]
    assert report.run.latency_steps == 3 and report.run.time_steps == steps + 3
    for a, m in zip(layers, messages, strict=False):
        assert a.spikes == int(m.ne(0).sum())  # a graded message counts once, whatever its payload
    assert layers[1].synaptic_ops == layers[0].spikes * 24 and layers[3].synaptic_ops == layers[2].spikes * 3
    assert layers[1].dense_synaptic_ops == 12 * 24 * steps * batch
    assert all(a.synaptic_ops < a.dense_synaptic_ops for a in layers)
    assert layers[0].synaptic_ops == int(loihi2.compile_network(model, device="cpu").host_input(x).ne(0).sum())
    text = str(report)
    assert "syn. ops saved vs dense" in text and "no public per-event figures for 'loihi2'" in text


def test_energy_comes_only_from_user_constants():
    constants = {"synaptic_op": 1e-12, "neuron_update_active": 2e-12, "neuron_update_inactive": 0.0}
    report = hybridai.deploy(network(), backend="loihi2", energy=constants).report(frames())
    run = report.run
    expected = sum(a.synaptic_ops * 1e-12 + a.active_updates * 2e-12 for a in run.layers)
    assert report.energy.total == pytest.approx(expected)
    assert "user-supplied" in str(report)


def test_quantization_aware_training_reaches_the_float_weights():
    model = network()
    out = loihi2.fake_quantize(model)(frames())
    (out**2).sum().backward()
    assert model[1].weight.grad is not None and model[1].weight.grad.abs().sum() > 0
    assert model[2].bias.grad is not None


def test_what_the_chip_cannot_compute_is_refused_by_name():
    def refused(model, match):
        with pytest.raises(HybridAIError, match=match):
            hybridai.deploy(model, backend="loihi2")

    refused(nn.Sequential(SigmaDelta(input="value", cum_error=False), nn.Linear(3, 2, bias=False)), "cum_error")
    refused(nn.Sequential(SigmaDelta(input="value", scale=0.01), nn.Linear(3, 2, bias=False)), r"model\[0\].scale")
    refused(nn.Sequential(SigmaDelta(input="value"), nn.Linear(3, 2)), r"model\[1\].bias")
    refused(nn.Sequential(SigmaDelta(input="value"), nn.Linear(3, 2, bias=False), LIF(beta=0.9)), "loihi2")
    refused(nn.Sequential(nn.Linear(3, 2, bias=False), SigmaDelta()), "SigmaDelta input layer")
    refused(nn.Sequential(SigmaDelta(input="value"), nn.Linear(3, 2, bias=False), SigmaDelta(input="value")), "input")
    with pytest.raises(HybridAIError, match="options"):
        hybridai.deploy(network(), backend="loihi2", quirks="lava")
    chip = hybridai.deploy(network(), backend="loihi2")
    with pytest.raises(ShapeError, match="x.shape"):
        chip.run(torch.zeros(4, 2, 11))
    bad = frames()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ShapeError, match="NaN"):
        chip.run(bad)
    with pytest.raises(ShapeError, match="32-bit"):
        chip.run(frames() * 1e12)
    labels = torch.zeros(5, dtype=torch.long)
    with pytest.raises(ShapeError, match="batch-first"):
        chip.report(frames(steps=25, batch=5).transpose(0, 1)[:, :4], labels)  # [B=5, T=4, F]: refused
