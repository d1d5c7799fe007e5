"""from_snntorch: snnTorch's own step loop is the oracle; the converted model must give the same spikes."""

import sys
import warnings

import pytest
import snntorch as snn
import torch
from snntorch import surrogate, utils
from torch import nn

import hybridai
from hybridai import CUBA, LIF
from hybridai.core.errors import ConfigError, MissingExtraError
from hybridai.spiking import ATan, FastSigmoid, TimeDistributed, from_snntorch

T, B = 30, 4


def step_snntorch(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """snnTorch's usage: reset the hidden state, call the net once per step, stack the spikes."""
    utils.reset(net)
    record = []
    for x_t in x.unbind(0):
        out = net(x_t)
        record.append(out[0] if isinstance(out, tuple) else out)
    return torch.stack(record)


def filled(net: nn.Module, seed: int, scale: float = 1.0) -> nn.Module:
    """``net`` with Linear and Conv2d weights and biases from its own generator (nothing process-wide is reseeded)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in net.modules():
            if isinstance(layer, nn.Linear | nn.Conv2d):
                fan_in = layer.weight[0].numel()
                layer.weight.copy_(torch.randn(layer.weight.shape, generator=g) * scale / fan_in**0.5)
                layer.bias.copy_(torch.randn(layer.bias.shape, generator=g) * 0.1)
    return net


def current(features: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(T, B, features, generator=g) * 1.5 + 0.5).to(dtype)


def neuron(kind: str, **options):
    if kind == "Leaky":
        return snn.Leaky(beta=options.pop("beta", 0.85), **options)
    return snn.Synaptic(alpha=options.pop("alpha", 0.6), beta=options.pop("beta", 0.85), **options)


def two_layer(kind: str, reset: str, per_neuron: bool, seed: int, dtype=torch.float32) -> nn.Sequential:
    g = torch.Generator().manual_seed(seed)

    def params(n: int) -> dict:
        if not per_neuron:
            return {"beta": 0.8, "threshold": 0.9} | ({"alpha": 0.55} if kind == "Synaptic" else {})
        values = {"beta": 0.6 + 0.4 * torch.rand(n, generator=g), "threshold": 0.5 + torch.rand(n, generator=g)}
        return values | ({"alpha": 0.9 * torch.rand(n, generator=g)} if kind == "Synaptic" else {})

    common = {"init_hidden": True, "reset_mechanism": reset, "learn_beta": per_neuron}
    net = nn.Sequential(
        nn.Linear(12, 24),
        neuron(kind, **common, **params(24)),
        nn.Linear(24, 6),
        neuron(kind, **common, **params(6), output=True),
    )
    return filled(net, seed, scale=2.5).to(dtype)


@pytest.mark.parametrize("kind", ["Leaky", "Synaptic"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("per_neuron, seed", [(False, 0), (True, 1)])
def test_two_hidden_layer_sequential_gives_identical_spikes(kind, reset, per_neuron, seed):
    # float32: snnTorch's spikes are float32 whatever the net's dtype, so a float64 snnTorch stack cannot run
    dtype = torch.float32
    net = two_layer(kind, reset, per_neuron, seed=seed, dtype=dtype)
    x = current(12, 1, dtype)
    with torch.no_grad():
        want = step_snntorch(net, x)
        model = from_snntorch(net)
        got = model(x)
    assert [type(m) for m in model] == [nn.Linear, LIF if kind == "Leaky" else CUBA] * 2
    assert got.shape == (T, B, 6) and got.dtype == dtype
    assert 0.05 < want.mean() < 0.8, float(want.mean())  # spikes and silence both exercised
    assert torch.equal(got, want.to(dtype))
    hidden = model[1](model[0](x)).detach()  # the hidden layer too, not just the read-out
    utils.reset(net)
    with torch.no_grad():
        want_hidden = torch.stack([net[1](net[0](x_t)) for x_t in x.unbind(0)])
    assert torch.equal(hidden, want_hidden.to(dtype)) and 0 < hidden.sum() < hidden.numel()
    assert model[1].reset == reset and model[1].beta.dtype == net[1].beta.dtype
    assert isinstance(model[1].beta, nn.Parameter) == per_neuron  # learn_beta kept


class Net(nn.Module):
    """snnTorch tutorial 5's network: layers as attributes, state passed explicitly, time loop in forward."""

    def __init__(self, kind: str, reset: str) -> None:
        super().__init__()
        self.kind = kind
        self.fc1 = nn.Linear(10, 20)
        self.lif1 = neuron(kind, beta=0.9, reset_mechanism=reset)
        self.fc2 = nn.Linear(20, 5)
        self.lif2 = neuron(kind, beta=0.9, reset_mechanism=reset)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state1, state2 = self.lif1.reset_mem(), self.lif2.reset_mem()
        state1, state2 = (s if isinstance(s, tuple) else (s,) for s in (state1, state2))
        spikes, mems = [], []
        for x_t in x.unbind(0):
            spk1, *state1 = self.lif1(self.fc1(x_t), *state1)
            spk2, *state2 = self.lif2(self.fc2(spk1), *state2)
            spikes.append(spk2)
            mems.append(state2[-1])
        return torch.stack(spikes), torch.stack(mems)


@pytest.mark.parametrize("kind", ["Leaky", "Synaptic"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_tutorial_net_module_gives_identical_spikes_and_membrane(kind, reset):
    net = filled(Net(kind, reset), seed=3, scale=3.0)
    x = current(10, 2)
    with torch.no_grad():
        want_spikes, want_mem = net(x)
        model = from_snntorch(net, output="both")
        spikes, mem = model(x)
    assert model[3].output == "both" and model[1].output == "spikes"
    assert 0 < want_spikes.sum() < want_spikes.numel()
    assert torch.equal(spikes, want_spikes) and torch.equal(mem, want_mem)  # bit for bit, membrane included


def test_conv_pool_flatten_net_gives_identical_spikes():
    net = nn.Sequential(
        nn.Conv2d(2, 6, 3, padding=1),
        nn.MaxPool2d(2),
        snn.Leaky(beta=0.9, init_hidden=True),
        nn.Dropout(0.2),
        nn.Flatten(),
        nn.Linear(6 * 5 * 5, 8),
        snn.Leaky(beta=0.8, init_hidden=True, output=True, reset_mechanism="zero"),
    ).eval()
    filled(net, seed=4, scale=3.0)
    g = torch.Generator().manual_seed(5)
    x = (torch.rand(T, B, 2, 10, 10, generator=g) < 0.35).float()
    with torch.no_grad():
        want = step_snntorch(net, x)
        model = from_snntorch(net).eval()
        got = model(x)
    assert isinstance(model[0], TimeDistributed) and isinstance(model[0].module, nn.Conv2d)
    assert isinstance(model[4], TimeDistributed) and isinstance(model[4].module, nn.Flatten)
    assert got.shape == (T, B, 8) and 0 < want.sum() < want.numel()
    assert torch.equal(got, want)


def test_learnt_parameters_are_kept_as_learnt_and_unclamped():
    """A learnt beta trained past 1 is used clamped by both; the stored value (and its training) is kept."""
    n = 16
    lif = snn.Leaky(
        beta=torch.full((n,), 0.9), threshold=torch.ones(n), learn_beta=True, learn_threshold=True, init_hidden=True
    )
    syn = snn.Synaptic(alpha=0.5, beta=0.9, learn_alpha=True, init_hidden=True, output=True)
    with torch.no_grad():
        lif.beta[:4] = 1.05
    net = filled(nn.Sequential(nn.Linear(8, n), lif, nn.Linear(n, 4), syn), seed=6, scale=2.0)
    x = current(8, 7)
    with torch.no_grad():
        want = step_snntorch(net, x)
        model = from_snntorch(net)
        got = model(x)
    assert torch.equal(got, want) and want.sum() > 0
    assert isinstance(model[1].beta, nn.Parameter) and isinstance(model[1].threshold, nn.Parameter)
    assert torch.equal(model[1].beta.detach(), lif.beta.detach()) and float(
        model[1].beta.detach().max()
    ) == pytest.approx(1.05)
    assert isinstance(model[3].alpha, nn.Parameter) and not isinstance(model[3].beta, nn.Parameter)


@pytest.mark.parametrize(
    "spike_grad, expected, mapped",
    [
        (None, ATan(2.0), True),
        (surrogate.atan(alpha=3.0), ATan(3.0), True),
        (surrogate.fast_sigmoid(slope=10), FastSigmoid(10), True),
        (surrogate.sigmoid(slope=5), ATan(2.0), False),  # no hybridai equal: the default (gradients only)
    ],
)
def test_surrogates_map_to_hybridai_equals_or_the_default(spike_grad, expected, mapped):
    net = nn.Sequential(nn.Linear(6, 8), snn.Leaky(beta=0.9, spike_grad=spike_grad, init_hidden=True)).double()
    filled(net, seed=8, scale=3.0)
    model = from_snntorch(net)
    assert model[1].surrogate == expected
    x = current(6, 9, torch.float64)
    x_ref, x_ours = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = step_snntorch(net, x_ref)
    got = model(x_ours)
    assert torch.equal(got, want.to(got.dtype)) and 0 < want.sum() < want.numel()
    if mapped:  # the same surrogate: gradients agree too
        weights = torch.randn(want.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        (want * weights).sum().backward()
        (got * weights).sum().backward()
        assert torch.allclose(x_ours.grad, x_ref.grad, rtol=0, atol=1e-6) and x_ref.grad.abs().sum() > 0  # snnTorch's
        # spikes are float32, so its gradients pass through float32: they agree to float32 rounding


def test_surrogate_disabled_converts_with_the_default_surrogate():
    net = nn.Sequential(nn.Linear(6, 8), snn.Leaky(beta=0.9, surrogate_disable=True, init_hidden=True))
    filled(net, seed=10, scale=3.0)
    x = current(6, 11)
    with torch.no_grad():
        assert torch.equal(from_snntorch(net)(x), step_snntorch(net, x))
    assert from_snntorch(net)[1].surrogate == ATan()


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: nn.Sequential(nn.Linear(3, 4), snn.Leaky(0.9, reset_mechanism="none")),
            r"net\[1\].*reset_mechanism='none'",
        ),
        (lambda: nn.Sequential(nn.Linear(3, 4), snn.Synaptic(0.5, 0.9, reset_delay=False)), r"net\[1\].*reset_delay"),
        (lambda: nn.Sequential(nn.Linear(3, 4), nn.LSTM(4, 4), snn.Leaky(0.9)), r"net\[1\]='LSTM'.*nn.Linear"),
        (lambda: nn.Sequential(nn.Linear(3, 4), snn.Leaky(0.9, inhibition=True)), r"net\[1\].*inhibition"),
        (lambda: nn.Sequential(nn.Linear(3, 4), snn.Leaky(0.9, graded_spikes_factor=2.0)), r"graded_spikes_factor=2"),
        (
            lambda: nn.Sequential(nn.Linear(3, 4), snn.Leaky(0.9, learn_graded_spikes_factor=True)),
            r"net\[1\].*learn_graded_spikes_factor",
        ),
        (lambda: nn.Sequential(nn.Linear(3, 4), snn.Leaky(0.9, state_quant=torch.round)), r"state_quant='round'"),
        (lambda: nn.Sequential(nn.Linear(3, 4), snn.Leaky(0.9, spike_grad=torch.sigmoid)), r"spike_grad='sigmoid'"),
        (lambda: nn.Sequential(nn.Linear(3, 4), snn.Alpha(0.9, 0.8)), r"net\[1\]='Alpha'"),
        (lambda: nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.ReLU())), r"net\[1\]\[0\]='ReLU'"),
        (lambda: nn.Sequential(nn.Linear(3, 4), nn.Dropout()), r"at least one snntorch.Leaky"),
        (lambda: nn.Sequential(nn.Linear(3, 4), snn.Leaky(0.9, threshold=-1.0)), r"net\[1\] \(Leaky\).*threshold"),
    ],
)
def test_what_hybridai_does_not_reproduce_is_refused_naming_layer_and_attribute(build, message):
    with warnings.catch_warnings():  # snnTorch warns that inhibition is unstable
        warnings.simplefilter("ignore", UserWarning)
        net = build()
    with pytest.raises(ConfigError, match=message):
        from_snntorch(net)


