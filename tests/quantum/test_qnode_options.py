"""What a QNode or a PennyLane device carries is honoured exactly or refused by name (issue 37): the QNode's
execution options (``gradient_kwargs``, ``grad_on_execution``, ``max_diff``, ``device_vjp``, ...), its device's
seeded random generator, and observables that are not Hermitian (refused the same way on every backend)."""

from __future__ import annotations

import pennylane as qml
import pytest
import torch

import hybridai
from hybridai import QuantumKernel, QuantumLayer
from hybridai.core.errors import ConfigError, UnsupportedOperationError

W = torch.tensor([0.7], dtype=torch.float64)
X = torch.tensor([[0.3], [1.1]], dtype=torch.float64)


def circuit(inputs, w):
    qml.RX(inputs[..., 0], wires=0)
    qml.RY(w[0], wires=0)
    return qml.expval(qml.PauliZ(0))


def feature_map(x):
    qml.RX(x[..., 0], wires=0)


def layer_of(qfunc, **kwargs):
    layer = QuantumLayer(qfunc, 1, {"w": 1}, **kwargs).double()
    with torch.no_grad():
        layer.w.copy_(W)
    return layer


def weight_gradient(qnode, layer, x):
    """d(sum of outputs)/dw of ``qnode`` and of ``layer`` at ``W`` (PennyLane's finite-diff cannot differentiate
    broadcast inputs: the inputs are constants)."""
    w = W.clone().requires_grad_(True)
    return torch.autograd.grad(qnode(x, w).sum(), w)[0], torch.autograd.grad(layer(x).sum(), layer.w)[0]


# -- QNode options ---------------------------------------------------------------------------------------------------


def test_gradient_kwargs_are_refused_by_name_not_dropped():
    dev = qml.device("default.qubit", wires=1)
    qnode = qml.QNode(circuit, dev, diff_method="finite-diff", gradient_kwargs={"h": 0.3})
    for backend in (None, "statevector", "pennylane:default.qubit"):
        with pytest.raises(ConfigError) as info:
            QuantumLayer(qnode, 1, {"w": 1}, backend=backend)
        message = str(info.value)
        assert "qfunc=" in message and "circuit" in message and "gradient_kwargs={'h': 0.3}" in message
        assert "accepted:" in message and "qfunc.func" in message


@pytest.mark.parametrize(
    ("option", "value"),
    [("grad_on_execution", True), ("max_diff", 2), ("device_vjp", True), ("mcm_method", "deferred")],
)
def test_each_non_default_execution_option_is_refused_by_name(option, value):
    dev = qml.device("default.qubit", wires=1)
    qnode = qml.QNode(circuit, dev, **{option: value})
    with pytest.raises(ConfigError) as info:
        QuantumLayer(qnode, 1, {"w": 1})
    assert f"{option}={value!r}" in str(info.value) and "qfunc=" in str(info.value)
    assert "the default" in str(info.value)


def test_a_kernel_refuses_the_options_of_its_feature_map_qnode():
    qnode = qml.QNode(feature_map, qml.device("default.qubit", wires=1), max_diff=2)
    with pytest.raises(ConfigError, match=r"feature_map= the QNode .* max_diff=2"):
        QuantumKernel(qnode, 1)


def test_a_qnode_whose_diff_method_the_backend_lacks_is_refused_not_replaced():
    qnode = qml.QNode(circuit, qml.device("default.qubit", wires=1), diff_method="adjoint")
    with pytest.raises(ConfigError, match=r"qfunc= a QNode with diff_method='adjoint', which backend 'aer'"):
        QuantumLayer(qnode, 1, {"w": 1}, backend="aer")
    layer = QuantumLayer(qnode, 1, {"w": 1}, backend="aer", diff_method="parameter-shift")  # the layer's own choice
    assert layer.diff_method == "parameter-shift"


def test_default_options_and_cache_are_taken_and_give_the_qnodes_own_gradient():
    """The control: explicit defaults (and ``cache``, which only saves device calls) are not refused, and the QNode's
    finite-diff gradient (PennyLane's own step) is what the layer gives on the QNode's device."""
    dev = qml.device("default.qubit", wires=1)
    qnode = qml.QNode(circuit, dev, diff_method="finite-diff", grad_on_execution="best", max_diff=1, cache=True)
    layer = layer_of(qnode)
    assert layer.diff_method == "finite-diff"
    expected, got = weight_gradient(qnode, layer, X)
    assert torch.allclose(got, expected, atol=1e-10, rtol=0)


