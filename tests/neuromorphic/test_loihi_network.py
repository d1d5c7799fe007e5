"""Quantizing trained spiking models to Loihi registers, fake-quantized training and the ``loihi`` backend."""

import pytest
import torch
from torch import nn

import hybridai.neuromorphic.loihi.backend  # noqa: F401  (registers the "loihi" family)
from hybridai import CUBA, LIF
from hybridai.core import registry
from hybridai.core.chip import ChipRun
from hybridai.core.errors import HybridAIError
from hybridai.neuromorphic import loihi
from hybridai.spiking.encoding import MembraneDecoder, SpikeCountDecoder


def spikes(steps: int, batch: int, features: int, p: float = 0.3, seed: int = 0) -> torch.Tensor:
    return (torch.rand(steps, batch, features, generator=torch.Generator().manual_seed(seed)) < p).float()


def lif_net(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(20, 32), LIF(0.9, threshold=1.0, reset="zero"), nn.Linear(32, 10), LIF(0.8, reset="zero")
    )


def cuba_net(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(20, 32, bias=False),
        CUBA(0.5, 0.85, threshold=0.5, reset="zero"),
        nn.Linear(32, 6, bias=False),
        CUBA(0.75, 0.9, threshold=1e9, reset="zero", output="membrane"),
        MembraneDecoder("max"),
    )


def learnt_threshold(value: float) -> LIF:
    """A LIF layer whose learnt threshold was trained to ``value`` (the constructor refuses thresholds <= 0)."""
    layer = LIF(reset="zero", learn_threshold=True)
    with torch.no_grad():
        layer.threshold.fill_(value)
    return layer


def trained(model: nn.Module, x: torch.Tensor, steps: int = 15) -> nn.Module:
    """A few Adam steps on the float model toward 2 spikes per output neuron (a network that has learnt)."""
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(steps):
        out = model(x)
        loss = ((out.sum(0) if out.ndim == 3 else out) - 2.0).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def test_register_mapping_of_lif_and_cuba():
    net = loihi.compile(cuba_net())
    first, second = net.plans
    # alpha 0.5: du = round(4096 * 0.5) - 1 = 2047, which the chip applies as (4096 - 1 - 2047) / 4096 = 0.5
    assert first.du.unique().tolist() == [2047] and second.du.unique().tolist() == [round(4096 * 0.25) - 1]
    assert first.dv.unique().tolist() == [round(4096 * 0.15)] and first.refractory == 2
    lif = loihi.compile(lif_net()).plans[0]
    assert lif.du.unique().tolist() == [4095] and lif.dv.unique().tolist() == [410] and lif.refractory == 1
    # weights: even mantissas, the largest |W| at 254; threshold and bias in the same units
    w = lif_net()[0].weight.detach().double()
    assert int(lif.weights.abs().max()) == 254 and bool((lif.weights % 2 == 0).all())
    assert torch.equal(lif.weights, (2 * torch.round(w * 254 / w.abs().max() / 2)).long())
    assert lif.scale == pytest.approx(254 / float(w.abs().max()) * 2 ** (6 + lif.weight_exp))
    assert int(lif.vth_mant.unique()) == round(1.0 * lif.scale / 64)
    b = lif_net()[0].bias.detach().double() * lif.scale
    assert ((lif.bias - b).abs() <= 2.0**lif.bias_exp).all() and int(lif.bias_mant.abs().max()) <= 4095
    rows = loihi.compile(lif_net()).describe()
    assert rows[0]["layer"] == "1: LIF" and rows[0]["du"] == 4095 and rows[0]["weight_mantissa_range"][1] == 254
    assert {"dv", "vth_mant", "weight_exp", "scale", "bias_mant", "bias_exp"} <= rows[1].keys()


def test_weight_exponent_keeps_registers_and_inputs_in_range():
    torch.manual_seed(0)
    small = nn.Sequential(nn.Linear(4, 3), LIF(0.9, threshold=1.0, reset="zero"))
    plan = loihi.compile(small).plans[0]
    assert 0 <= plan.weight_exp <= 7 and int(plan.vth_mant.max()) <= 2**17 - 1
    worst = int(plan.weights.abs().sum(1).max()) << (6 + plan.weight_exp)
    assert worst <= 2**21 - 1  # every input spiking at once cannot wrap q
    # the largest exponent: one more would overflow q, the threshold or the bias register
    bigger = (
        (worst << 1) > 2**21 - 1,
        int(plan.vth_mant.max()) * 2 > 2**17 - 1,
        int(plan.bias.abs().max()) * 2 > 4095 << 7,
    )
    assert plan.weight_exp == 7 or any(bigger)
    # a threshold far above the weights: the mantissa range narrows until vth_mant fits at weight_exp 0
    with torch.no_grad():
        small[0].weight.mul_(1e-4)
    tight = loihi.compile(small).plans[0]
    assert tight.weight_exp == 0 and int(tight.vth_mant.max()) <= 2**17 - 1 and int(tight.weights.abs().max()) < 254


