"""deploy and quantum layers (issue 27): a ``qml.qnn.TorchLayer`` is a quantum segment, adopted on the backend asked
for; the one-chip form points a model with quantum layers to the form with one backend per domain."""

from __future__ import annotations

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import ConfigError
from hybridai.quantum.torchlayer import AdoptedTorchLayer
from tests.deployment.test_hybrid_deploy import N_QUBITS, circuit, events, hybrid_model


def with_torchlayer(device=None) -> nn.Sequential:
    """The hybrid model with its QuantumLayer written as PennyLane users write it: a TorchLayer."""
    model = hybrid_model()
    device = device or qml.device("default.qubit", wires=N_QUBITS)
    torchlayer = qml.qnn.TorchLayer(qml.QNode(circuit, device), {"weights": (2, N_QUBITS)})
    torchlayer.load_state_dict(model[5].state_dict())
    model[5] = torchlayer
    return model


def test_a_torchlayer_is_a_quantum_segment_adopted_on_the_backend_asked_for():
    model, x = with_torchlayer(), events()
    want = hybridai.deploy(hybrid_model(), chip="loihi", quantum="statevector").run(x)
    deployment = hybridai.deploy(model, chip="loihi", quantum="statevector")
    assert [label for label, _ in deployment.segments] == [
        "spiking [0-2]",
        "classical [3-4]",
        "quantum [5]",
        "classical [6]",
    ]
    (layer,) = deployment.placed[2].quantum_layers
    assert isinstance(layer, AdoptedTorchLayer) and layer.backend == "statevector"
    assert isinstance(model[5], qml.qnn.TorchLayer)  # the user's model is not changed
    torch.testing.assert_close(deployment.run(x), want, rtol=0, atol=1e-5)


def test_a_torchlayer_nothing_is_asked_of_runs_on_its_own_device():
    deployment = hybridai.deploy(with_torchlayer(qml.device("lightning.qubit", wires=N_QUBITS)), chip="loihi")
    assert ("quantum [5]", "pennylane:lightning.qubit") in deployment.segments
    assert isinstance(deployment.placed[2].runner[0], qml.qnn.TorchLayer)


def test_a_torchlayer_that_cannot_be_adopted_is_named_before_anything_runs():
    model = with_torchlayer(qml.device("default.qubit"))  # no wires: its qubit count is unknown
    with pytest.raises(ConfigError, match=r"quantum \[5\] on 'statevector': .* cannot be adopted .*has wires None"):
        hybridai.deploy(model, chip="loihi", quantum="statevector")


# -- the one-chip form on a model with quantum layers -----------------------------------------------------------


@pytest.mark.parametrize("model", [hybrid_model, with_torchlayer], ids=["QuantumLayer", "TorchLayer"])
def test_the_one_chip_form_points_a_model_with_quantum_layers_to_one_backend_per_domain(model):
    layer = "QuantumLayer" if model is hybrid_model else "TorchLayer"
    with pytest.raises(ConfigError) as caught:
        hybridai.deploy(model(), "loihi")
    message = str(caught.value)
    assert message.startswith(f"backend='loihi' is not valid; accepted: a chip for a model without quantum layers "
                              f"(this one has 5 ({layer}))")  # fmt: skip
    assert "hybridai.deploy(model, chip='loihi', quantum='statevector', classical='torch')" in message


def test_the_pointer_keeps_the_chip_options_by_name_only():
    with pytest.raises(ConfigError) as caught:
        hybridai.deploy(hybrid_model(), "loihi", quirks="lava")
    assert "chip='loihi', chip_options={'quirks': ...}, quantum=" in str(caught.value)