def test_a_plain_module_is_refused_naming_the_attribute_path():
    net = Net("Leaky", "zero")
    net.fc3 = nn.GRU(5, 5)
    with pytest.raises(ConfigError, match=r"net\.fc3='GRU'.*registration order"):
        from_snntorch(net)
    hooked = nn.Sequential(nn.Linear(3, 4), snn.Leaky(0.9))
    hooked[0].register_forward_hook(lambda *args: None)
    with pytest.raises(ConfigError, match=r"net\[0\] forward hooks"):
        from_snntorch(hooked)
    with pytest.raises(ConfigError, match="output='rates'"):
        from_snntorch(Net("Leaky", "zero"), output="rates")


def test_converting_leaves_the_snntorch_net_alone_and_the_copy_is_independent():
    net = two_layer("Leaky", "subtract", per_neuron=True, seed=12)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    model = from_snntorch(net)
    after = net.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    shared = {p.data_ptr() for p in net.parameters()} & {p.data_ptr() for p in model.parameters()}
    assert not shared  # copies, not the same storage
    # training the copy changes neither the snnTorch weights nor their gradients
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model(current(12, 13)).sum().backward()
    optimizer.step()
    assert all(p.grad is None for p in net.parameters())
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert not torch.equal(model[0].weight, net[0].weight)
    # and changing the snnTorch net does not reach the copy
    copied = model[2].weight.detach().clone()
    with torch.no_grad():
        net[2].weight.add_(1.0)
    assert torch.equal(model[2].weight.detach(), copied)


