"""The statevector backend against PennyLane's default.qubit: values and gradients."""

import math

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridai import QuantumLayer, backends
from hybridai.core.errors import BackendUnavailableError, ConfigError, ResourceLimitError, UnsupportedOperationError
from hybridai.core.execution import ExecutionConfig
from hybridai.quantum.statevector.plan import Plan

TOL = {"complex128": 1e-10, "complex64": 1e-5}


def reference(qfunc, n, x, weights):
    """default.qubit with backprop and broadcasting: the oracle."""
    qnode = qml.QNode(qfunc, qml.device("default.qubit", wires=n), interface="torch", diff_method="backprop")
    out = qnode(x, **weights)
    out = out if isinstance(out, tuple | list) else (out,)
    columns = [torch.as_tensor(o) for o in out]
    if all(c.dim() == len(c.shape) and c.shape[:1] != (x.shape[0],) or c.dim() == 0 for c in columns):
        columns = [c.reshape(1, -1).expand(x.shape[0], -1) for c in columns]  # circuit ignores the inputs
    return torch.cat([c.reshape(x.shape[0], -1) for c in columns], dim=1)


def check(qfunc, n, weight_shapes, batch=3, dtype="complex128", seed=0, grads=True, **options):
    """Outputs and gradients (inputs and weights) of the statevector layer equal default.qubit."""
    torch.manual_seed(seed)
    layer = QuantumLayer(qfunc, n, weight_shapes, backend="statevector", dtype=dtype, **options).double()
    x = torch.rand(batch, n, dtype=torch.float64, requires_grad=True)
    weights = {k: getattr(layer, k) for k in weight_shapes}
    got = layer(x)
    ref_w = {k: w.detach().clone().requires_grad_() for k, w in weights.items()}
    ref_x = x.detach().clone().requires_grad_()
    want = reference(qfunc, n, ref_x, ref_w)
    tol = TOL[dtype]
    torch.testing.assert_close(got, want, rtol=0, atol=tol)
    if grads and got.requires_grad:
        cot = torch.linspace(0.3, 1.7, got.numel(), dtype=torch.float64).reshape(got.shape)
        g = torch.autograd.grad((got * cot).sum(), [x, *weights.values()], allow_unused=True)
        r = torch.autograd.grad((want * cot).sum(), [ref_x, *ref_w.values()], allow_unused=True)
        for a, b in zip(g, r, strict=True):
            if b is None:
                assert a is None or a.abs().max() < tol
            else:
                torch.testing.assert_close(a, b, rtol=0, atol=tol * 10)
    return got


def _unitary(k, seed):
    rng = np.random.default_rng(seed)
    q, r = np.linalg.qr(rng.normal(size=(2**k, 2**k)) + 1j * rng.normal(size=(2**k, 2**k)))
    return torch.tensor(q * (np.diag(r) / abs(np.diag(r))), dtype=torch.complex128)