@pytest.mark.parametrize(
    ("model", "pattern"),
    [
        (nn.Sequential(nn.Conv2d(1, 2, 3), LIF(reset="zero")), r"model\[0\]='Conv2d'.*nn.Linear"),
        (nn.Sequential(nn.Linear(3, 2), LIF(0.9)), r"model\[1\] \(LIF\) reset='subtract'.*'zero'"),
        (nn.Sequential(nn.Linear(3, 2), nn.Tanh()), r"model\[1\]='Tanh'.*LIF or hybridai.CUBA"),
        (nn.Sequential(nn.Linear(3, 2), LIF(reset="zero", output="both")), r"output='both'"),
        (nn.Sequential(nn.Linear(3, 2), LIF(reset="zero", output="membrane"), nn.Linear(2, 2), LIF(reset="zero")),
         r"model\[1\] \(LIF\) output='membrane'.*last spiking layer"),
        (nn.Sequential(nn.Linear(3, 2), CUBA(reset="zero")), r"model\[0\] \(nn.Linear\) bias.*bias=False"),
        (nn.Sequential(SpikeCountDecoder()), r"model\[0\]='SpikeCountDecoder'.*decoder only as the last"),
        (nn.Sequential(nn.Linear(3, 2), LIF(reset="zero"), nn.Linear(5, 2), LIF(reset="zero")),
         r"model\[2\].in_features=5.*2"),
        (nn.Sequential(nn.Linear(3, 2), learnt_threshold(-1.0)), r"threshold=-1.0.*> 0"),
        (nn.Sequential(nn.Linear(3, 2), learnt_threshold(0.0)), r"threshold=0.0.*> 0"),
        ("not a model", r"model='str'.*nn.Sequential"),
    ],
)  # fmt: skip
def test_unsupported_models_are_refused_by_index_and_type(model, pattern):
    with pytest.raises(HybridAIError, match=pattern):
        loihi.compile(model)


def test_cuba_needs_the_nengo_refractory_rule():
    model = nn.Sequential(nn.Linear(3, 2, bias=False), CUBA(reset="zero"))
    with pytest.raises(HybridAIError, match=r"quirks='lava'.*refractory"):
        loihi.compile(model, quirks="lava")
    with pytest.raises(HybridAIError, match=r"quirks='truenorth'"):
        loihi.compile(model, quirks="truenorth")


def test_input_must_be_non_negative_integer_counts():
    net = loihi.compile(lif_net())
    with pytest.raises(HybridAIError, match=r"x=.*non-integer value 0.5.*whole numbers"):
        net.run(torch.full((4, 2, 20), 0.5))
    with pytest.raises(HybridAIError, match=r"x=.*minimum -1.*non-negative"):
        net.run(-torch.ones(4, 2, 20))
    with pytest.raises(HybridAIError, match=r"x.shape=\(4, 2, 19\).*\[T, B, 20\]"):
        net.run(torch.zeros(4, 2, 19))
    counts = net.run(torch.randint(0, 3, (6, 2, 20)))  # event bins with counts > 1 run
    assert counts.outputs.shape == (6, 2, 10)


@pytest.mark.parametrize(("build", "quirks"), [(lif_net, "nengo"), (lif_net, "lava"), (cuba_net, "nengo")])
def test_emulator_agrees_with_fake_quantized_model_on_every_spike(build, quirks):
    x = spikes(40, 6, 20)
    model = trained(build(), x)
    fake = loihi.fake_quantize(model, quirks=quirks)
    net = loihi.compile(model, quirks=quirks)
    with torch.no_grad():
        out, layers = fake(x, return_layers=True)
    chip = net.trace(x)
    total = 0
    for (fq_spikes, fq_membrane), layer in zip(layers, chip, strict=True):
        assert torch.equal(fq_spikes, layer["spikes"])  # every spike of every layer, step and sample
        assert torch.equal(fq_membrane, layer["membrane"])
        total += int(fq_spikes.sum())
    assert total > 50  # the comparison covers real activity
    assert torch.equal(out, net.run(x).outputs)


