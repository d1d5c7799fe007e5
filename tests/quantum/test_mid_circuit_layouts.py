"""Mid-circuit measurements (``qml.measure``, ``qml.cond``, ``qml.pauli_measure``) in many layouts on PennyLane
devices: each runs as PennyLane's own QNode runs it, or is refused by name with a route that a test follows.

Layouts that raised PennyLane's raw errors before: ``postselect=`` on devices without ``qml.Projector``
(``default.mixed``, ``lightning.qubit`` without shots: ``ValueError``) and ``qml.pauli_measure`` on every device
(``DeviceError``; the statevector, density and aer backends named ``pennylane:default.qubit`` as its route, which
cannot run it either), and a device with transforms whose wires leave no room for the deferred measurements
(a ConfigError about ``wires=`` the user never passed)."""

import pennylane as qml
import pytest
import torch

from hybridai import QuantumLayer
from hybridai.core.errors import UnsupportedOperationError

WEIGHTS = torch.tensor([0.4, 1.1, 0.3], dtype=torch.float64)
BATCH = torch.tensor([[0.7], [1.3], [2.2]], dtype=torch.float64)


def layer_of(qfunc, n_qubits, backend, shots=None, **options):
    layer = QuantumLayer(qfunc, n_qubits, {"w": 3}, backend=backend, shots=shots, **options).double()
    with torch.no_grad():
        layer.w.copy_(WEIGHTS)
    return layer


def oracle(qfunc, x, device="default.qubit"):
    """PennyLane's QNode (mcm_method left to PennyLane) on a device with room for the deferred measurements; its
    results as the layer's columns."""
    result = qml.QNode(qfunc, qml.device(device), interface="torch")(x, WEIGHTS)
    parts = [torch.as_tensor(p, dtype=torch.float64) for p in (result if isinstance(result, tuple) else (result,))]
    return torch.cat([p.reshape(x.shape[0], -1) if x.ndim == 2 else p.reshape(-1) for p in parts], -1)


# -- layouts ----------------------------------------------------------------------------------------------------


def on_first_wire(x, w):
    qml.RY(x[..., 0], wires=0)
    qml.RX(w[0], wires=1)
    m = qml.measure(0)
    qml.cond(m, qml.RX)(w[1], wires=1)
    return qml.expval(qml.PauliZ(1))


def on_last_wire(x, w):
    qml.RY(x[..., 0], wires=2)
    qml.RX(w[0], wires=0)
    m = qml.measure(2)
    qml.cond(m, qml.RY)(w[1], wires=0)
    return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(2))


def on_middle_wire(x, w):
    qml.RY(x[..., 0], wires=1)
    qml.Hadamard(0)
    qml.CNOT([1, 2])
    m = qml.measure(1)
    qml.cond(m, qml.PauliX)(wires=0)
    return qml.probs(wires=[0, 2])


def conditioned_on_two(x, w):
    qml.RY(x[..., 0], wires=0)
    qml.RY(w[0], wires=1)
    m0, m1 = qml.measure(0), qml.measure(1)
    qml.cond(m0 & m1, qml.RX)(w[1], wires=2)
    qml.cond(m0 == 0, qml.RY)(w[0], wires=2)
    return qml.expval(qml.PauliZ(2))


def values_measured(x, w):
    qml.RY(x[..., 0], wires=0)
    qml.RY(w[0], wires=1)
    m0, m1 = qml.measure(0), qml.measure(1)
    return qml.expval(m0 + 2 * m1), qml.var(m0), qml.probs(op=[m0, m1])


def postselected(x, w):
    qml.RY(x[..., 0], wires=0)
    qml.CNOT([0, 1])
    qml.measure(0, postselect=1)
    qml.RX(w[0], wires=1)
    return qml.expval(qml.PauliZ(1))


CONTROLS = [(on_first_wire, 2), (on_last_wire, 3), (on_middle_wire, 3), (conditioned_on_two, 3),
            (values_measured, 2)]  # fmt: skip
DEVICES = ["default.qubit", "default.mixed", "lightning.qubit"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("qfunc", "n_qubits"), CONTROLS, ids=[f.__name__ for f, _ in CONTROLS])
def test_layouts_equal_pennylane(qfunc, n_qubits, device):
    layer = layer_of(qfunc, n_qubits, f"pennylane:{device}")
    torch.testing.assert_close(layer(BATCH).reshape(3, -1), oracle(qfunc, BATCH), rtol=0, atol=1e-10)
    torch.testing.assert_close(layer(BATCH[1]).reshape(-1), oracle(qfunc, BATCH[1]), rtol=0, atol=1e-10)


def test_reset_and_probs_of_every_wire_measure_the_register():
    def reset(x, w, wires=None):
        qml.RY(x[..., 0], wires=0)
        m = qml.measure(0, reset=True)
        qml.cond(m, qml.RX)(w[0], wires=1)
        return qml.expval(m), qml.probs(wires=wires)

    layer = layer_of(reset, 2, "pennylane:default.qubit")
    want = oracle(lambda x, w: reset(x, w, wires=[0, 1]), BATCH)  # PennyLane needs the wires named here
    torch.testing.assert_close(layer(BATCH), want, rtol=0, atol=1e-10)