# (gate factory taking (angles from inputs [..., j], weight scalars), wires) ------------------
GATES = {
    "RX": lambda a, w: qml.RX(a(0) * w[0], wires=0),
    "RY": lambda a, w: qml.RY(a(1) + w[0], wires=2),
    "RZ": lambda a, w: qml.RZ(a(0) - w[1], wires=1),
    "Rot": lambda a, w: qml.Rot(a(0), w[0], a(2) * w[1], wires=1),
    "PhaseShift": lambda a, w: qml.PhaseShift(a(1) * w[0], wires=0),
    "U1": lambda a, w: qml.U1(a(2) + w[1], wires=2),
    "U2": lambda a, w: qml.U2(a(0), w[0], wires=1),
    "U3": lambda a, w: qml.U3(a(0), w[0], a(1), wires=0),
    "CRX": lambda a, w: qml.CRX(a(0) * w[0], wires=[0, 2]),
    "CRY": lambda a, w: qml.CRY(a(1) * w[1], wires=[2, 1]),
    "CRZ": lambda a, w: qml.CRZ(a(2) + w[0], wires=[1, 0]),
    "CRot": lambda a, w: qml.CRot(a(0), w[0], w[1], wires=[0, 1]),
    "ControlledPhaseShift": lambda a, w: qml.ControlledPhaseShift(a(1) * w[0], wires=[2, 0]),
    "IsingXX": lambda a, w: qml.IsingXX(a(0) * w[0], wires=[0, 1]),
    "IsingYY": lambda a, w: qml.IsingYY(a(1) * w[1], wires=[1, 2]),
    "IsingZZ": lambda a, w: qml.IsingZZ(a(2) * w[0], wires=[0, 2]),
    "IsingXY": lambda a, w: qml.IsingXY(w[0] * 1.7, wires=[2, 0]),  # default.qubit fails broadcast IsingXY
    "MultiRZ": lambda a, w: qml.MultiRZ(a(0) * w[1], wires=[0, 1, 2]),
    "PauliRot": lambda a, w: qml.PauliRot(a(1) * w[0], "XYZ", wires=[0, 1, 2]),
    "SingleExcitation": lambda a, w: qml.SingleExcitation(a(0) * w[0], wires=[0, 1]),
    "DoubleExcitation": lambda a, w: qml.DoubleExcitation(a(1) * w[0], wires=[0, 1, 2, 3]),
    "OrbitalRotation": lambda a, w: qml.OrbitalRotation(a(2) * w[1], wires=[0, 1, 2, 3]),
    "GlobalPhase": lambda a, w: qml.GlobalPhase(a(0) * w[0]),
    "Hadamard": lambda a, w: qml.Hadamard(wires=1),
    "PauliX": lambda a, w: qml.PauliX(wires=2),
    "PauliY": lambda a, w: qml.PauliY(wires=0),
    "PauliZ": lambda a, w: qml.PauliZ(wires=1),
    "S": lambda a, w: qml.S(wires=0),
    "T": lambda a, w: qml.T(wires=2),
    "SX": lambda a, w: qml.SX(wires=1),
    "CNOT": lambda a, w: qml.CNOT(wires=[2, 0]),
    "CZ": lambda a, w: qml.CZ(wires=[0, 1]),
    "CY": lambda a, w: qml.CY(wires=[1, 2]),
    "SWAP": lambda a, w: qml.SWAP(wires=[0, 2]),
    "ISWAP": lambda a, w: qml.ISWAP(wires=[1, 0]),
    "Toffoli": lambda a, w: qml.Toffoli(wires=[2, 0, 1]),
    "CSWAP": lambda a, w: qml.CSWAP(wires=[1, 0, 2]),
    "CCZ": lambda a, w: qml.CCZ(wires=[0, 1, 2]),
    "MultiControlledX": lambda a, w: qml.MultiControlledX(wires=[0, 2, 1], control_values=[1, 0]),
    "QubitUnitary": lambda a, w: qml.QubitUnitary(_unitary(2, 3), wires=[2, 1]),
    "DiagonalQubitUnitary": lambda a, w: qml.DiagonalQubitUnitary(
        torch.exp(1j * torch.tensor([0.1, 0.7, -0.4, 2.0], dtype=torch.float64)), wires=[1, 2]
    ),
    "adjoint(Rot)": lambda a, w: qml.adjoint(qml.Rot(a(0), w[0], w[1], wires=2)),
    "ctrl(RY)": lambda a, w: qml.ctrl(qml.RY(a(1) * w[0], wires=2), control=[0, 1], control_values=[1, 0]),
    "Identity": lambda a, w: qml.Identity(wires=0),
}


def gate_circuit(name, n):
    def circuit(inputs, weights):
        for i in range(n):
            qml.Hadamard(wires=i)
            qml.RY(0.3 * (i + 1) + inputs[..., i], wires=i)
        qml.CNOT(wires=[0, 1])
        GATES[name](lambda j: inputs[..., j], weights)
        qml.RX(weights[1], wires=0)
        return (
            qml.expval(qml.PauliZ(0)),
            qml.expval(qml.PauliX(1) @ qml.PauliY(2)),
            qml.probs(wires=[2, 0]),
        )

    return circuit


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("name", sorted(GATES))
def test_every_gate_matches_default_qubit(name, dtype):
    n = 4 if name in ("DoubleExcitation", "OrbitalRotation") else 3
    check(gate_circuit(name, n), n, {"weights": 2}, dtype=dtype, seed=hash(name) % 100)


TEMPLATES = {
    "AngleEmbedding-X": lambda x, w, n: qml.AngleEmbedding(x, wires=range(n), rotation="X"),
    "AngleEmbedding-Y": lambda x, w, n: qml.AngleEmbedding(x, wires=range(n), rotation="Y"),
    "AngleEmbedding-Z": lambda x, w, n: [qml.Hadamard(i) for i in range(n)] + [qml.AngleEmbedding(x, range(n), "Z")],
    "AngleEmbedding-partial": lambda x, w, n: qml.AngleEmbedding(x[..., :2], wires=range(2)),
    "AmplitudeEmbedding": lambda x, w, n: qml.AmplitudeEmbedding(x, wires=range(2), pad_with=0.3, normalize=True),
    "IQPEmbedding": lambda x, w, n: qml.IQPEmbedding(x, wires=range(n), n_repeats=2),
    "QAOAEmbedding": lambda x, w, n: qml.QAOAEmbedding(x, w[: 4 * n].reshape(2, 2 * n), wires=range(n)),
    "BasicEntanglerLayers": lambda x, w, n: qml.BasicEntanglerLayers(w[:6].reshape(2, n), wires=range(n)),
    "BasicEntanglerLayers-RY": lambda x, w, n: qml.BasicEntanglerLayers(w[:6].reshape(2, n), range(n), qml.RY),
    "StronglyEntanglingLayers": lambda x, w, n: qml.StronglyEntanglingLayers(w[:18].reshape(2, n, 3), range(n)),
    "StronglyEntanglingLayers-CZ-ranges": lambda x, w, n: qml.StronglyEntanglingLayers(
        w[:18].reshape(2, n, 3), wires=range(n), ranges=[2, 1], imprimitive=qml.CZ
    ),
    "SimplifiedTwoDesign": lambda x, w, n: qml.SimplifiedTwoDesign(
        w[:n], w[n : n + 2 * (n - 1) * 2].reshape(2, n - 1, 2), range(n)
    ),
    "RandomLayers": lambda x, w, n: qml.RandomLayers(w[:6].reshape(2, 3), wires=range(n), seed=7),
    "BasisEmbedding": lambda x, w, n: qml.BasisEmbedding([1, 0, 1], wires=range(n)),
}


def template_circuit(name, n):
    def circuit(inputs, weights):
        if name == "BasisEmbedding":
            qml.RZ(inputs[..., 0], wires=0)
        if "Embedding" not in name:
            qml.AngleEmbedding(inputs, wires=range(n))
        TEMPLATES[name](inputs, weights, n)
        if "Embedding" in name:
            qml.StronglyEntanglingLayers(weights[: n * 3].reshape(1, n, 3), wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)] + [qml.expval(qml.PauliX(0) @ qml.PauliX(n - 1))]

    return circuit


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_templates_match_default_qubit(name):
    n = 4 if name == "AmplitudeEmbedding" else 3
    grads = name != "AmplitudeEmbedding"  # normalisation: PennyLane's own gradient is checked below
    check(
        template_circuit(name, n if name != "AmplitudeEmbedding" else 2),
        n if name != "AmplitudeEmbedding" else 2,
        {"weights": 24},
        grads=grads,
    )


def observables_circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(3))
    qml.StronglyEntanglingLayers(weights, wires=range(3))
    herm = torch.tensor([[2.0, 1 - 1j], [1 + 1j, -0.5]], dtype=torch.complex128)
    herm2 = torch.tensor(np.kron([[1, 2], [2, -1]], [[0.5, 0], [0, 3]]), dtype=torch.complex128)
    return (
        qml.expval(qml.PauliY(1)),
        qml.expval(qml.Identity(0)),
        qml.expval(qml.PauliZ(0) @ qml.PauliZ(2)),
        qml.expval(0.7 * qml.PauliX(0) @ qml.PauliZ(1) - 1.3 * qml.PauliY(2) + 0.2 * qml.Identity(1)),
        qml.expval(qml.Hamiltonian([0.5, -0.25], [qml.PauliZ(0), qml.PauliZ(1) @ qml.PauliZ(2)])),
        qml.expval(qml.Hermitian(herm, wires=2)),
        qml.expval(qml.Hermitian(herm2, wires=[2, 0])),
        qml.expval(qml.Projector([1, 0], wires=[0, 1])),
        qml.var(qml.PauliX(1)),
        qml.var(qml.PauliZ(0) + 0.5 * qml.PauliX(2)),
        qml.var(qml.Hermitian(herm, wires=0)),
        qml.probs(wires=[1]),
        qml.probs(wires=[2, 0]),
        qml.probs(),
        qml.probs(op=qml.PauliX(1)),
    )


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_observables_match_default_qubit(dtype):
    check(observables_circuit, 3, {"weights": (2, 3, 3)}, batch=4, dtype=dtype)


def test_state_and_density_matrix_match_default_qubit():
    def state_circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        qml.StronglyEntanglingLayers(weights, wires=range(3))
        return qml.state()

    def rdm_circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        qml.StronglyEntanglingLayers(weights, wires=range(3))
        return qml.density_matrix(wires=[2, 0])

    torch.manual_seed(0)
    x = torch.rand(4, 3, dtype=torch.float64)
    w = torch.rand(2, 3, 3, dtype=torch.float64)
    backend = backends.get("statevector")
    for circuit in (state_circuit, rdm_circuit):
        tape = qml.tape.make_qscript(circuit)(x, weights=w)
        (got,) = backend.execute([tape], ExecutionConfig(wires=(0, 1, 2))).results
        want = qml.QNode(circuit, qml.device("default.qubit", wires=3), interface="torch")(x, weights=w)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("batch", [1, 7, 70])
def test_fused_and_unfused_paths_agree_with_default_qubit(batch):
    """Batch 70 >= 2 * 2^5 makes the trainable block one unitary; 7 applies it gate by gate (above 4 qubits
    the batch decides)."""
    n = 5

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        qml.IsingZZ(weights[0, 0, 0], wires=[0, 3])
        qml.CRX(weights[0, 1, 1], wires=[1, 2])
        qml.AngleEmbedding(inputs, wires=range(n), rotation="Y")  # data re-uploading: batched again
        qml.BasicEntanglerLayers(weights[:, :, 0], wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    check(circuit, n, {"weights": (2, n, 3)}, batch=batch)
    layer = QuantumLayer(circuit, n, {"weights": (2, n, 3)}, backend="statevector")
    layer(torch.rand(batch, n))
    plans = list(layer.resolved_backend._plans.values())
    assert (plans[-1][0].fused_runs > 0) == (batch >= 64)


@pytest.mark.parametrize(
    ("n", "template", "layers"), [(2, "basic", 6), (3, "sel", 5), (4, "basic", 3), (4, "sel", 3), (4, "subset", 4)]
)
def test_repeated_layers_fused_at_once_agree_with_default_qubit(n, template, layers):
    """Up to 4 qubits a trainable block is one unitary at any batch; L repeated layers (rotations then
    constant entanglers) are built in one pass and multiplied as one matrix chain: values and gradients unchanged."""
    shape = {"basic": (layers, n), "subset": (layers, 2)}.get(template, (layers, n, 3))

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        if template == "basic":
            qml.BasicEntanglerLayers(weights, wires=range(n), rotation=qml.RY)
        elif template == "subset":  # rotations on wires 3 and 1 only: identity entries on 0 and 2
            qml.BasicEntanglerLayers(weights, wires=[3, 1])
        else:
            qml.StronglyEntanglingLayers(weights, wires=range(n), ranges=[1] * layers, imprimitive=qml.CZ)
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    used = []
    original = Plan._fused_layers

    def spy(self, *args):
        used.append(args[2])
        return original(self, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Plan, "_fused_layers", spy)
        check(circuit, n, {"weights": shape}, batch=3)
    assert used and used[0][1] >= 2  # (constant head, layer length): the layered path ran


@pytest.mark.parametrize(("n", "batch"), [(2, 3), (6, 4)])
def test_second_derivatives_match_default_qubit(n, batch):
    """Hessians (double backward through the product state, fused layers, permutations and probabilities)
    equal default.qubit's: every custom autograd step has a differentiable backward."""
    torch.manual_seed(1)
    x = torch.rand(batch, n, dtype=torch.float64)
    w0 = torch.rand(2, n, 3, dtype=torch.float64)

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    layer = QuantumLayer(circuit, n, {"weights": w0.shape}).double()
    qnode = qml.QNode(circuit, qml.device("default.qubit", wires=n), interface="torch", diff_method="backprop")
    cot = torch.linspace(0.3, 1.7, batch * n, dtype=torch.float64).reshape(batch, n)

    def ours(w):
        return (torch.func.functional_call(layer, {"weights": w}, (x,)) * cot).sum()

    def theirs(w):
        return (torch.stack(qnode(x, w), dim=1) * cot).sum()

    got = torch.autograd.functional.hessian(ours, w0)
    want = torch.autograd.functional.hessian(theirs, w0)
    assert got.abs().max() > 1e-3  # a Hessian that is not trivially zero
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)