def test_fake_quantized_training_reduces_the_loss_and_deploys_as_trained():
    x = spikes(30, 8, 20, seed=1)
    model = lif_net(1)
    fake = loihi.fake_quantize(model)
    target = torch.full((8, 10), 3.0)
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    losses = []
    for _ in range(12):
        loss = (fake(x).sum(0) - target).square().mean()
        opt.zero_grad()
        loss.backward()
        assert model[0].weight.grad is not None and model[0].weight.grad.abs().sum() > 0
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0]
    deployed = loihi.compile(model).run(x).outputs
    assert torch.equal(deployed, fake(x).detach())  # what was trained is what the chip computes


def test_backend_compiles_runs_and_counts_activity():
    backend = registry.get("loihi")
    caps = backend.capabilities
    assert caps.bit_exact is True and caps.hardware == () and caps.devices == ("cpu",)  # emulated, bit for bit
    x = spikes(50, 16, 20, seed=2)
    model = trained(lif_net(2), x)
    compiled = backend.compile(model, calibration=x)
    run = compiled.run(x)
    assert isinstance(run, ChipRun) and run.outputs.shape == (50, 16, 10) and run.outputs.dtype == torch.float32
    assert run.latency_steps == 2 and run.time_steps == 52 and run.samples == 16
    with torch.no_grad():
        reference = model(x)
        hidden_float = model[1](model[0](x))
    traced = compiled.trace(x)
    # per layer, on the same input, quantization alone: >= 95% of the float spikes at the same step
    with torch.no_grad():
        isolated = model[3](model[2](traced[0]["spikes"]))
    for chip, float_ in ((traced[0]["spikes"], hidden_float), (traced[1]["spikes"], isolated)):
        assert float_.sum() > 100 and (chip * float_).sum() / float_.sum() >= 0.95
    # end to end, differences compound through the layers but stay small
    same = (run.outputs == reference).float().mean().item()
    count_error = abs(run.outputs.sum().item() - reference.sum().item()) / reference.sum().item()
    assert same >= 0.97 and count_error <= 0.1, (same, count_error)
    # activity: synaptic ops = each delivered input spike times its fan-out; updates = N x (T + L) x B
    first, second = run.layers
    plans = compiled.plans
    fan_in = (plans[0].weights != 0).sum(0).double()
    assert first.synaptic_ops == int((x.double() * fan_in).sum())  # all T input steps arrive within T + L steps
    hidden = traced[0]["run"].spikes[:-1].double()  # spikes of the last simulated step arrive after the run
    assert second.synaptic_ops == int((hidden * (plans[1].weights != 0).sum(0).double()).sum())
    assert first.spikes == int(traced[0]["run"].spikes.sum()) >= int(traced[0]["spikes"].sum())
    assert first.neuron_updates == 32 * 52 * 16 and second.neuron_updates == 10 * 52 * 16
    assert 0 < second.active_updates <= second.neuron_updates and first.name == "1: LIF"


def test_backend_with_decoder_and_membrane_output_in_float_units():
    x = spikes(30, 4, 20, seed=3)
    model = trained(cuba_net(3), x)
    run = registry.get("loihi").compile(model).run(x)
    with torch.no_grad():
        reference = model(x)
    assert run.outputs.shape == reference.shape == (4, 6)
    assert torch.allclose(run.outputs, reference, atol=0.05 * float(reference.abs().max()))
    counted = nn.Sequential(*list(lif_net())[:4], SpikeCountDecoder())
    out = registry.get("loihi", quirks="lava").compile(counted).run(x).outputs
    assert out.shape == (4, 10) and torch.equal(out, out.round())


def test_backend_options_and_target_errors():
    with pytest.raises(HybridAIError, match=r"bogus"):
        registry.get("loihi", bogus=1)
    with pytest.raises(HybridAIError, match=r"loihi:board.*plugin"):
        registry.get("loihi:board")
    with pytest.raises(HybridAIError, match=r"quirks='x'"):
        registry.get("loihi", quirks="x")
    with pytest.raises(HybridAIError, match=r"device='tpu'"):
        registry.get("loihi", device="tpu")
    assert registry.get("loihi", quirks="lava").name == "loihi"


def test_backend_passes_the_conformance_suite():
    from hybridai.testing import assert_conforms

    assert_conforms("loihi")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_run_matches_cpu():
    x = spikes(20, 4, 20)
    model = lif_net()
    cpu = loihi.compile(model).run(x)
    gpu = registry.get("loihi", device="cuda").compile(model).run(x.cuda())
    assert gpu.outputs.is_cuda and torch.equal(gpu.outputs.cpu(), cpu.outputs) and gpu.layers == cpu.layers
    fake = loihi.fake_quantize(model.cuda())(x.cuda())
    assert torch.equal(fake.cpu(), cpu.outputs)
