"""SigmaDelta: the integer-grid sigma-delta rule in torch, its straight-through gradients, the message record."""

import math
import threading

import pytest
import torch
from torch import nn

from hybridai.core.errors import ConfigError, ShapeError
from hybridai.spiking import SigmaDelta, record_messages


def reference_messages(x, threshold_steps, scale, bias_steps=0, cum_error=True, accumulate=True):
    """Plain-Python sigma-delta on the integer grid (one neuron stream): each delta input floored to the grid."""
    sigma, reference, out = 0, 0, []
    for value in x:
        sigma = sigma + math.floor(value / scale) if accumulate else round(value / scale)
        act = max(0, sigma + bias_steps)
        delta = act - reference
        message = delta if abs(delta) >= threshold_steps else 0
        reference = reference + message if cum_error else act
        out.append(message * scale)
    return out


@pytest.mark.parametrize("cum_error", [False, True])
def test_messages_follow_the_integer_rule(cum_error):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(12, 2, 3, generator=gen, dtype=torch.float64) * 0.2
    layer = SigmaDelta(threshold=0.1, scale=1 / 32, bias=0.05, cum_error=cum_error)
    out = layer(x)
    assert layer.threshold_steps == 4 and layer.integer_bias().item() == 2
    for b in range(2):
        for n in range(3):
            expected = reference_messages(x[:, b, n].tolist(), 4, 1 / 32, 2, cum_error)
            assert out[:, b, n].tolist() == pytest.approx(expected, abs=1e-12)
    steps = out / (1 / 32)
    assert torch.equal(steps, steps.round())  # every message is on the grid
    assert ((steps == 0) | (steps.abs() >= 4)).all()  # nothing below the threshold is sent


def test_cum_error_sum_tracks_the_activation_and_constant_input_goes_silent():
    x = torch.zeros(20, 1, 4)
    x[0] = 0.5  # a step: the activation jumps once and stays
    layer = SigmaDelta(threshold=0.05, scale=1 / 64, cum_error=True)
    out = layer(x)
    assert (out[1:] == 0).all() and torch.allclose(out[0], torch.full((1, 4), 0.5))
    slow = torch.full((40, 1, 1), 0.02)  # a slow ramp: 1.28 grid steps a step, floored to 1, below the threshold
    summed = SigmaDelta(threshold=0.05, scale=1 / 64, cum_error=True)(slow).cumsum(0)
    truth = torch.arange(1, 41).reshape(40, 1, 1) / 64  # the chip's sigma: one whole step per step
    assert ((summed - truth).abs() < 0.05).all()
    assert ((summed - truth).abs() > 0).any()  # the residue waits for the threshold
    assert SigmaDelta(threshold=0.05, scale=1 / 64, cum_error=False)(slow).abs().sum() == 0  # never sent
    assert SigmaDelta(threshold=0.05, scale=1 / 64)(torch.full((40, 1, 1), 0.01)).abs().sum() == 0  # floored away


def test_value_input_delta_encodes_frames():
    frames = torch.tensor([[[0.0]], [[0.5]], [[0.52]], [[0.2]]], dtype=torch.float64)
    out = SigmaDelta(threshold=0.1, scale=0.01, input="value")(frames)
    assert out.flatten().tolist() == pytest.approx([0.0, 0.5, 0.0, -0.3])  # against what was sent (0.5)
    dropped = SigmaDelta(threshold=0.1, scale=0.01, input="value", cum_error=False)(frames)
    assert dropped.flatten().tolist() == pytest.approx([0.0, 0.5, 0.0, -0.32])  # against the activation 0.52


def test_gradients_pass_straight_through_to_the_linear():
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Linear(3, 5, bias=False), SigmaDelta(threshold=0.05, scale=1 / 64, features=5, learn_bias=True)
    )
    x = torch.randn(6, 4, 3)
    out = net(x)
    out.sum(0).pow(2).sum().backward()
    assert net[0].weight.grad is not None and net[0].weight.grad.abs().sum() > 0
    assert net[1].bias.grad is not None and net[1].bias.grad.abs().sum() > 0


def test_record_collects_every_layer_without_state_on_the_layers():
    net = nn.Sequential(
        SigmaDelta(threshold=0.05, input="value"), nn.Linear(4, 3, bias=False), SigmaDelta(threshold=0.05)
    )
    x = torch.rand(10, 2, 4)
    out = net(x)  # outside a record: nothing is kept
    with record_messages() as record:
        again = net(x)
    assert torch.equal(out, again)
    assert len(record.messages) == 2 and record.slots() == 10 * 2 * 4 + 10 * 2 * 3
    sent = int((record.messages[0] != 0).sum() + (record.messages[1] != 0).sum())
    assert record.count() == sent and 0 < record.rate() < 1
    assert record.l1().requires_grad
    assert not any(hasattr(m, "messages") for m in net.modules())


def test_records_are_per_thread():
    layer = SigmaDelta(threshold=0.05, input="value")
    counts = {}

    def run(name, steps):
        with record_messages() as record:
            for _ in range(steps):
                layer(torch.rand(5, 1, 2))
        counts[name] = len(record.messages)

    threads = [threading.Thread(target=run, args=(name, n)) for name, n in (("a", 3), ("b", 7))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts == {"a": 3, "b": 7}


def test_bad_arguments_are_named():
    with pytest.raises(ConfigError, match="threshold"):
        SigmaDelta(threshold=0)
    with pytest.raises(ConfigError, match="scale"):
        SigmaDelta(scale=-1.0)
    with pytest.raises(ConfigError, match="input"):
        SigmaDelta(input="spikes")
    with pytest.raises(ConfigError, match="learn_bias"):
        SigmaDelta(learn_bias=True)
    with pytest.raises(ShapeError, match="x.shape"):
        SigmaDelta(features=4)(torch.zeros(3, 1, 5))
    with pytest.raises(ShapeError):
        SigmaDelta()(torch.zeros(3, 5))
