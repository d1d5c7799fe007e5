"""PennyLane devices and QNodes that carry transforms (issue 27): never silently dropped.

Peers: the same device's own QNode, PennyLane's ``qml.noise.mitigate_with_zne``; all in float64.
"""

from __future__ import annotations

import copy
import io
import pickle
import warnings

import numpy as np
import pennylane as qml
import pytest
import torch

import hybridai
from hybridai import ZNE, QuantumKernel, QuantumLayer
from hybridai.core.errors import ConfigError, UnsupportedOperationError

SHAPES = {"weights": (2, 2, 3)}
TOL = {"rtol": 0, "atol": 1e-10}


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return qml.expval(qml.PauliZ(0))


def two_measurements(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return [qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliX(1))]


def noisy_device(wires=4, **options):
    """The recipe of PennyLane's error-mitigation demo."""
    return qml.noise.insert(qml.device("default.mixed", wires=wires, **options), qml.DepolarizingChannel, 0.05)


def noise_model():
    return qml.NoiseModel({
        qml.noise.op_eq(qml.RX): qml.noise.partial_wires(qml.AmplitudeDamping, 0.2),
        qml.noise.op_eq(qml.CNOT): qml.noise.partial_wires(qml.PhaseDamping, 0.1),
    })  # fmt: skip


@qml.transform
def append_rx(tape, angle=0.7):
    """A transform that changes values: RX(angle) on wire 0 before the measurements."""
    ops = [*tape.operations, qml.RX(angle, wires=0)]
    return [tape.copy(operations=ops)], lambda results: results[0]


@qml.transform
def prepend_ry(tape, angle=0.7):
    """A transform that changes a feature map's kernel: RY(angle) on wire 1 before everything."""
    return [tape.copy(operations=[qml.RY(angle, wires=1), *tape.operations])], lambda results: results[0]


def data(seed=0, batch=4):
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(batch, 2, dtype=torch.float64, generator=generator) * 3
    weights = torch.rand(*SHAPES["weights"], dtype=torch.float64, generator=generator) * 6
    return x, weights


def layer_with(qfunc, weights, **kwargs):
    layer = QuantumLayer(qfunc, 2, SHAPES, **kwargs).double()
    layer.load_state_dict({"weights": weights})
    return layer


def values_and_grads(function, x, weights):
    """Values and d/d inputs, d/d weights of sum(values * ramp), through autograd."""
    x = x.clone().requires_grad_(True)
    weights = weights.clone().requires_grad_(True)
    out = function(x, weights)
    (out * torch.linspace(0.5, 1.5, out.shape[0], dtype=out.dtype).reshape(-1, *[1] * (out.ndim - 1))).sum().backward()
    return out.detach(), x.grad, weights.grad


def through_layer(qfunc, **kwargs):
    def run(x, weights):
        layer = QuantumLayer(qfunc, 2, SHAPES, **kwargs).double()
        del layer.weights
        layer.weights = weights  # the test's own tensor: its gradient is the layer's weight gradient
        return layer(x)

    return run


def per_sample(qnode):
    def run(x, weights):
        rows = [qnode(sample, weights) for sample in x]
        return torch.stack([torch.stack(r) if isinstance(r, tuple | list) else r for r in rows])

    return run


def assert_same(got, want):
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, **TOL)


# -- a device with qml.noise.insert ------------------------------------------------------------------------


@pytest.mark.parametrize("qfunc", [circuit, two_measurements], ids=["expval", "two measurements"])
def test_a_noise_inserted_device_equals_its_own_qnode_values_and_gradients(qfunc):
    device = noisy_device()
    x, weights = data()
    got = values_and_grads(through_layer(qfunc, backend=device), x, weights)
    want = values_and_grads(per_sample(qml.QNode(qfunc, device, interface="torch")), x, weights)
    assert_same(got, want)
    ideal = values_and_grads(per_sample(qml.QNode(qfunc, qml.device("default.mixed", wires=4))), x, weights)
    assert (got[0] - ideal[0]).abs().max() > 0.05  # the noise is there


def test_a_qnode_on_a_noise_inserted_device_brings_the_device():
    device = noisy_device()
    x, weights = data(1)
    qnode = qml.QNode(circuit, device, interface="torch")
    layer = layer_with(qnode, weights)
    assert layer.backend == "pennylane:default.mixed"
    torch.testing.assert_close(layer(x).detach(), per_sample(qnode)(x, weights), **TOL)