# -- a device's seed -------------------------------------------------------------------------------------------------


def seeded_qnode(seed=11):
    return qml.set_shots(qml.QNode(circuit, qml.device("default.qubit", wires=1, seed=seed)), 50)


@pytest.mark.parametrize("x", [X, X[0]], ids=["[B, F]", "[F]"])
def test_a_seeded_device_gives_pennylanes_samples_and_continues_its_stream(x):
    qnode = seeded_qnode()
    expected = [qnode(x, W), qnode(x, W)]
    assert not torch.equal(expected[0], expected[1])  # the stream moves on: the second call is another draw
    layer = layer_of(seeded_qnode())
    with torch.no_grad():
        assert torch.equal(layer(x), expected[0])
        assert torch.equal(layer(x), expected[1])
    by_device = layer_of(circuit, backend=qml.device("default.qubit", wires=1, seed=11), shots=50)
    with torch.no_grad():
        assert torch.equal(by_device(x), expected[0])
        assert torch.equal(by_device(x), expected[1])


def test_the_users_device_is_not_advanced_and_other_seeds_differ():
    qnode = seeded_qnode()
    layer = layer_of(qnode)
    with torch.no_grad():
        first = layer(X)
        assert torch.equal(qnode(X, W), first)  # the user's device draws its own first samples, untouched by hybridai
        assert not torch.equal(layer_of(seeded_qnode(12))(X), first)


# -- observables that are not Hermitian ------------------------------------------------------------------------------


def measuring(observable):
    def qfunc(inputs, w):
        qml.RX(inputs[..., 0], wires=0)
        qml.RY(w[0], wires=0)
        return qml.expval(observable())

    return qfunc


NOT_HERMITIAN = {
    "1j * Y": lambda: qml.s_prod(1j, qml.PauliY(0)),
    "X @ Y on one wire": lambda: qml.prod(qml.PauliX(0), qml.PauliY(0)),
}
BACKENDS = ["statevector", "density", "aer", "pennylane:default.qubit"]


@pytest.mark.parametrize("observable", NOT_HERMITIAN.values(), ids=NOT_HERMITIAN.keys())
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_non_hermitian_observable_is_refused_by_name_on_every_backend(backend, observable):
    value = qml.QNode(measuring(observable), qml.device("default.qubit", wires=1))(X[0], W)
    assert abs(complex(value).imag) > 0.1  # PennyLane's answer is complex: a real one would be another observable
    layer = layer_of(measuring(observable), backend=backend)
    with pytest.raises(UnsupportedOperationError) as info:
        layer(X)
    assert "not Hermitian" in str(info.value) and str(observable()) in str(info.value)
    assert "accepted: Hermitian observables" in str(info.value)


def test_a_non_hermitian_observable_without_a_pauli_form_is_refused_on_statevector():
    observable = lambda: qml.exp(qml.PauliX(0), 1j)  # noqa: E731  (its matrix: cos(1) I + i sin(1) X)
    with pytest.raises(UnsupportedOperationError, match="not Hermitian"):
        layer_of(measuring(observable))(X)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hermitian_observable_is_still_measured_as_pennylane_measures_it(backend):
    observable = lambda: qml.s_prod(0.5, qml.PauliY(0)) + qml.Hermitian(torch.eye(2, dtype=torch.float64), 0)  # noqa: E731
    expected = qml.QNode(measuring(observable), qml.device("default.qubit", wires=1))(X, W)
    with torch.no_grad():
        out = layer_of(measuring(observable), backend=backend)(X)
    assert torch.allclose(out, expected, atol=1e-10 if backend != "aer" else 0.05, rtol=0)


def test_hybridai_backends_object_refuses_too():
    backend = hybridai.backends.get("pennylane:default.qubit")
    with pytest.raises(UnsupportedOperationError, match="not Hermitian"):
        layer_of(measuring(NOT_HERMITIAN["1j * Y"]), backend=backend)(X)
