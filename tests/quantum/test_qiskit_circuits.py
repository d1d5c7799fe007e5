"""Qiskit circuits as circuits: QuantumLayer(circuit, input_params=, weight_params=, observables=) against
EstimatorQNN (+ TorchConnector), QuantumKernel(feature_map=circuit) against Qiskit ML's fidelity kernels, on
every backend; and every refusal by its message."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from qiskit import QuantumCircuit
from qiskit.circuit import Gate, Parameter, ParameterVector
from qiskit.circuit.library import (
    efficient_su2,
    get_standard_gate_name_mapping,
    real_amplitudes,
    z_feature_map,
    zz_feature_map,
)
from qiskit.quantum_info import Operator, Pauli, SparsePauliOp
from qiskit_machine_learning.circuit.library import qnn_circuit
from qiskit_machine_learning.connectors import TorchConnector
from qiskit_machine_learning.kernels import FidelityStatevectorKernel, TrainableFidelityStatevectorKernel
from qiskit_machine_learning.neural_networks import EstimatorQNN

import hybridai
from hybridai import QuantumKernel, QuantumLayer
from hybridai.core.errors import ConfigError, HybridAIError

EXACT = ["statevector", "pennylane:default.qubit"]
ROOT = Path(__file__).resolve().parents[2]


# -- circuits -----------------------------------------------------------------------------


def qnn():
    """qnn_circuit(2): zz_feature_map + real_amplitudes, as Qiskit ML's own tutorials build it."""
    circuit, inputs, weights = qnn_circuit(feature_map=zz_feature_map(2), ansatz=real_amplitudes(2))
    observables = [SparsePauliOp("ZZ"), SparsePauliOp.from_list([("XI", 0.5), ("IY", -0.3), ("II", 0.1)])]
    return circuit, list(inputs), list(weights), observables


def expressions():
    """ParameterExpressions in mapped gates and in gates that go through their definition (r), a parameter in
    several gates, and a Qiskit Pauli label whose rightmost letter is qubit 0."""
    x, th = ParameterVector("x", 2), ParameterVector("θ", 3)
    qc = QuantumCircuit(3)
    qc.h(range(3))
    qc.rz(2 * (np.pi - x[0]) * (np.pi - x[1]), 0)
    qc.ry(x[0] * th[0] + th[1] ** 2, 1)
    qc.crx(th[2].sin() - x[1], 1, 2)
    qc.rzz(th[0] / 2, 0, 2)
    qc.u(x[1], th[1], -th[2], 2)
    qc.r(th[0], x[0].exp(), 1)
    qc.cp(th[2] * x[0], 0, 1)
    qc.sdg(2)
    qc.barrier()
    qc.ecr(1, 2)
    qc.rxx(x[0].cos() + th[1], 0, 1)
    observables = [SparsePauliOp("ZZI"), SparsePauliOp.from_list([("XYZ", 0.7), ("IIX", -0.2)]), Pauli("YII")]
    return qc, list(x), list(th), observables


def library_blocks():
    """z_feature_map composed with efficient_su2 (rz, ry, cx), the default observable (Z⊗Z⊗Z over the 3 qubits)."""
    features, ansatz = z_feature_map(3, reps=1), efficient_su2(3, reps=1)
    qc = features.compose(ansatz)
    return qc, list(features.parameters), list(ansatz.parameters), None


CIRCUITS = {"qnn_circuit": qnn, "expressions": expressions, "library_blocks": library_blocks}


def reference(circuit, inputs, weights, observables, x, w):
    """EstimatorQNN's forward and backward, exact (its default reference Estimator at precision 0): values
    [B, K], input gradients [B, K, F], weight gradients [B, K, W], in float64."""
    qnn = EstimatorQNN(circuit=circuit, input_params=inputs, weight_params=weights, observables=observables,
                       input_gradients=True, default_precision=0.0)  # fmt: skip
    values = qnn.forward(x, w)
    input_grads, weight_grads = qnn.backward(x, w)
    return values, input_grads, weight_grads


