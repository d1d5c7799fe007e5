"""``pennylane:<device>`` lists and takes only devices that simulate qubits; other systems and devices whose own
dependency is missing are refused by name, with a device that works."""

import re

import pennylane as qml
import pytest
import torch

from hybridai import QuantumLayer, backends
from hybridai.core.errors import BackendUnavailableError, ConfigError
from hybridai.quantum.pennylane.backend import PennyLaneBackend


def circuit(inputs):
    qml.RX(inputs[..., 0], wires=0)
    return qml.expval(qml.PauliZ(0))


@pytest.mark.parametrize(("name", "system"), [("default.qutrit", "qutrits"), ("default.gaussian", "continuous")])
def test_devices_of_other_systems_are_neither_listed_nor_taken(name, system):
    assert name in qml.plugin_devices  # installed with PennyLane
    assert name not in PennyLaneBackend.known_targets()
    with pytest.raises(ConfigError, match=rf"pennylane:{name}' simulates {system}") as caught:
        backends.get(f"pennylane:{name}")
    suggested = str(caught.value).split("accepted: a qubit device (")[1].split(")")[0].split(", ")
    assert "default.qubit" in suggested and name not in suggested
    x = torch.tensor([[0.3], [1.0]], dtype=torch.float64)
    for device in suggested:  # every suggested device runs the circuit
        out = QuantumLayer(circuit, n_qubits=1, n_inputs=1, backend=f"pennylane:{device}")(x)
        assert out.shape == (2,), device


def test_a_device_whose_dependency_is_missing_is_refused_by_name():
    import importlib.util

    if importlib.util.find_spec("quimb") is not None:
        pytest.skip("quimb is installed here: default.tensor runs")
    with pytest.raises(BackendUnavailableError, match=r"pennylane:default.tensor' needs a package") as caught:
        backends.get("pennylane:default.tensor")
    routes = re.findall(r"pennylane:[\w.]+", str(caught.value).split("accepted:")[1])
    assert routes
    for route in routes:  # the devices it names run the circuit
        out = QuantumLayer(circuit, n_qubits=1, n_inputs=1, backend=route)(torch.tensor([[0.3]], dtype=torch.float64))
        assert out.shape == (1,), route


def test_every_listed_qubit_device_that_loads_runs_a_circuit():
    x = torch.tensor([[0.3]], dtype=torch.float64)
    ran = []
    for name in PennyLaneBackend.known_targets():
        try:
            backend = backends.get(f"pennylane:{name}")
        except BackendUnavailableError:
            continue  # its own dependency is missing: refused by name (above)
        value = QuantumLayer(circuit, n_qubits=1, n_inputs=1, backend=backend)(x)
        assert value.shape == (1,)
        ran.append(name)
    assert {"default.qubit", "default.mixed", "lightning.qubit"} <= set(ran)
