"""Edges of ``hybridai.deploy`` where an answer used to be silently wrong (issue 28).

A QuantumLayer (or a ``qml.qnn.TorchLayer``) inside a user's block stayed in a classical segment on its old backend
while the top-level ones moved: every quantum layer found at any depth must move, as ``hybridai.place`` moves them.
``shots=`` and ``mitigation=`` on a model without a quantum layer were accepted and ignored, while ``quantum=`` was
refused: all three are refused by name. A misspelt hybrid keyword (``quantom=``) was named with the one-chip
options only: it must list the hybrid form's keywords too.
"""

from __future__ import annotations

import warnings

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai import QuantumLayer
from hybridai.core.errors import ConfigError
from hybridai.quantum.torchlayer import AdoptedTorchLayer

N_QUBITS = 2


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N_QUBITS))
    qml.BasicEntanglerLayers(weights, wires=range(N_QUBITS))
    return qml.expval(qml.PauliZ(0))


class Block(nn.Module):
    """A user's block: a Linear feeding a quantum layer, one value per sample."""

    def __init__(self, quantum: nn.Module) -> None:
        super().__init__()
        self.lin = nn.Linear(3, N_QUBITS)
        self.inner = nn.Sequential(nn.Tanh(), quantum)

    def forward(self, x):
        return self.inner(self.lin(x)).reshape(-1, 1)


def model_with(quantum: nn.Module) -> nn.Sequential:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 3), Block(quantum), nn.Linear(1, 2)).double()


def quantum_layer() -> QuantumLayer:
    with torch.random.fork_rng():
        torch.manual_seed(1)
        return QuantumLayer(circuit, N_QUBITS, {"weights": (2, N_QUBITS)})


def nested_layers(deployment) -> list[nn.Module]:
    return [m for p in deployment.placed if p.runner is not None for m in p.runner.modules()
            if isinstance(m, QuantumLayer)]  # fmt: skip


@pytest.mark.parametrize("backend", ["aer", "pennylane:default.qubit"])
def test_a_quantum_layer_inside_a_block_runs_on_the_deployed_backend(backend):
    model = model_with(quantum_layer())
    x = torch.rand(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    deployment = hybridai.deploy(model, quantum=backend)
    (layer,) = nested_layers(deployment)
    assert layer.backend == backend
    assert model[1].inner[1].backend == "statevector"  # the user's model is unchanged
    report = deployment.report(x)
    quantum = [s for s in report.segments if s.cost.quantum is not None and s.cost.quantum.circuits]
    assert [s.backend for s in quantum] == [backend] and quantum[0].cost.quantum.circuits == 5  # one per sample
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(deployment.run(x), want, rtol=0, atol=1e-10)  # exact backends: the float model


def test_a_torchlayer_inside_a_block_is_adopted_on_the_deployed_backend():
    torchlayer = qml.qnn.TorchLayer(qml.QNode(circuit, qml.device("default.qubit", wires=N_QUBITS)),
                                    {"weights": (2, N_QUBITS)})  # fmt: skip
    model = model_with(torchlayer)
    x = torch.rand(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    deployment = hybridai.deploy(model, quantum="statevector")
    (layer,) = nested_layers(deployment)
    assert isinstance(layer, AdoptedTorchLayer) and layer.backend == "statevector"
    assert isinstance(model[1].inner[1], qml.qnn.TorchLayer)  # the user's model is unchanged
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(deployment.run(x), want, rtol=0, atol=1e-10)


def test_shots_go_to_a_nested_quantum_layer():
    deployment = hybridai.deploy(model_with(quantum_layer()), quantum="statevector", quantum_options={"seed": 4},
                                 shots=300)  # fmt: skip
    (layer,) = nested_layers(deployment)
    assert layer.shots == 300
    report = deployment.report(torch.rand(2, 4, dtype=torch.float64))
    assert sum(s.cost.quantum.shots for s in report.segments if s.cost.quantum is not None) == 2 * 300


def test_a_layer_s_own_zne_is_kept_when_deploy_is_given_no_mitigation():
    # deploy(mitigation=None) used to set every layer's mitigation to None: a ZNE the user gave was dropped
    zne = hybridai.ZNE(scale_factors=(1, 3, 5))
    with torch.random.fork_rng():
        torch.manual_seed(1)
        own = QuantumLayer(circuit, N_QUBITS, {"weights": (2, N_QUBITS)}, backend="aer", depolarizing=0.02,
                           mitigation=zne)  # fmt: skip
    deployment = hybridai.deploy(model_with(own), quantum="aer", quantum_options={"depolarizing": 0.02})
    (layer,) = nested_layers(deployment)
    assert layer.mitigation == zne
    deployment.run(torch.rand(2, 4, dtype=torch.float64))
    assert layer.last_mitigation is not None  # the folded circuits ran


def classical_model() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


@pytest.mark.parametrize(
    "keywords, argument, shown",
    [
        ({"shots": 100}, "shots", "100"),
        ({"shots": 100, "classical": "torch"}, "shots", "100"),
        ({"mitigation": hybridai.ZNE()}, "mitigation", "ZNE("),
        ({"mitigation": hybridai.ZNE(), "classical": "torch"}, "mitigation", "ZNE("),
        ({"quantum": "aer"}, "quantum", "'aer'"),  # refused before: the others must be refused alike
    ],
)
def test_quantum_options_without_quantum_layers_are_refused_by_name(keywords, argument, shown):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError) as caught:
            hybridai.deploy(classical_model(), **keywords)
    message = str(caught.value)
    assert f"{argument}=" in message and shown in message and "accepted" in message, message
    assert "no quantum layers" in message, message


@pytest.mark.parametrize("chip", [None, "loihi"])
def test_a_misspelt_hybrid_keyword_lists_the_hybrid_form_too(chip):
    args = () if chip is None else (chip,)
    with pytest.raises(ConfigError) as caught:
        hybridai.deploy(classical_model(), *args, quantom="aer")
    message = str(caught.value)
    assert "quantom" in message and "accepted" in message and "'quantum'" in message, message
    for keyword in ("chip=", "chip_options=", "quantum=", "classical=", "quantum_options="):  # the keyword form's own
        assert keyword in message, message
    assert "aer" not in message  # the value is not shown: a misspelt keyword may hold a token
