"""A module used twice is used twice in a deployment (issue 37): segments follow positions, not identities.

``hybridai.deploy`` once walked the model with ``named_children``, which skips the second use of a module: a
``QuantumLayer`` used twice lost its second use (``run`` 0.15 off the model, silently), a shared ``nn.Linear``
made ``report`` compare with a model missing a layer, and loihi refused a valid spiking model with a false
"model[5]='LIF' is not valid". Oracles: the model itself (float64, exact), and for the chip the same chip's
run of the unshared model with identical weights.
"""

from __future__ import annotations

import copy

import pennylane as qml
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import hybridai
from hybridai.deployment import DeploymentReport
from hybridai.spiking import LIF, SigmaDelta, SpikeCountDecoder, TimeDistributed

pytestmark = pytest.mark.numerics  # values to 1e-10: run again on other CPU code paths (make test)

WIDTH = 2  # qubits, and the width of every layer: any layer can follow any other


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(WIDTH))
    qml.BasicEntanglerLayers(weights, wires=range(WIDTH))
    return [qml.expval(qml.PauliZ(i)) for i in range(WIDTH)]


def layer(kind: str, seed: int) -> nn.Module:
    """A fresh float64 layer of ``kind`` (``"linear"``, ``"tanh"``, ``"quantum"``) mapping ``WIDTH`` to ``WIDTH``."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        if kind == "linear":
            return nn.Linear(WIDTH, WIDTH).double()
        if kind == "tanh":
            return nn.Tanh()
        return hybridai.QuantumLayer(circuit, WIDTH, {"weights": (2, WIDTH)}).double()


def features(batch: int = 4) -> torch.Tensor:
    return torch.randn(batch, WIDTH, generator=torch.Generator().manual_seed(11), dtype=torch.float64)


def check_exact(model: nn.Sequential) -> hybridai.Deployment:
    """Deployed on statevector and torch, ``model`` gives its own outputs to 1e-10, and its report says so."""
    x = features()
    deployment = hybridai.deploy(model, quantum="statevector", classical="torch")
    with torch.no_grad():
        want = model(x)
    got = deployment.run(x)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, want, atol=1e-10, rtol=0)
    agreement = deployment.report(x).agreement
    assert agreement["relative error"] < 1e-10
    assert agreement["prediction agreement"] == 1.0
    return deployment


@st.composite
def reuse_patterns(draw: st.DrawFn) -> tuple[list[str], list[int]]:
    """A pool of 2-3 layers (a QuantumLayer, a classical one, maybe a third of any kind) and 4-9 positions drawn
    from it: both domains at least once and one pool layer at least twice, each inserted where hypothesis says."""
    pool = ["quantum", draw(st.sampled_from(["linear", "tanh"]))]
    pool += draw(st.lists(st.sampled_from(["linear", "tanh", "quantum"]), max_size=1))
    positions = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=5))
    repeated = draw(st.integers(0, len(pool) - 1))
    for i in (0, 1, repeated, repeated):
        positions.insert(draw(st.integers(0, len(positions))), i)
    return pool, positions


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reuse_patterns())
def test_random_reuse_patterns_deploy_exactly(pattern):
    pool_kinds, positions = pattern
    pool = [layer(kind, seed) for seed, kind in enumerate(pool_kinds)]
    model = nn.Sequential(*(pool[i] for i in positions))
    deployment = check_exact(model)
    assert sum(len(p.segment.layers) for p in deployment.placed) == len(positions)  # every position deployed


def test_a_quantum_layer_used_twice_runs_twice():
    q = layer("quantum", 0)
    model = nn.Sequential(layer("linear", 1), nn.Tanh(), q, layer("linear", 2), nn.Tanh(), q, layer("linear", 3))
    deployment = check_exact(model)
    assert [label for label, _ in deployment.segments] == [
        "classical [0-1]",
        "quantum [2]",
        "classical [3-4]",
        "quantum [5]",
        "classical [6]",
    ]
    assert deployment.placed[1].runner[0] is not deployment.placed[3].runner[0]  # inference copies, one per segment
    assert torch.equal(deployment.placed[3].runner[0].weights, q.weights)


def test_a_linear_used_twice_in_one_segment_stays_one_module_and_report_is_exact():
    shared = layer("linear", 4)
    model = nn.Sequential(shared, nn.Tanh(), layer("quantum", 5), shared, nn.Tanh(), shared)
    deployment = check_exact(model)
    first, _, last = deployment.placed
    assert [label for label, _ in deployment.segments] == ["classical [0-1]", "quantum [2]", "classical [3-5]"]
    assert last.runner[0] is last.runner[2]  # one copy, one set of weights, for both positions in the segment
    assert last.runner[0] is not shared  # the user's model is not changed or moved
    for copied in (first.runner[0], last.runner[0]):  # inference copies of the same weights
        assert torch.equal(copied.weight, shared.weight) and torch.equal(copied.bias, shared.bias)
    report = deployment.report(features())
    assert report.segments[2].cost.macs == 2 * WIDTH * WIDTH * 4  # both uses counted, on 4 samples
    for segment in report.segments:
        assert segment.agreement["relative error"] < 1e-10


def spiking_model(share_neuron: bool) -> tuple[nn.Sequential, nn.Sequential]:
    """``Linear(6, 8) -> LIF -> L -> LIF -> L -> LIF -> SpikeCountDecoder`` with one ``Linear(8, 8)`` L used twice
    (and one LIF object used twice when ``share_neuron``), and the same model with a copy of L at its second use."""
    with torch.random.fork_rng():
        torch.manual_seed(6)
        shared = nn.Linear(8, 8)
        with torch.no_grad():
            shared.weight.mul_(3)  # enough current to spike in the last layer too
        lifs = [LIF(0.85, reset="zero") for _ in range(3)]
        if share_neuron:
            lifs[2] = lifs[1]
        layers = [nn.Linear(6, 8), lifs[0], shared, lifs[1], shared, lifs[2], SpikeCountDecoder()]
    unshared = [copy.deepcopy(m) for m in layers]
    unshared[2] = copy.deepcopy(shared)  # the unshared twin: a separate Linear at each position, equal weights
    unshared[4] = copy.deepcopy(shared)
    return nn.Sequential(*layers), nn.Sequential(*unshared)


def spikes() -> torch.Tensor:
    return (torch.rand(15, 5, 6, generator=torch.Generator().manual_seed(7)) < 0.4).float()


def check_as_unshared(model: nn.Sequential, twin: nn.Sequential, chip: str, x: torch.Tensor) -> DeploymentReport:
    """On ``chip``, one-chip form and hybrid form, ``model`` gives exactly what its unshared ``twin`` gives there."""
    for deployment, reference in (
        (hybridai.deploy(model, chip), hybridai.deploy(twin, chip)),
        (hybridai.deploy(model, chip=chip), hybridai.deploy(twin, chip=chip)),
    ):
        assert deployment.segments == [(f"spiking [0-{len(model) - 1}]", chip)]
        assert torch.equal(deployment.run(x), reference.run(x))  # both positions' registers: the twin's
        ours, theirs = deployment.report(x), reference.report(x)
        assert ours.agreement == theirs.agreement
    return ours


@pytest.mark.parametrize("chip", ["loihi", "nengo"])
@pytest.mark.parametrize("share_neuron", [False, True])
def test_a_linear_used_twice_on_a_lif_chip_compiles_twice_and_equals_the_unshared_model(chip, share_neuron):
    model, twin = spiking_model(share_neuron)
    report = check_as_unshared(model, twin, chip, spikes())
    activity = {layer.name: layer.spikes for layer in report.run.layers}
    assert list(activity) == ["1: LIF", "3: LIF", "5: LIF"] and activity["5: LIF"] > 0  # L's second use runs


def test_a_time_distributed_linear_used_three_times_on_loihi2_equals_the_unshared_model():
    """One ``TimeDistributed(Linear(8, 8))`` as two hidden layers and the read-out of a sigma-delta network."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        shared = TimeDistributed(nn.Linear(8, 8, bias=False))
        model = nn.Sequential(
            SigmaDelta(threshold=0.05, scale=2**-6, input="value"),
            TimeDistributed(nn.Linear(6, 8, bias=False)),
            *(layer for _ in range(3) for layer in (SigmaDelta(threshold=0.03, scale=2**-7, features=8), shared)),
            SpikeCountDecoder(),
        ).double()
    twin = copy.deepcopy(model)
    twin[5], twin[7] = copy.deepcopy(twin[3]), copy.deepcopy(twin[3])
    assert model[3] is model[5] is model[7] and twin[3] is not twin[5]
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(1, 5, 6, generator=gen, dtype=torch.float64)
    x = (x + torch.cumsum(0.05 * torch.randn(12, 5, 6, generator=gen, dtype=torch.float64), 0)).clamp(0, 1)
    report = check_as_unshared(model, twin, "loihi2", x)
    activity = {layer.name: layer.spikes for layer in report.run.layers}
    assert list(activity) == ["0: SigmaDelta", "2: SigmaDelta", "4: SigmaDelta", "6: SigmaDelta", "7: Linear"]
    assert activity["6: SigmaDelta"] > 0  # the second use sends messages on to the third (the read-out)