def ours(layer, x, w):
    """The layer's values, input and per-sample weight Jacobians, shaped as EstimatorQNN's."""
    with torch.no_grad():
        layer.weights.copy_(torch.from_numpy(w))
    xt = torch.from_numpy(x).requires_grad_()
    out = layer(xt)
    batch, outputs = out.shape
    input_grads = np.zeros((batch, outputs, x.shape[1]))
    weight_grads = np.zeros((batch, outputs, w.size))
    for k in range(outputs):
        input_grads[:, k] = torch.autograd.grad(out[:, k].sum(), xt, retain_graph=True)[0].numpy()
        for b in range(batch):
            weight_grads[b, k] = torch.autograd.grad(out[b, k], layer.weights, retain_graph=True)[0].numpy()
    return out.detach().numpy(), input_grads, weight_grads


def sample(n_inputs, n_weights, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.5, (3, n_inputs)), rng.uniform(-1.0, 1.0, n_weights)


# -- QuantumLayer against EstimatorQNN ---------------------------------------------------------


@pytest.mark.parametrize("backend", EXACT)
@pytest.mark.parametrize("name", sorted(CIRCUITS))
def test_layer_values_and_gradients_equal_estimator_qnn(name, backend):
    circuit, inputs, weights, observables = CIRCUITS[name]()
    layer = QuantumLayer(circuit, input_params=inputs, weight_params=weights, observables=observables,
                         backend=backend).double()  # fmt: skip
    x, w = sample(len(inputs), len(weights))
    want = reference(circuit, inputs, weights, observables, x, w)
    got = ours(layer, x, w)
    n_outputs = 1 if observables is None else len(observables)
    assert got[0].shape == want[0].shape == (3, n_outputs)  # EstimatorQNN's output shape, [B, n_observables]
    for g, r in zip(got, want, strict=True):
        np.testing.assert_allclose(g, r, rtol=0, atol=1e-10)


def test_layer_equals_torch_connector_and_initialises_its_weights_alike():
    circuit, inputs, weights, observables = qnn()
    model = EstimatorQNN(circuit=circuit, input_params=inputs, weight_params=weights, observables=observables,
                         input_gradients=True, default_precision=0.0)  # fmt: skip
    torch.manual_seed(3)
    connector = TorchConnector(model)
    torch.manual_seed(3)
    layer = QuantumLayer(circuit, input_params=inputs, weight_params=weights, observables=observables)
    assert layer.weights.shape == (len(weights),) and layer.weights.dtype == connector.weight.dtype
    assert torch.equal(layer.weights.detach(), connector.weight.detach())  # uniform [-1, 1], the same draw
    x = torch.rand(4, 2)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = connector(x1), layer(x2)
    torch.testing.assert_close(b, a, rtol=0, atol=1e-6)  # TorchConnector computes in float32
    (a * torch.tensor([1.0, -2.0])).sum().backward()
    (b * torch.tensor([1.0, -2.0])).sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad, rtol=0, atol=1e-5)
    torch.testing.assert_close(layer.weights.grad, connector.weight.grad, rtol=0, atol=1e-5)


def test_default_observable_is_z_on_every_qubit_and_n_qubits_comes_from_the_circuit():
    circuit = real_amplitudes(3, reps=1)
    layer = QuantumLayer(circuit, weight_params=circuit.parameters, init=torch.nn.init.zeros_).double()
    assert layer.n_qubits == 3 and not layer.takes_inputs
    assert layer().shape == (1,) and layer().item() == pytest.approx(1.0, abs=1e-12)  # |000>: <ZZZ> = 1
    shifted = QuantumLayer(circuit, weight_params=circuit.parameters, observables=SparsePauliOp("IIZ"),
                           init=torch.nn.init.zeros_)  # fmt: skip
    with torch.no_grad():
        shifted.weights[0] = torch.pi  # RY(pi) on qubit 0 flips it: <Z_0> = -1, the rightmost letter
    assert shifted().item() == pytest.approx(-1.0, abs=1e-6)


