"""One backend spelling everywhere (issue 27): what ``QuantumLayer(backend=...)`` takes (PennyLane devices, Qiskit
backends) is taken alike by ``QuantumKernel(backend=...)``, ``hybridai.place(model, quantum=...)`` and
``hybridai.deploy(model, quantum=...)``, with the options it implies, and refused alike, naming the argument."""

from __future__ import annotations

import warnings

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai import QuantumKernel, QuantumLayer
from hybridai.core.errors import ConfigError


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.BasicEntanglerLayers(weights, wires=range(2))
    return [qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(1))]


def feature_map(x):
    qml.AngleEmbedding(x, wires=range(2))


def noise_model():
    from qiskit_aer.noise import NoiseModel, depolarizing_error

    noise = NoiseModel()
    noise.add_all_qubit_quantum_error(depolarizing_error(0.05, 1), ["rx", "ry", "rz"])
    return noise


def device_with_shots():
    with warnings.catch_warnings():  # shots on a device are deprecated in PennyLane, yet users have such devices
        warnings.simplefilter("ignore")
        return qml.device("default.qubit", wires=2, shots=100)


def aer():
    from qiskit_aer import AerSimulator

    return AerSimulator()


def noisy_aer():
    from qiskit_aer import AerSimulator

    return AerSimulator(noise_model=noise_model())


def fake_manila():
    from qiskit_ibm_runtime.fake_provider import FakeManilaV2

    return FakeManilaV2()


# each object kind: (how to build it, the backend name it becomes, what its implied options must hold)
OBJECTS = {
    "lightning device": (lambda: qml.device("lightning.qubit", wires=4), "pennylane:lightning.qubit", lambda o: True),
    "device with shots": (device_with_shots, "pennylane:default.qubit", lambda o: o.get("shots") == 100),
    "AerSimulator()": (aer, "aer", lambda o: "noise_model" not in o),
    "noisy AerSimulator": (noisy_aer, "aer", lambda o: type(o.get("noise_model")).__name__ == "NoiseModel"),
    "FakeManilaV2()": (fake_manila, "aer:fake_manila", lambda o: True),
}


def layer(backend="statevector", n_qubits=2):
    return QuantumLayer(circuit, n_qubits, {"weights": (1, n_qubits)}, backend=backend)


def on_layer(backend):
    return [layer(backend)]


def on_kernel(backend):
    return [QuantumKernel(feature_map, 2, backend=backend)]


def on_place(backend):
    model = nn.Sequential(nn.Linear(3, 2), nn.ModuleList([layer()]), layer())
    assert hybridai.place(model, quantum=backend) is model
    return [model[1][0], model[2]]


def on_deploy(backend):
    model = nn.Sequential(nn.Linear(3, 2), layer(), nn.Linear(2, 2))
    deployment = hybridai.deploy(model, quantum=backend)
    assert model[1].backend == "statevector"  # deploy copies: the model keeps its own backend
    return [m for placed in deployment.placed for m in placed.quantum_layers]


ENTRY_POINTS = {"QuantumLayer": on_layer, "QuantumKernel": on_kernel, "place": on_place, "deploy": on_deploy}


@pytest.mark.parametrize("entry", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
@pytest.mark.parametrize("kind", OBJECTS.values(), ids=OBJECTS.keys())
def test_every_entry_point_takes_the_object_with_the_options_it_implies(kind, entry):
    build, name, implied = kind
    layers = entry(build())
    assert layers and all(m.backend == name for m in layers), [m.backend for m in layers]
    assert all(implied(m.backend_options) for m in layers), [m.backend_options for m in layers]


def test_placed_layers_share_one_backend_and_the_implied_options_work():
    model = nn.Sequential(layer(), layer())
    noise = noise_model()
    from qiskit_aer import AerSimulator

    hybridai.place(model, quantum=AerSimulator(noise_model=noise), seed=7)
    assert model[0].resolved_backend is model[1].resolved_backend
    assert model[0].backend_options["noise_model"] is noise and model[0].backend_options["seed"] == 7
    assert model[0].resolved_backend.capabilities.noise
    hybridai.place(model, quantum=device_with_shots())
    assert not model[0].resolved_backend.capabilities.exact  # 100 shots arrived


def test_options_override_what_the_object_implies_in_place_and_deploy():
    model = nn.Sequential(layer())
    hybridai.place(model, quantum=device_with_shots(), shots=10)
    assert model[0].backend_options["shots"] == 10
    deployed = hybridai.deploy(nn.Sequential(layer()), quantum=device_with_shots(), quantum_options={"shots": 20})
    assert deployed.placed[0].quantum_layers[0].backend_options["shots"] == 20


def test_the_deploy_hybrid_form_with_a_chip_takes_a_device_object():
    from tests.deployment.test_hybrid_deploy import N_QUBITS, hybrid_model

    device = qml.device("lightning.qubit", wires=N_QUBITS)
    deployment = hybridai.deploy(hybrid_model(), chip="loihi", quantum=device)
    assert ("quantum [5]", "pennylane:lightning.qubit") in deployment.segments


# -- refusals name quantum= and leave the model as it was ---------------------------------------------------


def test_a_device_lacking_a_layers_wires_is_refused_by_place_before_any_layer_changes():
    model = nn.Sequential(layer(n_qubits=1), layer(n_qubits=2))
    with pytest.raises(ConfigError, match=r"layer '1': quantum= a default\.qubit device with wires \[0\] lacks wires"):
        hybridai.place(model, quantum=qml.device("default.qubit", wires=1))
    assert [m.backend for m in model] == ["statevector", "statevector"]  # the first layer fitted: unchanged too


def test_a_device_lacking_a_layers_wires_is_refused_by_deploy():
    model = nn.Sequential(nn.Linear(3, 2), layer(), nn.Linear(2, 2))
    with pytest.raises(ConfigError, match=r"quantum \[1\].*quantum= a default\.qubit device with wires \[0\] lacks"):
        hybridai.deploy(model, quantum=qml.device("default.qubit", wires=1))


@pytest.mark.parametrize("call", [hybridai.place, hybridai.deploy], ids=["place", "deploy"])
def test_an_unknown_object_is_refused_naming_quantum_and_the_accepted_forms(call):
    model = nn.Sequential(nn.Linear(3, 2), layer())
    with pytest.raises(ConfigError) as caught:
        call(model, quantum=torch.device("cpu"))
    message = str(caught.value)
    assert message.startswith("quantum='device' is not valid; accepted: a backend name such as 'statevector'")
    assert "PennyLane device" in message and "AerSimulator()" in message and model[1].backend == "statevector"


def test_a_layer_wider_than_a_fake_device_is_refused_by_place_naming_it():
    model = nn.Sequential(layer(n_qubits=2), layer(n_qubits=6))
    with pytest.raises(ConfigError, match=r"layer '1': n_qubits=6 is not valid; accepted: at most 5 .*fake_manila"):
        hybridai.place(model, quantum=fake_manila())
    assert [m.backend for m in model] == ["statevector", "statevector"]


def test_an_unknown_name_in_place_names_quantum():
    with pytest.raises(hybridai.BackendNotFoundError, match="^quantum= backend family 'nope' is not registered"):
        hybridai.place(nn.Sequential(layer()), quantum="nope")