def test_the_device_is_named_and_its_capabilities_say_noise():
    layer = QuantumLayer(circuit, 2, SHAPES, backend=noisy_device())
    assert layer.backend == "pennylane:default.mixed"
    shown = repr(layer.backend_options["device"])
    assert "default.mixed" in shown and "insert(DepolarizingChannel, 0.05)" in shown
    assert "insert(DepolarizingChannel, 0.05)" in repr(layer)
    caps = layer.resolved_backend.capabilities
    assert caps.noise and not caps.exact and "backprop" in caps.diff_methods
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ZNE is meaningful here: no "changes nothing" warning
        QuantumLayer(circuit, 2, SHAPES, backend=noisy_device(), mitigation=ZNE())


def test_the_summary_shows_the_device_s_noise_and_the_qnode_s_transforms():
    # the summary's backend column showed 'pennylane:default.mixed' alone: a noisy device looked noiseless
    noisy = torch.nn.Sequential(QuantumLayer(circuit, 2, SHAPES, backend=noisy_device()))
    assert "pennylane:default.mixed <default.mixed device" in hybridai.summary(noisy)
    assert "insert(DepolarizingChannel, 0.05)" in hybridai.summary(noisy)
    merged = qml.transforms.merge_rotations(qml.QNode(circuit, qml.device("default.qubit", wires=2)))
    row = hybridai.summary(torch.nn.Sequential(QuantumLayer(merged, 2, SHAPES)))
    assert "pennylane:default.qubit, QNode transforms ['merge_rotations']" in row


def test_a_transformed_device_that_adds_no_noise_is_still_not_exact():
    device = append_rx(qml.device("default.qubit", wires=2))
    layer = layer_with(circuit, data()[1], backend=device)
    caps = layer.resolved_backend.capabilities
    assert not caps.exact and not caps.noise
    x, weights = data(2)
    want = per_sample(qml.QNode(circuit, device, interface="torch"))(x, weights)
    torch.testing.assert_close(layer_with(circuit, weights, backend=device)(x).detach(), want, **TOL)


def test_a_device_without_the_wires_is_refused_naming_backend():
    with pytest.raises(ConfigError, match=r"backend= a default\.mixed device with wires \[0\] lacks wires \[1\]"):
        QuantumLayer(circuit, 2, SHAPES, backend=noisy_device(wires=1))


# -- ZNE against qml.noise.mitigate_with_zne ---------------------------------------------------------------


def test_zne_equals_pennylanes_mitigate_with_zne_batched():
    device = noisy_device()
    x, weights = data(3)
    zne = ZNE(scale_factors=(1, 3, 5), folding="global", extrapolation="richardson")
    peer = qml.noise.mitigate_with_zne(
        qml.QNode(circuit, device, interface="torch"),
        scale_factors=[1, 3, 5],
        folding=qml.noise.fold_global,
        extrapolate=qml.noise.richardson_extrapolate,
    )
    layer = layer_with(circuit, weights, backend=device, mitigation=zne)
    got = values_and_grads(through_layer(circuit, backend=device, mitigation=zne), x, weights)
    want = values_and_grads(per_sample(peer), x, weights)
    assert_same(got, want)
    layer(x)  # ONE backend call for the batch and its folds
    assert layer.execution_stats["calls"] == 1 and layer.last_mitigation.noisy.shape == (3, x.shape[0], 1)
    plain = layer_with(circuit, weights, backend=device)(x).detach()
    np.testing.assert_allclose(layer.last_mitigation.noisy[0, :, 0], plain.numpy(), rtol=0, atol=1e-12)


def test_zne_folds_the_gates_the_devices_noise_follows():
    """Rot is one noisy gate on default.mixed: folded as one (three once decomposed would scale the noise 9x)."""
    from hybridai.core.execution import ExecutionConfig
    from hybridai.quantum.execution.run import execute

    layer = QuantumLayer(circuit, 2, SHAPES, backend=noisy_device()).double()
    tape = layer.tape(data()[0])
    seen = []
    backend = layer.resolved_backend
    original = backend.execute

    def spy(tapes, config):
        seen.extend(tapes)
        return original(tapes, config)

    backend.execute = spy
    execute(backend, [tape], ExecutionConfig((0, 1), mitigation=ZNE(scale_factors=(1, 3))))
    native = backend.native_operations(tape)
    assert [op.name for op in native].count("Rot") == 4
    assert len(seen[1].operations) == 3 * len(native)