def loihi_ready_net(seed: int) -> nn.Sequential:
    """A trained-looking snnTorch net whose numbers Loihi holds exactly: weights on the chip's even 8-bit mantissa
    grid (largest |w| at mantissa 254), no biases, decays 1 - k/4096 (Loihi's 12-bit decay register), reset to zero."""
    g = torch.Generator().manual_seed(seed)
    net = nn.Sequential(
        nn.Linear(20, 32, bias=False),
        snn.Synaptic(alpha=0.5, beta=0.875, reset_mechanism="zero", init_hidden=True),
        nn.Linear(32, 10, bias=False),
        snn.Leaky(beta=0.75, reset_mechanism="zero", init_hidden=True, output=True),
    )
    with torch.no_grad():
        for linear in (net[0], net[2]):
            mantissas = 2 * torch.randint(-40, 41, linear.weight.shape, generator=g)
            mantissas.view(-1)[0] = 254
            linear.weight.copy_(mantissas / 254 * 1.5)
    return net


def test_converted_model_deploys_on_loihi_with_the_spikes_of_the_snntorch_net():
    net = loihi_ready_net(seed=0)
    x = (torch.rand(T, 8, 20, generator=torch.Generator().manual_seed(1)) < 0.3).float()
    with torch.no_grad():
        want = step_snntorch(net, x)
    deployment = hybridai.deploy(from_snntorch(net), "loihi")
    report = deployment.report(x)
    # Measured 1.0 on seeds 0-5 for this net, but for one mismatch in 3200 spikes at one seed (0.9994): what is left
    # is the threshold mantissa's rounding and the chip's integer decay (the float model keeps the fractions).
    assert report.agreement["spike agreement"] >= 0.995, report.agreement
    chip = deployment.run(x)
    assert chip.shape == want.shape and want.sum() > 50
    assert (chip == want).float().mean() >= 0.995  # against snnTorch's own step loop, not just the copy
    assert report.run.layers[0].name == "1: CUBA" and report.spikes > 0 and "spike agreement" in str(report)


