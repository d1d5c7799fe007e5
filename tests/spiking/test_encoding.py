"""Encoders, decoders and adapters; a spiking block inside nn.Sequential with classical and quantum layers."""

import math

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai import (
    LIF,
    DeltaEncoder,
    LatencyEncoder,
    MembraneDecoder,
    QuantumLayer,
    RateDecoder,
    RateEncoder,
    RepeatEncoder,
    SpikeCountDecoder,
    TimeDistributed,
)
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError


def test_rate_encoder_is_seeded_and_has_the_right_rate():
    x = torch.tensor([[0.0, 0.25, 0.5, 1.0]]).repeat(64, 1)
    a, b = RateEncoder(200, seed=3), RateEncoder(200, seed=3)
    first = a(x)
    assert first.shape == (200, 64, 4) and set(first.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(first, b(x))  # same seed, same spikes
    assert not torch.equal(a(x), first)  # the stream moves on between calls
    a.reseed()
    assert torch.equal(a(x), first)
    assert not torch.equal(RateEncoder(200, seed=4)(x), first)
    rates = first.mean((0, 1))
    torch.testing.assert_close(rates, torch.tensor([0.0, 0.25, 0.5, 1.0]), atol=0.01, rtol=0)
    half = RateEncoder(200, gain=0.5, seed=3)(x).mean((0, 1))
    torch.testing.assert_close(half, torch.tensor([0.0, 0.125, 0.25, 0.5]), atol=0.01, rtol=0)


def test_rate_encoder_passes_gradients_straight_through():
    x = torch.full((2, 3), 0.4, requires_grad=True)
    RateEncoder(10, gain=2.0, seed=0)(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((2, 3), 20.0))


def test_rate_encoder_rejects_probabilities_outside_unit_interval():
    with pytest.raises(ConfigError, match=r"gain \* x in \[-0.5, 0.5\].*nn.Sigmoid\(\)"):
        RateEncoder(5)(torch.tensor([[-0.5, 0.5]]))
    clamped = RateEncoder(5, clamp=True)(torch.tensor([[-0.5, 1.5]]))
    assert torch.equal(clamped[:, 0], torch.tensor([[0.0, 1.0]] * 5))
    with pytest.raises(ConfigError, match="NaN"):
        RateEncoder(5)(torch.tensor([[float("nan")]]))


def test_latency_encoder_spikes_once_and_earlier_for_larger_values():
    x = torch.tensor([[1.0, 0.75, 0.5, 0.0]])
    spikes = LatencyEncoder(5)(x)
    assert spikes.shape == (5, 1, 4)
    assert spikes.sum(0).tolist() == [[1.0, 1.0, 1.0, 0.0]]  # zero (below threshold) never spikes
    assert LatencyEncoder(5).spike_steps(x).tolist() == [[0, 1, 2, 5]]


def test_latency_log_method_follows_the_rc_charging_time():
    x = torch.tensor([[0.9, 0.05, 0.011, 0.0101, 0.005]])
    steps = LatencyEncoder(20, method="log", tau=5.0, threshold=0.01).spike_steps(x)
    expected = [round(5.0 * math.log(v / (v - 0.01))) for v in (0.9, 0.05, 0.011)]
    assert expected == [0, 1, 12]
    assert steps.tolist() == [[*expected, 20, 20]]  # too late for 20 steps, and below threshold: no spike
    assert LatencyEncoder(20, method="log", tau=5.0)(x).sum().item() == 3


def test_delta_encoder_marks_changes_with_polarity():
    signal = torch.tensor([0.0, 0.0, 0.5, 0.5, 0.1, 0.15]).reshape(6, 1, 1)
    assert DeltaEncoder(0.2)(signal).flatten().tolist() == [0, 0, 1, 0, -1, 0]
    assert DeltaEncoder(0.2, off_spikes=False)(signal).flatten().tolist() == [0, 0, 1, 0, 0, 0]
    assert DeltaEncoder(0.2, from_zero=True)(signal + 1).flatten().tolist() == [1, 0, 1, 0, -1, 0]


def test_decoders():
    spikes = torch.tensor([[[1.0, 0.0]], [[1.0, 1.0]], [[0.0, 0.0]], [[1.0, 0.0]]])
    assert SpikeCountDecoder()(spikes).tolist() == [[3.0, 1.0]]
    assert RateDecoder()(spikes).tolist() == [[0.75, 0.25]]
    mem = torch.tensor([[[0.1]], [[0.9]], [[0.4]]])
    assert MembraneDecoder("max")(mem).item() == pytest.approx(0.9)
    assert MembraneDecoder("mean")(mem).item() == pytest.approx(0.4667, abs=1e-4)
    assert MembraneDecoder("last")(mem).item() == pytest.approx(0.4)
    with pytest.raises(ShapeError, match="output='both'"):
        RateDecoder()(LIF(0.9, output="both")(torch.rand(3, 1, 2)))
    with pytest.raises(ShapeError, match=r"x.shape=\(4, 2\)"):
        SpikeCountDecoder()(torch.rand(4, 2))


def test_repeat_encoder_and_time_distributed():
    x = torch.rand(3, 2, requires_grad=True)
    repeated = RepeatEncoder(4)(x)
    assert repeated.shape == (4, 3, 2) and torch.equal(repeated[2], x)
    repeated.sum().backward()
    assert torch.equal(x.grad, torch.full((3, 2), 4.0))
    conv = nn.Conv2d(2, 5, 3, padding=1)
    frames = torch.rand(6, 4, 2, 8, 8)
    out = TimeDistributed(conv)(frames)
    assert out.shape == (6, 4, 5, 8, 8)
    assert torch.allclose(out[3], conv(frames[3]))
    with pytest.raises(ShapeError, match=r"x.shape=\(4, 2\)"):
        TimeDistributed(conv)(torch.rand(4, 2))


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: RateEncoder(0), ["num_steps=0", "positive int"]),
        (lambda: RateEncoder(5, gain=-1), ["gain=-1", "> 0"]),
        (lambda: RateEncoder(5, seed=1.5), ["seed=1.5", "an int"]),
        (lambda: LatencyEncoder(5, method="exp"), ["method='exp'", "'linear', 'log'"]),
        (lambda: MembraneDecoder("sum"), ["reduction='sum'", "'max', 'mean', 'last'"]),
        (lambda: DeltaEncoder(0), ["threshold=0", "> 0"]),
        (lambda: TimeDistributed("conv"), ["module='str'", "nn.Module"]),
    ],
)
def test_bad_arguments(build, words):
    with pytest.raises(HybridAIError) as info:
        build()
    assert all(w in str(info.value) for w in words), str(info.value)


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.BasicEntanglerLayers(weights, wires=range(2))
    return [qml.expval(qml.PauliZ(w)) for w in range(2)]