# -- qml.noise.add_noise with a NoiseModel -----------------------------------------------------------------


def test_add_noise_on_a_device_equals_its_qnode():
    device = qml.noise.add_noise(qml.device("default.mixed", wires=2), noise_model())
    x, weights = data(4)
    got = values_and_grads(through_layer(circuit, backend=device), x, weights)
    want = values_and_grads(per_sample(qml.QNode(circuit, device, interface="torch")), x, weights)
    assert_same(got, want)
    assert QuantumLayer(circuit, 2, SHAPES, backend=device).resolved_backend.capabilities.noise


@pytest.mark.parametrize("backend", [None, "pennylane:default.mixed"], ids=["its device", "backend= given"])
def test_add_noise_on_a_qnode_equals_the_qnode(backend):
    qnode = qml.noise.add_noise(
        qml.QNode(circuit, qml.device("default.mixed", wires=2), interface="torch"), noise_model()
    )
    x, weights = data(5)
    got = values_and_grads(through_layer(qnode, backend=backend), x, weights)
    want = values_and_grads(per_sample(qnode), x, weights)
    assert_same(got, want)
    ideal = per_sample(qml.QNode(circuit, qml.device("default.mixed", wires=2)))(x, weights)
    assert (got[0] - ideal).abs().max() > 0.05


def test_noise_added_to_a_qnode_is_never_dropped_on_a_backend_without_channels():
    qnode = qml.noise.add_noise(qml.QNode(circuit, qml.device("default.mixed", wires=2)), noise_model())
    with pytest.raises(UnsupportedOperationError, match="AmplitudeDamping"):
        layer_with(qnode, data()[1], backend="statevector")(data()[0])


# -- QNodes decorated with transforms ----------------------------------------------------------------------


@pytest.mark.parametrize("backend", [None, "statevector"], ids=["its device", "backend= given"])
def test_a_custom_transform_on_a_qnode_applies(backend):
    qnode = append_rx(qml.QNode(two_measurements, qml.device("default.qubit", wires=2), interface="torch"), angle=0.9)
    x, weights = data(6)
    got = values_and_grads(through_layer(qnode, backend=backend), x, weights)
    want = values_and_grads(per_sample(qnode), x, weights)
    assert_same(got, want)
    plain = per_sample(qml.QNode(two_measurements, qml.device("default.qubit", wires=2)))(x, weights)
    assert (got[0] - plain).abs().max() > 0.05


def test_merge_rotations_on_a_qnode_runs_the_merged_circuit():
    def rotations(inputs, weights):
        qml.RX(inputs[..., 0], wires=0)
        qml.RX(weights[0, 0, 0], wires=0)
        qml.RY(inputs[..., 1], wires=1)
        qml.CNOT([0, 1])
        return qml.expval(qml.PauliZ(1))

    qnode = qml.transforms.merge_rotations(
        qml.QNode(rotations, qml.device("default.qubit", wires=2), interface="torch")
    )
    x, weights = data(7)
    layer = layer_with(qnode, weights)
    seen = []
    original = layer.resolved_backend.execute
    layer.resolved_backend.execute = lambda tapes, config: seen.extend(tapes) or original(tapes, config)
    torch.testing.assert_close(layer(x).detach(), per_sample(qnode)(x, weights), **TOL)
    assert seen and all([op.name for op in t.operations] == ["RX", "RY", "CNOT"] for t in seen)


def test_mitigate_with_zne_on_a_qnode_applies_with_its_post_processing():
    qnode = qml.noise.mitigate_with_zne(
        qml.QNode(circuit, noisy_device(), interface="torch"),
        scale_factors=[1, 3, 5],
        folding=qml.noise.fold_global,
        extrapolate=qml.noise.richardson_extrapolate,
    )
    x, weights = data(8)
    got = values_and_grads(through_layer(qnode), x, weights)
    want = values_and_grads(per_sample(qnode), x, weights)
    assert_same(got, want)