def test_a_circuit_with_inputs_only_and_a_one_dimensional_input():
    circuit = zz_feature_map(2)
    layer = QuantumLayer(circuit, input_params=circuit.parameters).double()
    assert dict(layer.named_parameters()) == {} and layer.n_inputs == 2
    x = torch.tensor([0.3, -0.4], dtype=torch.float64)
    values = reference(circuit, list(circuit.parameters), [], None, x.numpy()[None], np.zeros(0))[0]
    assert layer(x).shape == (1,)
    np.testing.assert_allclose(layer(x).numpy(), values[0], atol=1e-10)


def test_every_standard_gate_is_its_qiskit_matrix():
    """Every Qiskit standard gate (mapped, or through its definition) on the converted circuit's wires has the
    matrix Qiskit gives it, up to the global phases that are dropped."""
    import pennylane as qml

    from hybridai.quantum.circuits.recording import recording
    from hybridai.quantum.qiskit_frontend.from_circuit import apply, read_circuit

    rng = np.random.default_rng(0)
    for name, gate in sorted(get_standard_gate_name_mapping().items()):
        if name in ("measure", "reset", "delay"):
            continue
        qc = QuantumCircuit(gate.num_qubits + 1)
        gate = type(gate)(*rng.uniform(-3, 3, len(gate.params))) if gate.params else gate
        qc.append(gate, list(reversed(range(1, gate.num_qubits + 1))))  # not in qubit order: wires matter
        gates = read_circuit(qc)
        with recording():
            tape = qml.tape.make_qscript(lambda gates=gates: apply(gates, {}))()
        ours = qml.matrix(tape, wire_order=list(reversed(range(qc.num_qubits))))
        theirs = Operator(qc).data
        phase = np.vdot(theirs.ravel(), ours.ravel()) / theirs.shape[0]
        assert abs(abs(phase) - 1) < 1e-10 and np.allclose(ours, phase * theirs, atol=1e-10), name


def test_unitary_and_custom_gates_go_through_matrices_and_definitions():
    inner = QuantumCircuit(2, name="block")
    a = Parameter("a")
    inner.rx(a, 0)
    inner.cx(0, 1)
    qc = QuantumCircuit(3)
    qc.append(inner.to_gate(), [2, 0])
    qc.unitary(Operator(efficient_su2(2, reps=1).assign_parameters(np.linspace(0.1, 1.5, 8))), [0, 1])
    qc.append(inner.to_gate().control(1), [1, 2, 0])
    observables = [SparsePauliOp("ZXI"), SparsePauliOp("YZX")]
    layer = QuantumLayer(qc, weight_params=[a], observables=observables).double()
    w = np.array([0.7])
    values = reference(qc, [], [a], observables, None, w)[0]
    with torch.no_grad():
        layer.weights.copy_(torch.from_numpy(w))
    np.testing.assert_allclose(layer().detach().numpy(), values[0], atol=1e-10)


# -- QuantumKernel against the fidelity kernels ------------------------------------------------


@pytest.mark.parametrize("backend", EXACT)
def test_kernel_equals_fidelity_statevector_kernel(backend):
    feature_map = zz_feature_map(3)
    rng = np.random.default_rng(1)
    X, Y = rng.uniform(0, 2, (5, 3)), rng.uniform(0, 2, (4, 3))
    theirs = FidelityStatevectorKernel(feature_map=feature_map)
    kernel = QuantumKernel(feature_map=feature_map, backend=backend)
    assert kernel.n_qubits == 3 and kernel.n_features == 3
    np.testing.assert_allclose(kernel.matrix(torch.from_numpy(X)).numpy(), theirs.evaluate(X), atol=1e-10)
    np.testing.assert_allclose(
        kernel.matrix(torch.from_numpy(X), torch.from_numpy(Y)).numpy(), theirs.evaluate(X, Y), atol=1e-10
    )