def test_a_missing_snntorch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "snntorch", None)  # import snntorch now raises ImportError
    with pytest.raises(MissingExtraError, match=r"hybridai\[dev\]"):
        from_snntorch(nn.Sequential(nn.Linear(2, 2)))


def test_a_linear_used_twice_stays_one_layer_and_gives_identical_spikes():
    shared = nn.Linear(6, 6)
    net = filled(nn.Sequential(shared, snn.Leaky(beta=0.8, init_hidden=True), shared,
                               snn.Leaky(beta=0.7, init_hidden=True)), seed=5)  # fmt: skip
    x = current(6, 2, torch.float32)
    with torch.no_grad():
        want = step_snntorch(net, x)
        model = from_snntorch(net)
        got = model(x)
    assert len(model) == 4 and model[0] is model[2]  # both positions, one set of weights
    assert 0 < want.sum() < want.numel()
    assert torch.equal(got, want)


def test_a_neuron_used_twice_is_refused_naming_both_positions():
    neuron = snn.Leaky(beta=0.8, init_hidden=True)
    net = nn.Sequential(nn.Linear(4, 4), neuron, nn.Linear(4, 4), neuron)
    with pytest.raises(ConfigError, match=r"net\[3\].*also net\[1\]"):
        from_snntorch(net)