@pytest.mark.parametrize("n", [1, 2, 6, 9, 10])
def test_register_sizes(n):
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)] + [qml.expval(qml.PauliX(0))]

    check(circuit, n, {"weights": (2, n, 3)}, batch=3)


POOL = ["RX", "RY", "RZ", "CNOT", "CZ", "Hadamard", "CRX", "IsingZZ", "SWAP", "Rot", "S", "Toffoli", "PhaseShift"]


@st.composite
def random_circuits(draw):
    n = draw(st.integers(min_value=3, max_value=5))
    ops = []
    for _ in range(draw(st.integers(min_value=1, max_value=14))):
        name = draw(st.sampled_from(POOL))
        arity = getattr(qml, name).num_wires
        wires = draw(st.permutations(range(n)))[:arity]
        source = draw(st.sampled_from(["input", "weight", "both"]))
        ops.append((name, tuple(wires), source, draw(st.integers(0, n - 1)), draw(st.integers(0, 5))))
    return n, ops


@settings(max_examples=40, deadline=None)
@given(random_circuits(), st.sampled_from([2, 5]))
def test_random_circuits_match_default_qubit(spec, batch):
    n, ops = spec

    def circuit(inputs, weights):
        for name, wires, source, i, j in ops:
            gate = getattr(qml, name)
            if gate.num_params == 0:
                gate(wires=list(wires))
                continue
            angle = {"input": inputs[..., i], "weight": weights[j], "both": inputs[..., i] * weights[j]}[source]
            gate(*([angle] * gate.num_params), wires=list(wires))
        return qml.expval(qml.PauliZ(0) @ qml.PauliX(n - 1)), qml.probs(wires=[1, 0])

    check(circuit, n, {"weights": 6}, batch=batch)


# -- shots, memory, errors, devices ------------------------------------------------------------


def expval_circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(3))
    qml.StronglyEntanglingLayers(weights, wires=range(3))
    return [qml.expval(qml.PauliZ(i)) for i in range(3)] + [qml.var(qml.PauliX(0)), qml.probs(wires=[1])]


def test_shots_are_seeded_and_close_to_exact():
    torch.manual_seed(1)
    x = torch.rand(4, 3, dtype=torch.float64)
    exact = QuantumLayer(expval_circuit, 3, {"weights": (2, 3, 3)}, backend="statevector").double()

    def sampled(seed, shots=20000):
        layer = QuantumLayer(expval_circuit, 3, {"weights": (2, 3, 3)}, backend="statevector", seed=seed, shots=shots)
        layer.load_state_dict(exact.state_dict())
        with torch.no_grad():
            return layer.double()(x)

    a, b, c = sampled(3), sampled(3), sampled(4)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert (a - exact(x)).abs().max() < 0.05