def test_kernel_gradient_in_the_inputs_equals_finite_differences_of_qiskit():
    feature_map = zz_feature_map(2)
    theirs = FidelityStatevectorKernel(feature_map=feature_map)
    X, Y = np.array([[0.3, 1.1]]), np.array([[0.9, -0.4]])
    x = torch.from_numpy(X).requires_grad_()
    QuantumKernel(feature_map=feature_map).matrix(x, torch.from_numpy(Y)).sum().backward()
    h = 1e-6
    numeric = [
        (theirs.evaluate(X + h * e, Y) - theirs.evaluate(X - h * e, Y)).item() / (2 * h) for e in np.eye(2)[:, None]
    ]
    np.testing.assert_allclose(x.grad[0].numpy(), numeric, atol=1e-7)


def test_trainable_kernel_equals_trainable_fidelity_statevector_kernel():
    th = ParameterVector("θ", 2)
    qc = QuantumCircuit(2)
    qc.ry(th[0], 0)
    qc.ry(th[1], 1)
    qc.compose(z_feature_map(2), inplace=True)
    values = [0.3, -0.7]
    theirs = TrainableFidelityStatevectorKernel(feature_map=qc, training_parameters=th)
    theirs.assign_training_parameters(values)
    kernel = QuantumKernel(feature_map=qc, training_params=th).double()
    assert kernel.weights.shape == (2,) and kernel.n_features == 2
    with torch.no_grad():
        kernel.weights.copy_(torch.tensor(values))
    X = np.random.default_rng(2).uniform(0, 2, (4, 2))
    K = kernel.matrix(torch.from_numpy(X))
    np.testing.assert_allclose(K.detach().numpy(), theirs.evaluate(X), atol=1e-10)
    K.sum().backward()
    assert kernel.weights.grad.abs().sum() > 1e-6  # the training parameters get gradients


def test_kernel_with_shots_on_aer_within_five_standard_errors():
    feature_map = zz_feature_map(2)
    X = np.random.default_rng(3).uniform(0, 1, (3, 2))
    exact = FidelityStatevectorKernel(feature_map=feature_map).evaluate(X)
    shots = 4000
    K = QuantumKernel(feature_map=feature_map, backend="aer", shots=shots, seed=4).matrix(torch.from_numpy(X))
    se = np.sqrt(np.clip(exact * (1 - exact), 1 / shots, None) / shots)
    assert (np.abs(K.numpy() - exact) < 5 * se).all()


# -- shot and noisy backends ------------------------------------------------------------------


def test_aer_exact_values_and_parameter_shift_gradients_equal_estimator_qnn():
    circuit, inputs, weights, observables = expressions()
    layer = QuantumLayer(circuit, input_params=inputs, weight_params=weights, observables=observables,
                         backend="aer").double()  # fmt: skip
    x, w = sample(len(inputs), len(weights), seed=5)
    want = reference(circuit, inputs, weights, observables, x, w)
    got = ours(layer, x, w)
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-8)
    np.testing.assert_allclose(got[2], want[2], rtol=0, atol=1e-8)


