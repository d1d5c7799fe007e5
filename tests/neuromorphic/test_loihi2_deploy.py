"""The loihi2 backend: a trained sigma-delta network compiled to Loihi 2 registers equals its quantization-aware
torch model on every message, counts its events honestly, and refuses what the chip cannot compute."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import HybridAIError, ShapeError
from hybridai.neuromorphic import loihi2
from hybridai.neuromorphic.fixed_point import graded_sums
from hybridai.spiking import LIF, SigmaDelta, SpikeCountDecoder, TimeDistributed, record_messages


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
    assert layers[0].synaptic_ops == int(loihi2.compile(model).host_input(x).ne(0).sum())
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


def conv_network() -> nn.Sequential:
    torch.manual_seed(5)
    return nn.Sequential(
        SigmaDelta(threshold=0.05, scale=2**-6, input="value"),
        TimeDistributed(nn.Conv2d(2, 4, 3, stride=2, padding=1, bias=False)),
        SigmaDelta(threshold=0.03, scale=2**-8, bias=0.02),
        TimeDistributed(nn.Conv2d(4, 6, 3, padding=1, groups=2, bias=False)),
        SigmaDelta(threshold=0.03, scale=2**-8),
        TimeDistributed(nn.Flatten()),
        nn.Linear(6 * 4 * 4, 3, bias=False),
        SpikeCountDecoder(),
    ).double()


def maps(seed: int = 6) -> torch.Tensor:
    return torch.rand(10, 3, 2, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).cumsum(0) / 5


def test_a_convolutional_network_equals_its_quantization_aware_model_on_every_message():
    model, x = conv_network(), maps()
    chip = hybridai.deploy(model, backend="loihi2")
    with record_messages() as record:
        expected = loihi2.fake_quantize(model)(x)
    messages = chip.compiled.messages(x)
    assert [tuple(m.shape) for m in messages] == [(10, 3, 2, 8, 8), (10, 3, 4, 4, 4), (10, 3, 6, 4, 4)]
    for float_messages, scale, integers in zip(record.messages, (2**-6, 2**-8, 2**-8), messages, strict=True):
        assert torch.equal((float_messages / scale).round().long(), integers) and integers.ne(0).any()
    assert torch.equal(chip.run(x), expected)


def dense_equivalent(conv: loihi2.Convolution, weights: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """The [outputs, inputs] matrix of a convolution on inputs of ``shape`` (C, H, W), column by column."""
    basis = torch.eye(math.prod(shape), dtype=torch.float64).reshape(-1, *shape)
    return conv(basis, weights.double()).flatten(1).T.round().long()


def test_a_convolution_equals_its_dense_matrix_and_counts_each_message_once_per_target():
    gen = torch.Generator().manual_seed(7)
    conv = loihi2.Convolution(stride=(2, 1), padding=(1, 0), groups=1)
    weights = torch.randint(-127, 128, (3, 2, 3, 2), generator=gen) * 2
    config = loihi2.SigmaDeltaConfig(vth=4, bias=1)
    a_in = torch.randint(-6, 7, (9, 2, 2, 5, 4), generator=gen)
    first = loihi2.GradedLayer("in", loihi2.SigmaDeltaConfig(vth=2))
    run = loihi2.run_graded_network([first, loihi2.GradedLayer("conv", config, weights, -3, conv)], a_in)
    matrix = dense_equivalent(conv, weights, (2, 5, 4))
    flat = loihi2.run_graded_network([first, loihi2.GradedLayer("dense", config, matrix, -3)], a_in.flatten(2))
    assert torch.equal(run.messages[1].flatten(2).long(), flat.messages[1].long())
    assert run.messages[1].ne(0).any()
    fan_out = (dense_equivalent(conv, torch.ones_like(weights), (2, 5, 4)) != 0).sum(0)  # targets per input
    sent = run.messages[0].flatten(2).ne(0).sum((0, 1))  # messages per input
    assert run.synaptic_ops[1] == int((sent * fan_out).sum())
    assert run.dense_ops[1] == 9 * 2 * matrix.shape[0] * weights[0].numel()


def test_what_a_convolutional_chip_cannot_compute_is_refused_by_name():
    def refused(conv, after, match):
        model = nn.Sequential(SigmaDelta(input="value"), TimeDistributed(conv), after)
        with pytest.raises(HybridAIError, match=match):
            hybridai.deploy(model, backend="loihi2")

    refused(nn.Conv2d(2, 3, 3), SigmaDelta(), r"model\[1\].bias")
    refused(nn.Conv2d(2, 3, 3, bias=False, padding=1, padding_mode="reflect"), SigmaDelta(), "padding")
    refused(nn.Conv2d(2, 3, 3, bias=False), SigmaDelta(features=3, learn_bias=True), "one bias after a Conv2d")
    with pytest.raises(HybridAIError, match="read-out is a Linear"):
        readout = TimeDistributed(nn.Conv2d(2, 3, 3, bias=False))
        hybridai.deploy(nn.Sequential(SigmaDelta(input="value"), readout), backend="loihi2")
    chip = hybridai.deploy(conv_network(), backend="loihi2")
    with pytest.raises(ShapeError, match=r"\[T, B, C, H, W\]"):
        chip.run(torch.rand(4, 2, 128))


def test_bad_arguments_to_the_network_runner_are_named():
    first = loihi2.GradedLayer("in", loihi2.SigmaDeltaConfig(vth=2))
    a_in = torch.zeros(3, 1, 2, dtype=torch.long)
    with pytest.raises(HybridAIError, match="layers"):
        loihi2.run_graded_network([], a_in)
    with pytest.raises(HybridAIError, match=r"layers\[1\].weights"):
        loihi2.run_graded_network([first, first], a_in)
    with pytest.raises(HybridAIError, match="a_in"):
        loihi2.run_graded_network([first], torch.full((3, 1, 2), 0.5))
    with pytest.raises(HybridAIError, match="a_in.shape"):
        loihi2.run_graded_network([first], torch.zeros(3, 2, dtype=torch.long))
    with pytest.raises(HybridAIError, match="readout"):
        loihi2.run_graded_network([first], a_in, readout=torch.zeros(3, dtype=torch.long))
