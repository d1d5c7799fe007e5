"""Every fake IBM device of the installed qiskit-ibm-runtime, by name and by object: current devices (no ``V2``
suffix: FakeBrisbane, FakeSherbrooke, FakeKyiv, FakeTorino) as well as the older ``...V2`` ones."""

from __future__ import annotations

import pennylane as qml
import pytest
import torch

import hybridai
from hybridai.core.errors import BackendNotFoundError, ResourceLimitError
from hybridai.quantum.qiskit_frontend.fake_devices import fake_backend, fake_name, fake_names

CURRENT = ("fake_brisbane", "fake_sherbrooke", "fake_kyiv", "fake_torino", "fake_fez", "fake_marrakesh")


def circuit(inputs, w):
    qml.RY(inputs[..., 0], wires=0)
    qml.RY(inputs[..., 1], wires=1)
    qml.CNOT([0, 1])
    qml.RX(w[0], wires=1)
    return [qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(0) @ qml.PauliX(1))]


def test_every_fake_backend_class_of_the_provider_has_a_name():
    from qiskit_ibm_runtime import fake_provider
    from qiskit_ibm_runtime.fake_provider.fake_backend import FakeBackendV2

    classes = [c for n, c in vars(fake_provider).items() if n.startswith("Fake") and isinstance(c, type)]
    devices = [c for c in classes if issubclass(c, FakeBackendV2)]
    assert len(devices) >= 60 and len(fake_names()) == len(devices)
    assert set(CURRENT) | {"fake_manila", "fake_jakarta"} <= set(fake_names())
    assert {fake_name(c) for c in devices} == set(fake_names())


@pytest.mark.parametrize("name", ["fake_brisbane", "fake_Sherbrooke", "fakekyiv", "fake_torino", "fake_manila"])
def test_names_give_the_provider_s_device(name):
    device = fake_backend(name)
    assert device.name == "fake_" + name.lower().removeprefix("fake").removeprefix("_")


def test_unknown_fake_device_is_refused_with_the_closest_names():
    with pytest.raises(BackendNotFoundError, match=r"no fake IBM device named 'fake_brisbain'.*fake_brisbane"):
        fake_backend("fake_brisbain")
    with pytest.raises(BackendNotFoundError, match="hybridai backends"):
        hybridai.backends.get("aer:brisbane")  # IBM's device names, and hybridai's, start with fake_


def test_fake_device_objects_map_to_their_names():
    from qiskit_aer import AerSimulator
    from qiskit_ibm_runtime.fake_provider import FakeBrisbane, FakeManilaV2

    class MyBrisbane(FakeBrisbane):  # a subclass: the device it extends
        pass

    assert fake_name(FakeBrisbane()) == "fake_brisbane" and fake_name(MyBrisbane) == "fake_brisbane"
    assert fake_name(object()) is None
    layer = hybridai.QuantumLayer(circuit, 2, {"w": 1}, backend=FakeBrisbane())
    assert layer.backend == "aer:fake_brisbane"
    layer = hybridai.QuantumLayer(circuit, 2, {"w": 1}, backend=AerSimulator.from_backend(FakeManilaV2()))
    assert layer.backend == "aer:fake_manila"


@pytest.mark.slow
def test_a_127_qubit_device_runs_exact_and_sampled_on_the_qubits_the_circuit_uses():
    # sampling used to measure all 127 qubits, which Aer cannot simulate: only the used ones are measured now
    x = torch.tensor([[0.3, 1.1], [2.0, 0.4]], dtype=torch.float64)
    ideal = hybridai.QuantumLayer(circuit, 2, {"w": 1}).double()
    from qiskit_aer.noise import NoiseModel
    from qiskit_ibm_runtime.fake_provider import FakeBrisbane

    # the device's gate noise without its readout errors, which only samples see: exact and sampled agree then
    gates_only = NoiseModel.from_backend(FakeBrisbane(), readout_error=False)
    backend = hybridai.backends.get("aer:fake_brisbane", seed=5, noise_model=gates_only)
    noisy = hybridai.QuantumLayer(circuit, 2, {"w": 1}, backend=backend).double()
    sampled = hybridai.QuantumLayer(circuit, 2, {"w": 1}, backend=backend, shots=4000).double()
    for layer in (noisy, sampled):
        layer.load_state_dict(ideal.state_dict())
    with torch.no_grad():
        want, exact, got = ideal(x), noisy(x), sampled(x)
    assert not torch.allclose(exact, want, atol=1e-4)  # the device's noise is there
    assert (exact - want).abs().max() < 0.1
    se = ((1 - exact**2).clamp(min=0) / 4000).sqrt()
    assert ((got - exact).abs() <= 5 * se + 1e-9).all()


def test_ibm_local_mode_refuses_a_device_it_cannot_simulate_and_names_the_aer_route():
    with pytest.raises(ResourceLimitError, match=r"all 127 qubits of fake_sherbrooke.*'aer:fake_sherbrooke'"):
        hybridai.QuantumLayer(circuit, 2, {"w": 1}, backend="ibm:fake_sherbrooke")


def test_cli_lists_every_fake_device(capsys):
    from hybridai.cli import main

    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    aer = next(line for line in out.splitlines() if line.startswith("aer: targets"))
    assert all(name in aer for name in CURRENT) and f"({len(fake_names())})" in aer