def fake_manila_exact(circuit, inputs, weights, observables, x, w):
    """Aer's own EstimatorV2 with FakeManilaV2's noise, exact (density matrix), on the circuit transpiled as
    hybridai transpiles it (optimization level 1, seed 1234): the noisy values to expect; and per observable (one
    Pauli word each) the factor prod(1 - 2 e_q) by which the device's symmetric readout errors e_q on its physical
    qubits shrink what shots measure (the estimator's exact values have no readout)."""
    from qiskit import transpile
    from qiskit_aer.noise import NoiseModel
    from qiskit_aer.primitives import EstimatorV2
    from qiskit_ibm_runtime.fake_provider import FakeManilaV2

    device = FakeManilaV2()
    transpiled = transpile(circuit, backend=device, optimization_level=1, seed_transpiler=1234)
    bound = {p: x[:, i] for i, p in enumerate(inputs)} | {
        p: np.full(len(x), v) for p, v in zip(weights, w, strict=True)
    }
    values = np.stack([bound[p] for p in transpiled.parameters], -1)
    options = {"method": "density_matrix", "noise_model": NoiseModel.from_backend(device)}
    estimator = EstimatorV2(options={"default_precision": 0.0, "backend_options": options})
    pubs = [(transpiled, o.apply_layout(transpiled.layout), values) for o in observables]
    exact = np.stack([r.data.evs for r in estimator.run(pubs).result()], 1)
    physical = transpiled.layout.final_index_layout()
    errors = [device.target["measure"][(q,)].error for q in physical]
    readout = [np.prod([1 - 2 * errors[q] for q in np.flatnonzero(o.paulis[0].x | o.paulis[0].z)]) for o in observables]
    return exact, np.array(readout)


def test_fake_manila_noise_equals_aers_estimator_and_shots_stay_within_five_standard_errors():
    circuit, inputs, weights, _ = qnn()
    observables = [SparsePauliOp("ZZ"), SparsePauliOp("XI")]
    x, w = sample(2, len(weights), seed=6)
    want, readout = fake_manila_exact(circuit, inputs, weights, observables, x, w)
    ideal = reference(circuit, inputs, weights, observables, x, w)[0]
    assert np.abs(want - ideal).max() > 0.01  # the noise shows

    def run(backend, **options):
        layer = QuantumLayer(circuit, input_params=inputs, weight_params=weights, observables=observables,
                             backend=backend, **options).double()  # fmt: skip
        with torch.no_grad():
            layer.weights.copy_(torch.from_numpy(w))
            return layer(torch.from_numpy(x)).numpy()

    np.testing.assert_allclose(run("aer:fake_manila"), want, rtol=0, atol=1e-10)
    shots = 4000
    for backend in ("aer:fake_manila", "ibm:fake_manila"):
        first, second = run(backend, shots=shots, seed=7), run(backend, shots=shots, seed=7)
        assert np.array_equal(first, second)  # seeded
        # Pauli words: sd <= 1 per shot; shots see the readout errors too
        assert (np.abs(first - want * readout) < 5 / np.sqrt(shots)).all(), (backend, first, want * readout)
    noiseless = run("aer", shots=shots, seed=8)
    assert (np.abs(noiseless - ideal) < 5 / np.sqrt(shots)).all()


def test_zne_runs_on_fake_manila_and_moves_towards_the_noiseless_values():
    circuit, inputs, weights, _ = qnn()
    x, w = sample(2, len(weights), seed=9)
    ideal = reference(circuit, inputs, weights, None, x[:2], w)[0]

    def run(**options):
        layer = QuantumLayer(circuit, input_params=inputs, weight_params=weights, backend="aer:fake_manila",
                             **options).double()  # fmt: skip
        with torch.no_grad():
            layer.weights.copy_(torch.from_numpy(w))
            return layer(torch.from_numpy(x[:2])).numpy(), layer

    noisy, _ = run()
    mitigated, layer = run(mitigation=hybridai.ZNE())
    assert layer.last_mitigation is not None
    assert np.abs(mitigated - ideal).max() < np.abs(noisy - ideal).max() / 3