@pytest.mark.slow  # about 25 s for both devices
@pytest.mark.parametrize("device", DEVICES)
def test_shots_sample_the_exact_values(device):
    shots = 4000
    layer = layer_of(values_measured, 2, f"pennylane:{device}", shots=shots, seed=11)
    got = layer(BATCH)
    assert got.shape == (3, 6)
    want = oracle(values_measured, BATCH)
    variance = want[:, 1:2]  # of m0; the other columns are bounded by it or by 1/4 and 9/4 (m0 + 2 m1 in 0..3)
    bound = torch.cat([torch.full_like(variance, 9 / 4), variance + 1e-3, torch.full((3, 4), 1 / 4)], 1)
    columns = [0, 2, 3, 4, 5]  # the sampled variance has its own spread: checked by the exact runs
    error = (got - want).abs()[:, columns]
    assert (error <= 5 * (bound[:, columns] / shots).sqrt()).all(), error
    assert torch.equal(layer(BATCH), layer_of(values_measured, 2, f"pennylane:{device}", shots=shots, seed=11)(BATCH))


# -- postselection: where PennyLane cannot apply it, refused by name; its route followed --------------------------


@pytest.mark.parametrize(("device", "shots"), [("default.mixed", None), ("default.mixed", 500),
                                               ("lightning.qubit", None)])  # fmt: skip
def test_postselection_without_a_projector_is_refused_by_name(device, shots):
    layer = layer_of(postselected, 2, f"pennylane:{device}", shots=shots, seed=3)
    with pytest.raises(UnsupportedOperationError) as caught:
        layer(BATCH)
    message = str(caught.value)
    assert f"'pennylane:{device}'" in message and "postselect=1" in message, message
    assert "accepted: backend='pennylane:default.qubit'" in message, message


def test_postselection_route_runs_as_pennylane_does():
    layer = layer_of(postselected, 2, "pennylane:default.qubit")
    torch.testing.assert_close(layer(BATCH), oracle(postselected, BATCH)[:, 0], rtol=0, atol=1e-10)
    assert torch.allclose(layer(BATCH), torch.cos(WEIGHTS[0]).expand(3).neg(), atol=1e-10)  # wire 1 is |1> after


# -- qml.pauli_measure: no PennyLane simulator runs it; the ancilla route it names does ------------------------------


def pauli_measured(x, w):
    qml.RY(x[..., 0], wires=0)
    qml.RX(w[0], wires=1)
    m = qml.pauli_measure("XZ", wires=[0, 1])
    qml.cond(m, qml.RX)(w[1], wires=1)
    return qml.expval(qml.PauliZ(1))


@pytest.mark.parametrize("backend", ["pennylane:default.qubit", "pennylane:default.mixed",
                                     "pennylane:lightning.qubit", "statevector", "density", "aer"])  # fmt: skip
def test_pauli_measure_is_refused_by_name_with_a_route_that_runs(backend):
    layer = layer_of(pauli_measured, 2, backend)
    with pytest.raises(UnsupportedOperationError) as caught:
        layer(BATCH)
    message = str(caught.value)
    assert "PauliMeasure('XZ', wires=[0, 1])" in message and "qml.pauli_measure" in message, message
    assert "ancilla" in message and "backend='pennylane:default.qubit'" in message, message
    assert "defers it to a wire" not in message, message  # the old route, which cannot run it


def test_pauli_measure_route_measures_the_pauli_product():
    def ancilla(x, w):  # the route the refusal names: XZ on wires 0, 1 measured through ancilla wire 2
        qml.RY(x[..., 0], wires=0)
        qml.RX(w[0], wires=1)
        qml.Hadamard(2)
        qml.ctrl(qml.PauliX(0), control=2)
        qml.ctrl(qml.PauliZ(1), control=2)
        qml.Hadamard(2)
        m = qml.measure(2, reset=True)
        return qml.expval(m), qml.expval(qml.PauliX(0) @ qml.PauliZ(1))

    def before(x, w):  # the state the Pauli product is measured on
        qml.RY(x[..., 0], wires=0)
        qml.RX(w[0], wires=1)
        return qml.expval(qml.PauliX(0) @ qml.PauliZ(1))

    got = layer_of(ancilla, 3, "pennylane:default.qubit")(BATCH)
    torch.testing.assert_close(got, oracle(ancilla, BATCH), rtol=0, atol=1e-10)
    xz = oracle(before, BATCH)[:, 0]
    torch.testing.assert_close(got[:, 0], (1 - xz) / 2, rtol=0, atol=1e-10)  # outcome 1: eigenvalue -1
    torch.testing.assert_close(got[:, 1], xz, rtol=0, atol=1e-10)  # a product measurement leaves <XZ> as it was


# -- a device with transforms and no wire to spare: refused by name; the wider device it names runs ---------------


def test_device_without_room_for_deferred_measurements_names_a_wider_one():
    model = qml.NoiseModel({qml.noise.op_eq("RX"): qml.noise.partial_wires(qml.PhaseDamping, 0.1)})
    narrow = qml.noise.add_noise(qml.device("default.mixed", wires=2), model)
    with pytest.raises(UnsupportedOperationError) as caught:
        layer_of(on_first_wire, 2, narrow)(BATCH)
    message = str(caught.value)
    assert "qml.measure" in message and "wires [2]" in message and "wires=3" in message, message
    wide = qml.noise.add_noise(qml.device("default.mixed", wires=3), model)
    want = qml.QNode(on_first_wire, wide, interface="torch")(BATCH, WEIGHTS)
    torch.testing.assert_close(layer_of(on_first_wire, 2, wide)(BATCH), want, rtol=0, atol=1e-10)
    assert not torch.allclose(want, oracle(on_first_wire, BATCH))  # the noise applied