def test_spiking_block_between_classical_and_quantum_layers_trains_end_to_end():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(6, 8),
        nn.Sigmoid(),
        RateEncoder(num_steps=12, seed=1),
        nn.Linear(8, 4),
        LIF(0.8, threshold=0.5, learn_beta=True),
        RateDecoder(),
        nn.Linear(4, 2),
        QuantumLayer(circuit, 2, {"weights": (1, 2)}),
        nn.Linear(2, 3),
    )
    x, y = torch.rand(16, 6), torch.randint(0, 3, (16,))
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    for index in (0, 3, 4, 7):  # classical before the encoder, the spiking block, the circuit
        grads = [p.grad for p in model[index].parameters()]
        assert grads and all(g is not None and torch.isfinite(g).all() and g.abs().sum() > 0 for g in grads), index
    text = hybridai.summary(model, show=False)
    assert "4 neurons" in text and "2 qubits" in text and "1 quantum" in text and "spiking" in text
    hybridai.place(model, spiking="torch:cpu")
    assert model[4].backend == "torch:cpu"
    with pytest.raises(HybridAIError, match="pennylane:default.qubit.*not a placement"):  # a quantum executor
        hybridai.place(model, spiking="pennylane:default.qubit")
    assert model[4].backend == "torch:cpu"  # a refused placement changes nothing