def test_training_in_torch_lowers_the_loss():
    circuit, inputs, weights, _ = qnn()
    torch.manual_seed(0)
    layer = QuantumLayer(circuit, input_params=inputs, weight_params=weights)
    x = torch.rand(6, 2)
    target = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0]).unsqueeze(1)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.1)
    losses = []
    for _ in range(8):
        optimizer.zero_grad()
        loss = ((layer(x) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.05, losses


def test_layer_and_kernel_survive_torch_save_deepcopy_and_pickle():
    import copy
    import io
    import pickle

    circuit, inputs, weights, observables = qnn()
    layer = QuantumLayer(circuit, input_params=inputs, weight_params=weights, observables=observables)
    x = torch.rand(3, 2)
    buffer = io.BytesIO()
    torch.save(layer, buffer)
    buffer.seek(0)
    for twin in (torch.load(buffer, weights_only=False), copy.deepcopy(layer)):
        assert torch.equal(twin(x), layer(x))
    kernel = QuantumKernel(feature_map=zz_feature_map(2))
    twin = pickle.loads(pickle.dumps(kernel))
    assert torch.equal(twin.matrix(x.double()), kernel.matrix(x.double()))


def test_draw_shows_the_converted_gates():
    circuit, inputs, weights, observables = qnn()
    text = QuantumLayer(circuit, input_params=inputs, weight_params=weights).draw(torch.tensor([0.1, 0.2]))
    assert "H" in text and "Rϕ" in text and "RY" in text and "╭●" in text


# -- refusals --------------------------------------------------------------------------------


def small():
    x, th = Parameter("x"), Parameter("th")
    qc = QuantumCircuit(2)
    qc.rx(x, 0)
    qc.ry(th, 1)
    qc.cx(0, 1)
    return qc, x, th


def refused(match, **kwargs):
    with pytest.raises(HybridAIError, match=match):
        QuantumLayer(**kwargs)


def test_parameter_lists_are_checked():
    qc, x, th = small()
    stranger = Parameter("stranger")
    refused(r"qfunc=.*\['th'\] are in neither", qfunc=qc, input_params=[x])
    refused(r"weight_params=.*both: \['x'\]", qfunc=qc, input_params=[x], weight_params=[x, th])
    refused(r"input_params\[1\]=Parameter\(stranger\).*one of \['th', 'x'\]", qfunc=qc, input_params=[x, stranger],
            weight_params=[th])  # fmt: skip
    refused(r"input_params\[1\]=Parameter\(x\).*each parameter once", qfunc=qc, input_params=[x, x],
            weight_params=[th])  # fmt: skip
    refused(r"input_params=Parameter\(x\).*a list of the circuit's Parameters", qfunc=qc, input_params=x,
            weight_params=[th])  # fmt: skip
    refused(r"weight_params\[0\]=.*a list of the circuit's Parameters", qfunc=qc, input_params=[x],
            weight_params=[2 * th])  # fmt: skip


def test_observables_are_checked():
    qc, x, th = small()
    both = {"qfunc": qc, "input_params": [x], "weight_params": [th]}
    refused(r"observables\[1\].*on 2 qubits \(the circuit's\), not 3", observables=[Pauli("ZZ"), Pauli("ZZZ")], **both)
    refused(
        r"observables=\"SparsePauliOp\(\[\('XY', 1j\)\]\)\".*Hermitian", observables=SparsePauliOp("XY", 1j), **both
    )
    refused(r"observables='ZZ'.*SparsePauliOp", observables="ZZ", **both)
    refused(r"observables=\[\].*non-empty list", observables=[], **both)
    refused(r"observables\[0\]=.*SparsePauliOp", observables=[np.eye(4)], **both)


def test_arguments_that_do_not_go_with_a_circuit_are_refused():
    qc, x, th = small()
    both = {"qfunc": qc, "input_params": [x], "weight_params": [th]}
    refused(r"weight_shapes=\{'weights': 1\}.*None with a Qiskit circuit", weight_shapes={"weights": 1}, **both)
    refused(r"n_qubits=3 .*None or 2 \(the circuit's qubit count\)", n_qubits=3, **both)
    refused(r"n_inputs=2 .*None or 1 \(len\(input_params\)\)", n_inputs=2, **both)
    refused(r"input_params=.*goes with a Qiskit QuantumCircuit as qfunc", qfunc=lambda inputs: None, n_qubits=1,
            input_params=[x])  # fmt: skip
    refused(r"observables=.*goes with a Qiskit QuantumCircuit", qfunc=lambda inputs: None, n_qubits=1,
            observables=SparsePauliOp("Z"))  # fmt: skip
    with pytest.raises(HybridAIError, match="training_params=.*goes with a Qiskit QuantumCircuit as feature_map"):
        QuantumKernel(lambda x: None, 1, training_params=[x])
    with pytest.raises(HybridAIError, match=r"feature_map=.*not in training_params"):
        QuantumKernel(feature_map=qc, training_params=[x, th])
    with pytest.raises(HybridAIError, match=r"n_features=3 .*None or 2"):
        QuantumKernel(feature_map=qc, n_features=3)


def test_instructions_that_are_not_gates_are_refused_by_name():
    qc, x, th = small()
    measured = qc.copy()
    measured.measure_all()
    reset = qc.copy()
    reset.reset(0)
    delayed = qc.copy()
    delayed.delay(100, 0)
    controlled = QuantumCircuit(2, 1)
    controlled.rx(x, 0)
    controlled.ry(th, 1)
    controlled.measure(0, 0)
    with controlled.if_test((controlled.clbits[0], 1)):
        controlled.x(1)
    opaque = qc.copy()
    opaque.append(Gate("mystery", 1, []), [0])
    cases = {
        "'measure' on qubits \\[0\\].*observables=": measured,
        "'reset'.*not a unitary": reset,
        "'delay'": delayed,
        "'measure' on qubits \\[0\\]": controlled,
        "'mystery'.*neither a definition": opaque,
    }
    for match, circuit in cases.items():
        refused(match, qfunc=circuit, input_params=[x], weight_params=[th])
    flow = QuantumCircuit(2, 1)
    flow.rx(x, 0)
    flow.ry(th, 1)
    with flow.if_test((flow.clbits[0], 1)):
        flow.x(1)
    refused("'if_else'.*classical control flow", qfunc=flow, input_params=[x], weight_params=[th])

    class Sneaky(Gate):
        """A gate whose definition uses a parameter the circuit does not expose."""

        def __init__(self):
            super().__init__("sneaky", 1, [])

        def _define(self):
            self.definition = QuantumCircuit(1)
            self.definition.rx(Parameter("hidden"), 0)

    sneaky = qc.copy()
    sneaky.append(Sneaky(), [1])
    refused(r"parameters \['hidden'\], which are not among circuit.parameters", qfunc=sneaky, input_params=[x],
            weight_params=[th])  # fmt: skip


def test_complex_angles_and_expressions_torch_cannot_evaluate_are_refused():
    import sympy

    from hybridai.quantum.qiskit_frontend.expressions import _compile, angle

    x = Parameter("x")
    qc = QuantumCircuit(1)
    qc.rx(1j * x, 0)
    refused(r"'rx' on qubits \[0\] has a complex angle", qfunc=qc, input_params=[x])
    with pytest.raises(ConfigError, match="floor.*cannot evaluate in torch"):
        _compile(sympy.floor(sympy.Symbol("x")), "gate 'rx'")
    value = angle(2 * (np.pi - x).sin() ** 2 + abs(x) - x.arctan() / 3, "gate")  # evaluates as torch does
    t = torch.tensor([0.4, -1.2], dtype=torch.float64)
    want = 2 * torch.sin(torch.pi - t) ** 2 + t.abs() - torch.atan(t) / 3
    torch.testing.assert_close(value({"x": t}), want, rtol=0, atol=1e-15)


def test_importing_hybridai_and_using_pennylane_layers_does_not_import_qiskit():
    probe = (
        "import sys, torch, pennylane as qml, hybridai\n"
        "def f(inputs):\n    qml.RX(inputs[..., 0], wires=0)\n    return qml.expval(qml.PauliZ(0))\n"
        "hybridai.QuantumLayer(f, 1)(torch.rand(2, 1))\n"
        "hybridai.QuantumKernel(lambda x: qml.RX(x[..., 0], wires=0), 1).matrix(torch.rand(2, 1))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'qiskit')[:3])\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout
