"""fake_quantize on a hybrid model: the leading chip part (cut where ``hybridai.deploy`` cuts it) quantized, the host
layers after it as they are, in the model's dtype; the deployment computes exactly what was trained."""

from __future__ import annotations

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import ConfigError
from hybridai.neuromorphic import loihi, loihi2
from hybridai.spiking import LIF, RateDecoder, RateEncoder, SigmaDelta, TimeDistributed

pytestmark = pytest.mark.numerics  # values to 1e-10: run again on other CPU code paths (make test)

CHIPS = {"loihi": loihi, "loihi2": loihi2}


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.BasicEntanglerLayers(weights, wires=range(2))
    return [qml.expval(qml.PauliZ(i)) for i in range(2)]


def host() -> list[nn.Module]:
    """``Linear -> Tanh -> QuantumLayer -> Linear``: the layers after the chip's decoder (model[5:])."""
    return [nn.Linear(5, 2), nn.Tanh(), hybridai.QuantumLayer(circuit, 2, {"weights": (2, 2)}), nn.Linear(2, 3)]


def hybrid(chip: str, dtype: torch.dtype) -> nn.Sequential:
    """A chip front end (model[0-4], ending in its decoder) followed by the host layers, seeded, in ``dtype``."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        if chip == "loihi":
            front = [nn.Linear(6, 8), LIF(beta=0.9, threshold=0.2, reset="zero"), nn.Linear(8, 5)]
            front += [LIF(beta=0.8, threshold=0.1, reset="zero"), RateDecoder()]
        else:
            front = [SigmaDelta(threshold=0.05, scale=2**-6, input="value")]
            front += [TimeDistributed(nn.Linear(6, 8, bias=False))]
            front += [SigmaDelta(threshold=0.03, scale=2**-7, features=8, bias=0.05), nn.Linear(8, 5, bias=False)]
            front += [RateDecoder()]
        return nn.Sequential(*front, *host()).to(dtype)


def inputs(chip: str, dtype: torch.dtype) -> torch.Tensor:
    """``[T=12, B=5, 6]``: binary spikes for Loihi 1, slowly changing frames in [0, 1] for Loihi 2."""
    gen = torch.Generator().manual_seed(1)
    if chip == "loihi":
        return (torch.rand(12, 5, 6, generator=gen) < 0.4).to(dtype)
    base = torch.rand(1, 5, 6, generator=gen, dtype=torch.float64)
    drift = torch.cumsum(0.05 * torch.randn(12, 5, 6, generator=gen, dtype=torch.float64), 0)
    return (base + drift).clamp(0, 1).to(dtype)


@pytest.mark.parametrize("chip", CHIPS)
def test_a_hybrid_model_is_cut_where_deploy_cuts_it_and_shares_its_parameters(chip):
    model = hybrid(chip, torch.float64)
    fake = CHIPS[chip].fake_quantize(model)
    assert isinstance(fake, CHIPS[chip].FakeQuantized)
    assert list(fake.model) == list(model[:5]) and list(fake.rest) == list(model[5:])  # the modules themselves
    assert {id(p) for p in fake.parameters()} == {id(p) for p in model.parameters()}
    out = fake(inputs(chip, torch.float64))
    assert out.shape == (5, 3) and bool(torch.isfinite(out).all())


@pytest.mark.parametrize("chip", CHIPS)
def test_a_float32_model_trains_in_float32_with_finite_gradients_everywhere(chip):
    model = hybrid(chip, torch.float32)
    out = CHIPS[chip].fake_quantize(model)(inputs(chip, torch.float32))
    assert out.dtype == torch.float32
    out.square().sum().backward()
    # classical, quantum, and the chip's first synapses (Loihi 1: through both LIF surrogates; Loihi 2: the
    # straight-through weight rounding of both layers)
    weights = {"model[0]": model[0].weight if chip == "loihi" else model[1].module.weight}
    weights |= {"model[5]": model[5].weight, "model[7]": model[7].weights, "model[8]": model[8].weight}
    for name, weight in weights.items():
        assert weight.grad is not None and weight.grad.dtype == torch.float32, name
        assert bool(torch.isfinite(weight.grad).all()) and bool(weight.grad.ne(0).any()), name


def test_the_demo_s_hand_made_form_runs_a_float32_model_too():
    """``nn.Sequential(fake_quantize(model[:k]), *model[k:])``: the chip part hands over in float32."""
    model = hybrid("loihi2", torch.float32)
    out = nn.Sequential(loihi2.fake_quantize(model[:5]), *model[5:])(inputs("loihi2", torch.float32))
    assert out.dtype == torch.float32
    assert torch.equal(out, loihi2.fake_quantize(model)(inputs("loihi2", torch.float32)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("chip", CHIPS)
def test_the_deployed_model_computes_exactly_what_the_fake_quantized_model_computes(chip, dtype):
    """Exactly, not to a tolerance: the chip part is the emulator's integers (exact in float64) handed over with the
    emulator's own cast, and the host layers are the same torch operations on copies of the same weights, with the
    QuantumLayer on the same backend (statevector, its default)."""
    model, x = hybrid(chip, dtype), inputs(chip, dtype)
    deployment = hybridai.deploy(model, chip=chip, quantum="statevector", classical="torch")
    assert [label for label, _ in deployment.segments] == ["spiking [0-4]", "classical [5-6]", "quantum [7]",
                                                           "classical [8]"]  # fmt: skip
    with torch.no_grad():
        expected = CHIPS[chip].fake_quantize(model)(x)
    out = deployment.run(x)
    assert out.dtype == expected.dtype == dtype
    assert torch.equal(out, expected)
    rates = deployment.placed[0].run(x)[0]  # what the chip hands over: varied, so that the comparison says something
    assert rates.shape == (5, 5) and rates.ne(0).any() and rates.unique().numel() > 5


@pytest.mark.parametrize(
    ("chip", "first", "named"),
    [
        ("loihi2", [nn.Linear(6, 5)], "Linear"),  # no chip layer at all
        ("loihi", [RateEncoder(12), nn.Linear(6, 5), LIF(reset="zero"), RateDecoder()], "RateEncoder"),  # on the host
        ("loihi", [hybridai.QuantumLayer(circuit, 2, {"weights": (2, 5)}), LIF(reset="zero")], "QuantumLayer"),
    ],
)
def test_a_model_whose_first_part_no_chip_takes_is_refused_by_name(chip, first, named):
    refusal = rf"model\[0\]='{named}' is not valid; accepted: a first layer {chip} compiles"
    with pytest.raises(ConfigError, match=refusal):
        CHIPS[chip].fake_quantize(nn.Sequential(*first, *host()))


def test_a_layer_the_chip_does_not_compile_and_a_second_chip_part_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"model\[1\]='LIF'.*loihi2 does not take lif layers"):
        loihi2.fake_quantize(hybrid("loihi", torch.float64))
    second = nn.Sequential(nn.Linear(6, 8), LIF(reset="zero"), RateDecoder(), nn.Tanh(), nn.Linear(8, 5), LIF())
    with pytest.raises(ConfigError, match=r"model\[4\]='Linear'.*after the leading chip part spiking \[0-2\]"):
        loihi.fake_quantize(second)
