"""Edges of the spiking layers where an answer used to be silently wrong (issue 28).

``from_snntorch`` walked into snnTorch neurons it does not convert (``RLeaky``, ``RSynaptic``,
``SConv2dLSTM``, ...): the neuron vanished and its recurrent Linear or Conv2d became a feed-forward layer
of the converted model, whose spikes then differed from snnTorch's. Any snnTorch module that is not
converted must be refused by name, saying what is supported. ``SigmaDelta`` turned NaN and inf into NaN
messages where ``LIF`` refuses them: it must refuse them the same way.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from hybridai import LIF
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.spiking import SigmaDelta, from_snntorch

snn = pytest.importorskip("snntorch")

NAN, INF = float("nan"), float("inf")


def _quiet(make):
    with warnings.catch_warnings():  # some snnTorch constructors warn about their own defaults
        warnings.simplefilter("ignore")
        return make()


# snnTorch modules hybridai does not convert, several of them with child modules (their recurrent weights)
UNSUPPORTED = {
    "RLeaky": lambda: snn.RLeaky(beta=0.9, linear_features=5, init_hidden=True),
    "RSynaptic": lambda: snn.RSynaptic(alpha=0.8, beta=0.9, linear_features=5, init_hidden=True),
    "RLeakyConv": lambda: snn.RLeaky(beta=0.9, conv2d_channels=5, kernel_size=3, init_hidden=True),
    "SConv2dLSTM": lambda: snn.SConv2dLSTM(5, 5, 3, init_hidden=True),
    "SLSTM": lambda: snn.SLSTM(5, 5, init_hidden=True),
    "LeakyParallel": lambda: snn.LeakyParallel(5, 5),
    "Alpha": lambda: snn.Alpha(alpha=0.9, beta=0.8, init_hidden=True),
    "Lapicque": lambda: snn.Lapicque(beta=0.9, init_hidden=True),
}


def _class_name(key: str) -> str:
    return "RLeaky" if key == "RLeakyConv" else key


@pytest.mark.parametrize("key", sorted(UNSUPPORTED))
def test_an_unconverted_snntorch_module_in_a_sequential_is_refused_by_name(key):
    module = _quiet(UNSUPPORTED[key])
    net = nn.Sequential(nn.Linear(4, 5), snn.Leaky(beta=0.9, init_hidden=True), module)
    with pytest.raises(ConfigError) as caught:
        from_snntorch(net)
    message = str(caught.value)
    assert "net[2]" in message and _class_name(key) in message, message
    assert "accepted" in message and "snntorch.Leaky" in message and "snntorch.Synaptic" in message, message


@pytest.mark.parametrize("key", ["RLeaky", "RSynaptic", "SConv2dLSTM"])
def test_an_unconverted_snntorch_child_of_a_plain_module_is_refused_by_name(key):
    class Net(nn.Module):  # snnTorch's tutorial style: the layers as attributes, applied in order
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(4, 5)
            self.lif1 = snn.Leaky(beta=0.9)
            self.rlif = _quiet(UNSUPPORTED[key])

    with pytest.raises(ConfigError) as caught:
        from_snntorch(Net())
    message = str(caught.value)
    assert "net.rlif" in message and key in message and "accepted" in message, message


def test_a_subclass_of_an_snntorch_neuron_with_children_is_not_walked_into():
    class Gated(snn.Leaky):  # a user's neuron built on Leaky, with a weight of its own
        def __init__(self) -> None:
            super().__init__(beta=0.9, init_hidden=True)
            self.gate = nn.Linear(5, 5)

    net = nn.Sequential(nn.Linear(4, 5), snn.Leaky(beta=0.9, init_hidden=True), Gated())
    with pytest.raises(ConfigError) as caught:
        from_snntorch(net)
    message = str(caught.value)
    assert "net[2]" in message and "Gated" in message and "accepted" in message, message


def test_the_recurrent_weight_no_longer_becomes_a_feed_forward_layer():
    """The wrong answer: an RLeaky after a Leaky converted to Linear, LIF, Linear (its recurrent weight)."""
    net = nn.Sequential(
        nn.Linear(4, 5),
        snn.Leaky(beta=0.9, init_hidden=True),
        snn.RLeaky(beta=0.9, linear_features=5, init_hidden=True),
    )
    with pytest.raises(ConfigError, match=r"net\[2\]='RLeaky' is not valid; accepted: "):
        from_snntorch(net)


def test_supported_snntorch_neurons_still_convert():
    net = nn.Sequential(nn.Linear(4, 5), snn.Leaky(beta=0.9, init_hidden=True), nn.Linear(5, 3))
    net.append(snn.Synaptic(alpha=0.7, beta=0.8, init_hidden=True))
    converted = from_snntorch(net)
    assert [type(m).__name__ for m in converted] == ["Linear", "LIF", "Linear", "CUBA"]


# -- SigmaDelta: NaN and inf refused as LIF refuses them ---------------------------------------------------------

X = torch.rand(6, 2, 4, generator=torch.Generator().manual_seed(0))


def _with(value: float, step: int = 2) -> torch.Tensor:
    x = X.clone()
    x[step, 1, 3] = value
    return x


CASES = [
    (lambda x: SigmaDelta()(x), _with(NAN), ConfigError, "x contains NaN or inf at time step 2"),
    (lambda x: SigmaDelta()(x), _with(INF, 0), ConfigError, "x contains NaN or inf at time step 0"),
    (lambda x: SigmaDelta()(x), _with(-INF, 5), ConfigError, "x contains NaN or inf at time step 5"),
    (lambda x: SigmaDelta(input="value")(x), _with(NAN, 1), ConfigError, "x contains NaN or inf at time step 1"),
    (lambda x: SigmaDelta(input="value", cum_error=False)(x), _with(INF), ConfigError, "at time step 2"),
    (lambda x: SigmaDelta(features=4)(x), _with(NAN), ConfigError, "x contains NaN or inf at time step 2"),
    # finite inputs whose activation overflows float32 on the grid (3e38 / 2^-6 is inf)
    (lambda x: SigmaDelta()(x), torch.full((3, 1, 2), 3e38), ConfigError, "x="),
    (lambda x: SigmaDelta(input="value")(x), torch.full((3, 1, 2), -3e38), ConfigError, "x="),
    # finite steps whose sum overflows to -inf, which the ReLU would have hidden as 0 for ever after
    (lambda x: SigmaDelta(scale=1.0)(x), torch.full((40, 1, 2), -3e37), ConfigError, "x="),
]


@pytest.mark.parametrize("call, x, error, shown", CASES)
def test_sigma_delta_refuses_non_finite_inputs_as_lif_does(call, x, error, shown):
    with pytest.raises(HybridAIError) as caught:
        call(x)
    assert isinstance(caught.value, error), f"{type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    assert shown in message and "accepted: " in message and "finite" in message, message


def test_sigma_delta_and_lif_give_the_same_message_for_the_same_bad_input():
    x = _with(NAN, 3)
    with pytest.raises(ConfigError) as lif:
        LIF()(x)
    with pytest.raises(ConfigError) as sigma_delta:
        SigmaDelta()(x)
    assert str(sigma_delta.value) == str(lif.value)


def test_a_learnt_bias_trained_to_nan_is_named():
    layer = SigmaDelta(features=4, learn_bias=True)
    with torch.no_grad():
        layer.bias[1] = NAN
    with pytest.raises(ConfigError) as caught:
        layer(X)
    message = str(caught.value)
    assert message.startswith("bias=") and "finite" in message and "accepted" in message, message


def test_an_input_on_another_device_than_the_bias_is_named():
    with pytest.raises(ShapeError) as caught:
        SigmaDelta()(torch.zeros(3, 1, 2, device="meta"))
    message = str(caught.value)
    assert "x.device" in message and "meta" in message and "accepted" in message, message


def test_finite_inputs_still_give_the_same_messages():
    layer = SigmaDelta(threshold=0.05, scale=2**-6)
    out = layer(X)
    assert torch.isfinite(out).all() and out.ne(0).any()
    assert torch.equal(out, SigmaDelta(threshold=0.05, scale=2**-6)(X.clone()))