def test_shots_refuse_autograd_gradients():
    """Sampled values have no autograd gradient: backprop/adjoint with shots is refused (parameter-shift works:
    tests/quantum/test_sampling.py)."""
    layer = QuantumLayer(
        expval_circuit, 3, {"weights": (2, 3, 3)}, backend="statevector", shots=100, diff_method="backprop"
    )
    with pytest.raises(ConfigError, match="no autograd gradient"):
        layer(torch.rand(2, 3))


def test_memory_guard_refuses_before_allocating():
    layer = QuantumLayer(expval_circuit, 3, {"weights": (2, 3, 3)}, backend="statevector", max_memory=1000)
    with pytest.raises(ResourceLimitError, match=r"max_memory=.*complex64"):
        layer(torch.rand(64, 3))


def test_unsupported_operation_names_it_and_a_backend():
    def noisy(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.DepolarizingChannel(0.1, wires=0)
        return qml.expval(qml.PauliZ(0))

    layer = QuantumLayer(noisy, 2, {"weights": 1}, backend="statevector")
    with pytest.raises(UnsupportedOperationError, match="DepolarizingChannel.*default.mixed"):
        layer(torch.rand(2, 2))

    def sampler(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        return qml.sample(wires=0)

    tape = qml.tape.make_qscript(sampler, shots=10)(torch.rand(2, 2), weights=None)
    with pytest.raises(UnsupportedOperationError, match="SampleMP"):
        backends.get("statevector").execute([tape], ExecutionConfig(wires=(0, 1)))


def test_device_targets(monkeypatch):
    assert backends.get("statevector:cpu").torch_device == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(BackendUnavailableError, match="CUDA is not available"):
        backends.get("statevector:cuda")
    with pytest.raises(ConfigError, match="dtype='complex32'"):
        backends.get("statevector", dtype="complex32")


def test_complex64_computes_in_single_precision_and_layer_keeps_input_dtype():
    backend = backends.get("statevector", dtype="complex64")
    x = torch.rand(2, 3, dtype=torch.float64)
    tape = qml.tape.make_qscript(expval_circuit)(x, weights=torch.rand(2, 3, 3, dtype=torch.float64))
    assert backend.capabilities.dtype == "complex64"
    results = backend.execute([tape], ExecutionConfig(wires=(0, 1, 2))).results[0]
    assert all(r.dtype == torch.float32 for r in results)
    layer = QuantumLayer(expval_circuit, 3, {"weights": (2, 3, 3)}, backend="statevector", dtype="complex64")
    assert layer(x).dtype == torch.float64


def test_default_backend_of_quantum_layer_is_statevector():
    layer = QuantumLayer(expval_circuit, 3, {"weights": (2, 3, 3)})
    assert layer.backend == "statevector"
    assert layer.resolved_backend.capabilities.diff_methods == ("best", "backprop", "adjoint", "parameter-shift")
    assert math.isclose(layer(torch.zeros(1, 3))[0, 0].item(), layer(torch.zeros(3))[0].item(), abs_tol=1e-7)


def test_constant_gates_with_hyperparameters_that_print_alike_are_told_apart():
    """The cache of parameter-free gates is keyed by exact hyperparameters, never by their printed text."""
    import numpy as np
    import pennylane as qml

    from hybridai.quantum.statevector.gates import constant_gate

    class Angle:
        def __init__(self, value):
            self.value = value

        def __repr__(self):
            return "Angle"  # every angle prints alike

    class Phase(qml.operation.Operation):
        num_wires = 1
        num_params = 0

        def __init__(self, angle, wires):
            super().__init__(wires=wires)
            self.hyperparameters["angle"] = angle

        @staticmethod
        def compute_matrix(angle):
            return np.diag([1.0, np.exp(1j * angle.value)])

    for value in (0.5, 0.7, 1.9):
        kind, (_, phases) = constant_gate(Phase(Angle(value), wires=0))
        assert kind == "mono" and abs(phases[1] - np.exp(1j * value)) < 1e-15