def test_a_gradient_transform_on_a_qnode_is_refused_by_name():
    qnode = qml.gradients.param_shift(qml.QNode(circuit, qml.device("default.qubit", wires=2)))
    with pytest.raises(ConfigError, match=r"qfunc= a QNode with the transform 'param_shift'"):
        QuantumLayer(qnode, 2, SHAPES)


# -- QuantumKernel -----------------------------------------------------------------------------------------


def feature_map(x):
    qml.AngleEmbedding(x, wires=range(2))
    qml.CNOT([0, 1])
    qml.RY(x[..., 0] * x[..., 1], wires=1)


def test_a_kernel_on_a_noise_inserted_device_equals_its_compute_uncompute_qnode():
    device = noisy_device(wires=3)
    kernel = QuantumKernel(feature_map, 2, backend=device)
    assert kernel.method == "compute-uncompute"
    X = torch.rand(4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(9)) * 2
    Y = X[:3].flip(0) + 0.3

    @qml.qnode(device, interface="torch")
    def compute_uncompute(x, y):
        feature_map(x)
        qml.adjoint(feature_map)(y)
        return qml.probs(wires=[0, 1])

    want = torch.stack([torch.stack([compute_uncompute(x, y)[0] for y in Y]) for x in X])
    torch.testing.assert_close(kernel.matrix(X, Y), want, **TOL)
    ideal = QuantumKernel(feature_map, 2).matrix(X, Y)
    assert (want - ideal).abs().max() > 0.05


def test_a_kernel_applies_a_qnode_rewrite_and_refuses_others_by_name():
    qnode = prepend_ry(qml.QNode(feature_map, qml.device("default.qubit", wires=2)), angle=0.9)
    X = torch.rand(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(10)) * 2
    got = QuantumKernel(qnode, 2).matrix(X)

    def rotated(x):
        qml.RY(0.9, wires=1)
        feature_map(x)

    torch.testing.assert_close(got, QuantumKernel(rotated, 2).matrix(X), **TOL)
    assert (got - QuantumKernel(feature_map, 2).matrix(X)).abs().max() > 1e-3
    split = qml.noise.mitigate_with_zne(
        qml.QNode(feature_map, noisy_device(wires=2)), scale_factors=[1, 3], folding=qml.noise.fold_global,
        extrapolate=qml.noise.richardson_extrapolate,
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"feature_map= a QNode with the transform 'mitigate_with_zne'"):
        QuantumKernel(split, 2).matrix(X)


# -- the user's device object: untouched, copied, saved, seeded --------------------------------------------


@pytest.mark.filterwarnings("ignore:Setting shots on device is deprecated")
def test_the_users_device_object_is_never_changed_or_drawn_from():
    device = noisy_device(wires=2, shots=200, seed=11)
    state = copy.deepcopy(device._rng.bit_generator.state)
    layer = layer_with(circuit, data()[1], backend=device)
    layer(data()[0])
    assert device._rng.bit_generator.state == state
    assert not set(vars(device)) & {"execute", "execute_and_compute_derivatives"}  # no lock wrappers on it


@pytest.mark.filterwarnings("ignore:Setting shots on device is deprecated")
def test_a_seed_gives_the_samples_of_the_device_seeded_with_it_and_shots_come_from_the_device():
    device = noisy_device(wires=2, shots=300)
    x, weights = data(12)
    seeded = layer_with(circuit, weights, backend=device, seed=5)
    assert seeded.backend_options["shots"] == 300
    first, second = seeded(x).detach(), seeded(x).detach()
    peer = qml.set_shots(qml.QNode(circuit, noisy_device(wires=2, seed=5), interface="torch"), shots=300)
    torch.testing.assert_close(first, peer(x, weights), rtol=0, atol=0)  # the same draws
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    unseeded = layer_with(circuit, weights, backend=device)
    assert not torch.equal(unseeded(x), unseeded(x))  # its generator advances, as the device's own would


def test_deepcopy_and_torch_save_keep_the_device_and_the_qnode_transforms():
    x, weights = data(13)
    qnode = append_rx(qml.QNode(circuit, noisy_device(), interface="torch"), angle=0.3)
    layer = layer_with(qnode, weights)
    want = layer(x).detach()
    buffer = io.BytesIO()
    torch.save(layer, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    for other in (copy.deepcopy(layer), loaded, pickle.loads(pickle.dumps(layer))):
        torch.testing.assert_close(other(x).detach(), want, **TOL)
        assert "insert" in repr(other.backend_options["device"])


def test_saving_a_device_whose_transform_pickle_cannot_find_names_it():
    @qml.transform
    def local_noise(tape):
        return [tape], lambda results: results[0]

    layer = QuantumLayer(circuit, 2, SHAPES, backend=local_noise(qml.device("default.qubit", wires=2)))
    copy.deepcopy(layer)  # copies need no pickling
    with pytest.raises(ConfigError, match=r"transform 'local_noise'.*pickle cannot find"):
        torch.save(layer, io.BytesIO())


def test_place_takes_a_noise_inserted_device():
    x, weights = data(14)
    model = torch.nn.Sequential(layer_with(circuit, weights))
    hybridai.place(model, quantum=noisy_device())
    want = per_sample(qml.QNode(circuit, noisy_device(), interface="torch"))(x, weights)
    torch.testing.assert_close(model(x).detach(), want, **TOL)


# -- a plain device: as before -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["default.qubit", "default.mixed", "lightning.qubit"])
def test_a_plain_device_still_maps_to_its_name(name):
    device = qml.device(name, wires=2)
    layer = QuantumLayer(circuit, 2, SHAPES, backend=device)
    options = dict(layer.backend_options)
    assert layer.backend == f"pennylane:{name}" and list(options) == ["rng"]  # its random generator (issue 37)
    assert options["rng"] is not device._rng  # a copy (tests/quantum/test_qnode_options.py)
    assert options["rng"].bit_generator.state == device._rng.bit_generator.state
    assert layer.qnode_transforms is None
    shots = QuantumLayer(qml.set_shots(qml.QNode(circuit, qml.device(name, wires=2)), shots=50), 2, SHAPES)
    assert shots.backend == f"pennylane:{name}" and sorted(shots.backend_options) == ["rng", "shots"]
    assert shots.backend_options["shots"] == 50


def test_default_mixeds_readout_error_comes_along():
    device = qml.device("default.mixed", wires=2, readout_prob=0.1)
    x, weights = data(15)
    layer = layer_with(circuit, weights, backend=device)
    assert layer.backend == "pennylane:default.mixed" and layer.backend_options["readout_prob"] == 0.1
    assert sorted(layer.backend_options) == ["readout_prob", "rng"]
    try:
        want = per_sample(qml.QNode(circuit, device, interface="torch"))(x, weights)
    except TypeError:  # PennyLane 0.45's default.mixed fails on its own readout error: hybridai fails as it does
        with pytest.raises(TypeError):
            layer(x)
        return
    torch.testing.assert_close(layer(x).detach(), want, **TOL)


class RotatingQubit(qml.devices.DefaultQubit):
    """A subclass of a plugin's device with preprocessing of its own: qml.device('default.qubit') is not it."""

    def preprocess_transforms(self, execution_config=None):
        program = super().preprocess_transforms(execution_config)
        program.add_transform(append_rx, angle=0.5)
        return program


def test_a_subclass_of_a_plugins_device_runs_as_itself():
    device = RotatingQubit(wires=2)
    x, weights = data(16)
    layer = layer_with(circuit, weights, backend=device)
    assert layer.backend == "pennylane:default.qubit" and "RotatingQubit" in repr(layer.backend_options["device"])
    want = per_sample(qml.QNode(circuit, device, interface="torch"))(x, weights)
    torch.testing.assert_close(layer(x).detach(), want, **TOL)
    assert not layer.resolved_backend.capabilities.exact


def test_one_layer_on_a_noisy_device_from_four_threads_equals_serial():
    from concurrent.futures import ThreadPoolExecutor

    x, weights = data(17, batch=3)
    layer = layer_with(circuit, weights, backend=noisy_device(wires=2))
    inputs = [x + 0.1 * i for i in range(8)]
    with torch.no_grad():
        serial = [layer(v) for v in inputs]
        with ThreadPoolExecutor(4) as pool:
            threaded = list(pool.map(layer, inputs))
    for a, b in zip(serial, threaded, strict=True):
        assert torch.equal(a, b)
