"""PennyLane and Qiskit habits (issue 17): each test reproduces one friction a PennyLane or Qiskit user met."""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pennylane as qml
import pytest
import torch

import hybridai
from hybridai import QuantumKernel, QuantumLayer
from hybridai.core.errors import BackendNotFoundError, ConfigError, ShapeError
from hybridai.quantum.mitigation import ZNEResult, plot_zne

SHAPES = {"weights": (1, 2, 3)}
QISKIT = "shots, seed, retries, backoff, timeout, max_parameter_sets, optimization_level"  # aer's and ibm's


def one_expval(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return qml.expval(qml.PauliZ(0))


def listed(*measure):
    """A circuit like ``one_expval`` that returns ``measure()`` (a list, a tuple, probs ...)."""

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return measure[0]()

    return circuit


def layer_and_torchlayer(circuit):
    torch.manual_seed(0)
    torchlayer = qml.qnn.TorchLayer(qml.QNode(circuit, qml.device("default.qubit", wires=2)), SHAPES)
    layer = QuantumLayer(circuit, 2, SHAPES)
    layer.load_state_dict(torchlayer.state_dict())
    return layer, torchlayer


# -- the output shape of a single measurement: as TorchLayer gives it -------------------------------------

RETURNS = {
    "expval alone": lambda: qml.expval(qml.PauliZ(0)),
    "var alone": lambda: qml.var(qml.PauliZ(1)),
    "list of one": lambda: [qml.expval(qml.PauliZ(0))],
    "tuple of one": lambda: (qml.expval(qml.PauliZ(0)),),
    "two": lambda: [qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliX(1))],
    "probs alone": lambda: qml.probs(wires=[0, 1]),
    "probs and expval": lambda: [qml.probs(wires=[0]), qml.expval(qml.PauliZ(1))],
}


@pytest.mark.parametrize("returns", RETURNS.values(), ids=RETURNS.keys())
def test_output_shapes_and_values_are_torchlayers(returns):
    layer, torchlayer = layer_and_torchlayer(listed(returns))
    for x in (torch.rand(3, 2), torch.rand(2), torch.rand(1, 2)):
        got, want = layer(x), torchlayer(x)
        assert got.shape == want.shape, (x.shape, got.shape, want.shape)
        torch.testing.assert_close(got, want.to(got.dtype), rtol=0, atol=1e-5)


def test_one_expectation_alone_gives_b_and_a_scalar_without_a_batch():
    layer = QuantumLayer(one_expval, 2, SHAPES)
    assert layer(torch.rand(5, 2)).shape == (5,) and layer(torch.rand(2)).shape == ()

    def no_inputs(weights):
        qml.RY(weights[0], wires=0)
        return qml.expval(qml.PauliZ(0))

    assert QuantumLayer(no_inputs, 1, {"weights": 1})().shape == ()
    assert "``[B]``" in inspect.getmodule(QuantumLayer).__doc__  # documented


# -- a QNode, as TorchLayer users pass it -----------------------------------------------------------------


def test_a_qnode_gives_its_function_and_device():
    qnode = qml.QNode(one_expval, qml.device("lightning.qubit", wires=2), diff_method="adjoint")
    layer = QuantumLayer(qnode, 2, SHAPES)
    assert layer.backend == "pennylane:lightning.qubit" and layer.diff_method == "adjoint"
    x = torch.rand(4, 2, dtype=torch.float64)
    plain = QuantumLayer(one_expval, 2, SHAPES, backend="pennylane:default.qubit").double()
    plain.load_state_dict(layer.state_dict())
    torch.testing.assert_close(layer.double()(x), plain(x), rtol=0, atol=1e-10)
    assert QuantumLayer(qnode, 2, SHAPES, backend="statevector").backend == "statevector"  # backend= wins


def test_a_qnodes_shots_become_the_backends():
    qnode = qml.set_shots(qml.QNode(one_expval, qml.device("default.qubit", wires=2)), shots=100)
    layer = QuantumLayer(qnode, 2, SHAPES, seed=3)
    assert layer.backend == "pennylane:default.qubit" and layer.backend_options["shots"] == 100
    assert layer.backend_options["seed"] == 3 and sorted(layer.backend_options) == ["rng", "seed", "shots"]  # seed wins
    assert not layer.resolved_backend.capabilities.exact


def test_a_kernel_takes_a_qnode_feature_map():
    def feature_map(x):
        qml.AngleEmbedding(x, wires=range(2))
        return qml.state()

    kernel = QuantumKernel(qml.QNode(feature_map, qml.device("default.qubit", wires=2)), 2)
    assert kernel.backend == "pennylane:default.qubit"
    K = kernel.matrix(torch.rand(3, 2, dtype=torch.float64))
    torch.testing.assert_close(torch.diagonal(K), torch.ones(3, dtype=torch.float64))


# -- device objects and Qiskit backend objects as backend= ------------------------------------------------


@pytest.mark.parametrize("name", ["default.qubit", "lightning.qubit", "default.mixed"])
def test_a_pennylane_device_object_is_its_family_name(name):
    layer = QuantumLayer(one_expval, 2, SHAPES, backend=qml.device(name, wires=2))
    assert layer.backend == f"pennylane:{name}" and layer(torch.rand(2, 2)).shape == (2,)
    assert QuantumLayer(one_expval, 2, SHAPES).set_backend(qml.device(name)).backend == f"pennylane:{name}"


def test_a_device_with_too_few_wires_is_refused_naming_backend():
    with pytest.raises(ConfigError, match=r"backend= a default\.qubit device with wires \[0\] lacks wires \[1\]"):
        QuantumLayer(one_expval, 2, SHAPES, backend=qml.device("default.qubit", wires=1))


def test_qiskit_backend_objects_map_to_aer():
    from qiskit_aer import AerSimulator
    from qiskit_aer.noise import NoiseModel, depolarizing_error
    from qiskit_ibm_runtime.fake_provider import FakeManilaV2

    assert QuantumLayer(one_expval, 2, SHAPES, backend=AerSimulator()).backend == "aer"
    noise = NoiseModel()
    noise.add_all_qubit_quantum_error(depolarizing_error(0.05, 1), ["rx", "ry", "rz"])
    noisy = QuantumLayer(one_expval, 2, SHAPES, backend=AerSimulator(noise_model=noise))
    assert noisy.backend == "aer" and noisy.backend_options["noise_model"] is noise
    assert noisy.resolved_backend.capabilities.noise
    fake = QuantumLayer(one_expval, 2, SHAPES, backend=FakeManilaV2())
    assert fake.backend == "aer:fake_manila" and fake.resolved_backend.capabilities.max_qubits == 5
    from_device = QuantumLayer(one_expval, 2, SHAPES, backend=AerSimulator.from_backend(FakeManilaV2()))
    assert from_device.backend == "aer:fake_manila"


@pytest.mark.parametrize("backend", [object(), 3, torch.device("cpu")], ids=["object", "int", "torch.device"])
def test_an_unknown_backend_object_lists_the_accepted_forms(backend):
    with pytest.raises(ConfigError) as caught:
        QuantumLayer(one_expval, 2, SHAPES, backend=backend)
    message = str(caught.value)
    assert message.startswith("backend=") and "accepted" in message
    assert all(form in message for form in ("'statevector'", "PennyLane device", "AerSimulator()", "FakeManilaV2()"))


# -- PennyLane and Qiskit names given as a family ---------------------------------------------------------


@pytest.mark.parametrize(
    "name, suggested",
    [
        ("default.qubit", "'pennylane:default.qubit'"),
        ("lightning.qubit", "'pennylane:lightning.qubit'"),
        ("default.mixed", "'pennylane:default.mixed'"),
        ("aer_simulator", "'aer'"),
        ("AerSimulator", "'aer'"),
    ],
)
def test_a_device_name_without_its_family_suggests_the_backend_name(name, suggested):
    with pytest.raises(BackendNotFoundError, match=re.escape(f"Did you mean {suggested}?")):
        QuantumLayer(one_expval, 2, SHAPES, backend=name)


# -- unknown options list the accepted ones, on every built-in quantum backend ---------------------------


@pytest.mark.parametrize(
    "name, accepted",
    [
        ("statevector", "dtype, seed, max_memory, fuse_max_qubits, shots"),
        ("pennylane:default.qubit", "max_workers, seed, shots"),
        ("pennylane:default.mixed", "readout_prob, seed, shots"),
        ("aer", f"{QISKIT}, threads, depolarizing, readout_error, noise_model"),
        ("ibm:fake_manila", f"{QISKIT}, mode, resilience_level"),
    ],
)
def test_an_unknown_option_lists_the_accepted_ones(name, accepted):
    with pytest.raises(ConfigError) as caught:
        hybridai.backends.get(name, shot=10)
    message = str(caught.value)
    assert "['shot']" in message and f"accepted: {accepted}" in message
    assert "Did you mean: 'shots'?" in message


# -- drawing the layer's circuit --------------------------------------------------------------------------


def test_draw_is_qml_draw_of_the_same_circuit_with_the_weights():
    torch.manual_seed(2)
    layer = QuantumLayer(one_expval, 2, SHAPES).double()
    x = torch.rand(3, 2, dtype=torch.float64)
    reference = qml.QNode(one_expval, qml.device("default.qubit", wires=2))
    weights = layer.weights.detach()
    assert layer.draw(x[1]) == qml.draw(reference)(x[1], weights)
    assert layer.draw(x[1:2], level="device", decimals=3) == qml.draw(reference, level="device", decimals=3)(
        x[1], weights
    )
    drawn = layer.draw(x[0], level="device")
    assert f"Rot({weights[0, 0, 0]:.2f},{weights[0, 0, 1]:.2f},{weights[0, 0, 2]:.2f})" in drawn
    assert f"RX({x[0, 0]:.2f})" in drawn and "<Z>" in drawn


def test_draw_names_a_bad_row_or_option():
    layer = QuantumLayer(one_expval, 2, SHAPES)
    with pytest.raises(ShapeError, match=r"x\.shape=\(3, 2\) is not valid; accepted: one row"):
        layer.draw(torch.rand(3, 2))
    with pytest.raises(ShapeError, match="x=None"):
        layer.draw()
    with pytest.raises(ConfigError, match=r"\['decimal'\].*accepted: .*decimals.*Did you mean: 'decimals'"):
        layer.draw(torch.rand(2), decimal=3)

    def no_inputs(weights):
        qml.RY(weights[0], wires=0)
        return qml.expval(qml.PauliZ(0))

    free = QuantumLayer(no_inputs, 1, {"weights": 1}, init=torch.nn.init.ones_)
    assert free.draw() == "0: ──RY(1.00)─┤  <Z>"


def test_kernel_draw_shows_the_feature_map_and_the_compute_uncompute_circuit():
    def feature_map(x):
        qml.RX(x[..., 0], wires=0)
        qml.CNOT(wires=[0, 1])
        qml.RY(x[..., 1], wires=1)

    kernel = QuantumKernel(feature_map, 2)

    @qml.qnode(qml.device("default.qubit", wires=2))
    def as_qnode(x):
        feature_map(x)
        return qml.state()

    x = torch.tensor([0.1, 0.2])
    assert kernel.draw(x) == qml.draw(as_qnode)(x)
    assert "RX(0.10)" in kernel.draw(x) and "RY(0.20)" in kernel.draw(x)
    pair = kernel.draw(torch.tensor([0.1, 0.2]), torch.tensor([[0.3, 0.4]]))
    assert "RY(0.20)" in pair and "RY(0.40)†" in pair and "RX(0.30)†" in pair and "Probs" in pair


# -- docstrings that tell the truth -----------------------------------------------------------------------


@pytest.mark.parametrize("cls", [QuantumLayer, QuantumKernel])
def test_docstrings_name_the_real_default_backend_and_every_argument(cls):
    doc = cls.__doc__
    assert cls.default_backend == "statevector" and 'default ``"statevector"``' in doc
    assert "default ``pennylane:default.qubit``" not in doc
    for name in list(inspect.signature(cls.__init__).parameters)[1:]:
        assert re.search(rf"^\s+(\*\*)?{name}:", doc, re.MULTILINE), f"{cls.__name__} does not document {name}"


# -- plot_zne in a notebook: a Figure, the caller's axes, no backend switch ------------------------------


def test_plot_zne_returns_a_figure_without_touching_matplotlibs_state():
    import matplotlib
    from matplotlib.figure import Figure

    result = ZNEResult((1.0, 3.0, 5.0), np.array([[[0.8]], [[0.5]], [[0.3]]]), np.array([[0.95]]), "richardson",
                       np.array([1.875, -1.25, 0.375]))  # fmt: skip
    backend = matplotlib.get_backend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a backend switch or pyplot use would warn or change get_backend()
        fig = plot_zne(result, ideal=1.0)
    assert isinstance(fig, Figure) and matplotlib.get_backend() == backend
    assert "matplotlib.use(" not in inspect.getsource(inspect.getmodule(plot_zne))
    axes = Figure().add_subplot()
    assert plot_zne(result, ax=axes) is axes.figure and len(axes.lines) == 3
