"""PennyLane noise channels on ``density``: values and gradients (weights, inputs AND rates, twice too) equal
``default.mixed``; ``qml.noise`` models; rates outside PennyLane's ranges refused; channels routed on fake devices as
Aer runs the same Kraus maps; every refusal that names another backend is followed and runs."""

import re

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridai import QuantumLayer, backends
from hybridai.core.errors import ConfigError, UnsupportedOperationError
from hybridai.core.execution import ExecutionConfig
from hybridai.quantum.pennylane.working_dtype import working_dtype

pytestmark = pytest.mark.numerics
TOL = 1e-10
GATES = ("RX", "RY", "RZ", "Hadamard", "CNOT", "IsingZZ", "CRY")
# ThermalRelaxationError is checked against Aer (test_thermal_relaxation_...): PennyLane's Kraus maps for it add
# machine epsilon to their eigenvalues (1e-8 off) and take no gradient of their times through torch.
CHANNELS = ("BitFlip", "PhaseFlip", "DepolarizingChannel", "AmplitudeDamping", "GeneralizedAmplitudeDamping",
            "PhaseDamping", "ResetError", "PauliError", "QubitChannel")  # fmt: skip


def sigmoid(v):
    return 1 / (1 + qml.math.exp(-v))


def _rate(source: int, x, w, j: int, scale: float):
    """A rate in [0, scale]: a constant, a function of a weight, or one per sample (a function of the inputs)."""
    if source == 0:
        return scale * (0.2 + 0.05 * j % 0.7)
    if source == 1:
        return scale * sigmoid(w[j % len(w)])
    return scale * sigmoid(x[..., j % x.shape[-1]])


def random_circuit(seed: int, n: int, depth: int = 10):
    """``circuit(x, w)``: random gates (angles of inputs, weights, constants) with every channel after some of them,
    each channel's rates constant, trained or per sample; a Pauli word and a probability measured."""
    rng = np.random.default_rng(seed)
    plan = []
    for j in range(depth):
        gate = GATES[rng.integers(len(GATES))] if n > 1 else GATES[rng.integers(4)]
        wires = [int(v) for v in rng.permutation(n)[: 2 if gate in ("CNOT", "IsingZZ", "CRY") else 1]]
        channel = CHANNELS[rng.integers(len(CHANNELS))]
        k = 2 if channel in ("PauliError", "QubitChannel") and n > 1 and rng.random() < 0.5 else 1
        plan.append((gate, wires, int(rng.integers(3)), channel, [int(v) for v in rng.permutation(n)[:k]],
                     int(rng.integers(3)), "".join(rng.choice(list("XYZI"), k)), j))  # fmt: skip
    kraus = []
    for k in (1, 2):
        q, _ = np.linalg.qr(rng.normal(size=(2 * 2**k, 2**k)) + 1j * rng.normal(size=(2 * 2**k, 2**k)))
        kraus.append([q[: 2**k], q[2**k :]])  # an isometry's blocks: a complete set of Kraus maps
    letters = [(qml.PauliX, qml.PauliY, qml.PauliZ)[rng.integers(3)](int(q)) for q in range(n)]

    def circuit(x, w):
        qml.RX(x[..., 0], wires=0)  # always broadcast
        for gate, wires, source, channel, cwires, rsource, word, j in plan:
            op = getattr(qml, gate)
            if gate in ("Hadamard", "CNOT"):
                op(wires=wires)
            else:
                angle = x[..., j % x.shape[-1]] if source == 0 else w[j % len(w)] if source == 1 else 0.3 + j
                op(angle, wires=wires)
            if channel == "QubitChannel":
                qml.QubitChannel(kraus[len(cwires) - 1], wires=cwires)
            elif channel == "PauliError":  # one rate for all rows: PennyLane checks it when the operation is made
                qml.PauliError(word if set(word) != {"I"} else "Z" * len(word), _rate(min(rsource, 1), x, w, j, 0.4),
                               wires=cwires)  # fmt: skip
            elif channel == "GeneralizedAmplitudeDamping":
                qml.GeneralizedAmplitudeDamping(_rate(rsource, x, w, j, 0.5), _rate(2 - rsource, x, w, j + 1, 1.0),
                                                wires=cwires)  # fmt: skip
            elif channel == "ResetError":
                qml.ResetError(_rate(rsource, x, w, j, 0.4), _rate(2 - rsource, x, w, j + 1, 0.5), wires=cwires)
            else:
                getattr(qml, channel)(_rate(rsource, x, w, j, 0.8), wires=cwires)
        return [qml.expval(qml.prod(*letters) if n > 1 else letters[0]), qml.probs(wires=[0])]

    return circuit


def _flat(result, rows: int) -> torch.Tensor:
    parts = result if isinstance(result, tuple | list) else (result,)
    return torch.cat([torch.as_tensor(p).reshape(rows, -1) for p in parts], -1)


def density_values(circuit, x, w, n: int, backend: str = "density") -> torch.Tensor:
    tape = qml.tape.make_qscript(circuit)(x, w)
    result = backends.get(backend).execute([tape], ExecutionConfig(tuple(range(n)))).results[0]
    return _flat(result, x.shape[0])


def _float64(op):
    """``op`` with every parameter a float64 (complex128) torch tensor (default.mixed's torch path makes numbers into
    tensors of torch's default dtype, float32: 1e-8 off)."""
    from pennylane.ops.functions import bind_new_parameters

    def exact(p):
        if torch.is_tensor(p):
            return p.to(torch.complex128 if p.is_complex() else torch.float64)
        a = np.asarray(p)
        return torch.as_tensor(a, dtype=torch.complex128 if np.iscomplexobj(a) else torch.float64)

    return bind_new_parameters(op, [exact(p) for p in op.data]) if op.data else op


def _hermitian(mp) -> list:
    """A measurement as expectations of Hermitian matrices (default.mixed's backprop gradients of Pauli observables
    and probabilities are NaN after an entangling gate, PennyLane 0.45): the observable's matrix, or the projectors
    onto each basis state of the measured wires."""
    if isinstance(mp, qml.measurements.ExpectationMP):
        return [qml.expval(qml.Hermitian(qml.matrix(mp.obs, wire_order=mp.obs.wires), wires=mp.obs.wires))]
    assert isinstance(mp, qml.measurements.ProbabilityMP)
    d = 2 ** len(mp.wires)
    return [qml.expval(qml.Hermitian(np.diag(np.eye(d)[i]), wires=mp.wires)) for i in range(d)]


def mixed_values(circuit, x, w, n: int) -> torch.Tensor:
    """``default.mixed`` (backprop, differentiable), one sample at a time (its channels take one rate)."""
    device = qml.device("default.mixed", wires=n)
    rows = []
    for b in range(x.shape[0]):
        tape = qml.tape.make_qscript(circuit)(x[b], w)
        measured = [h for m in tape.measurements for h in _hermitian(m)]
        tape = qml.tape.QuantumScript([_float64(op) for op in tape.operations], measured)
        with working_dtype(torch.float64):  # the constants default.mixed makes (RZ's phases): float64, not float32
            rows.append(_flat(qml.execute([tape], device, diff_method="backprop")[0], 1))
    return torch.cat(rows)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 5))
def test_random_channels_equal_default_mixed_in_values_and_gradients_of_weights_inputs_and_rates(seed, n):
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.uniform(-2, 2, (2, 3)), requires_grad=True)
    w = torch.tensor(rng.uniform(-2, 2, 4), requires_grad=True)
    circuit = random_circuit(seed, n)
    ours, theirs = density_values(circuit, x, w, n), mixed_values(circuit, x, w, n)
    assert torch.allclose(ours, theirs, atol=TOL, rtol=0)
    probe = torch.tensor(rng.normal(size=ours.shape))
    grads = torch.autograd.grad((ours * probe).sum(), (x, w), allow_unused=True, materialize_grads=True)
    expected = torch.autograd.grad((theirs * probe).sum(), (x, w), allow_unused=True, materialize_grads=True)
    for got, want in zip(grads, expected, strict=True):
        assert torch.allclose(got, want, atol=TOL, rtol=0)


@pytest.mark.parametrize(("operators", "wires"), [("Y", [1]), ("XZ", [2, 0]), ("IY", [0, 1]), ("ZYX", [1, 2, 0])])
def test_pauli_errors_equal_default_mixed_in_values_and_rate_gradients(operators, wires):
    def tape_at(p, angle):
        ops = [qml.RX(angle, wires=0), qml.RY(1.2, wires=1), qml.CNOT([0, 1]), qml.Hadamard(2), qml.CRY(0.7, [2, 1]),
               qml.PauliError(operators, p, wires=wires), qml.RZ(0.3, wires=0), qml.Hadamard(1)]  # fmt: skip
        measured = [qml.expval(qml.PauliY(0) @ qml.PauliX(1) @ qml.PauliZ(2)), qml.probs(wires=[0, 2])]
        return qml.tape.QuantumScript(ops, measured)

    def mixed(p, angle=0.4):
        return _flat(qml.execute([tape_at(p, angle)], qml.device("default.mixed", wires=3))[0], 1)[0].numpy()

    rate = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    angle = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    got = _flat(backends.get("density").execute([tape_at(rate, angle)], ExecutionConfig((0, 1, 2))).results[0], 1)[0]
    assert np.allclose(got.detach().numpy(), mixed(0.3), atol=TOL, rtol=0)
    gradients = torch.stack([torch.stack(torch.autograd.grad(v, (rate, angle), retain_graph=True)) for v in got])
    h = 1e-3  # every value is affine in the rate: its central difference is exact
    assert np.allclose(gradients[:, 0].numpy(), (mixed(0.3 + h) - mixed(0.3 - h)) / (2 * h), atol=TOL, rtol=0)
    shift = np.pi / 2  # and a trigonometric polynomial of degree 1 in the angle: the shift rule is exact
    assert np.allclose(gradients[:, 1].numpy(), (mixed(0.3, 0.4 + shift) - mixed(0.3, 0.4 - shift)) / 2, atol=TOL,
                       rtol=0)  # fmt: skip


@pytest.mark.parametrize("t2", [60.0, 150.0])
def test_thermal_relaxation_equals_aers_channel_of_the_same_times(t2):
    """Aer's ``thermal_relaxation_error`` is the oracle (PennyLane's Kraus maps add machine epsilon to eigenvalues:
    1e-8 off); gradients of every rate equal finite differences."""
    from qiskit.quantum_info import SuperOp
    from qiskit_aer.noise import thermal_relaxation_error

    from hybridai.quantum.density import pennylane_channels
    from hybridai.quantum.density.channels import ptm_of_superop
    from hybridai.quantum.qiskit_frontend.channels import spec_of

    pe, t1, tq = 0.2, 100.0, 30.0
    spec, rates = spec_of(qml.ThermalRelaxationError(pe, t1, t2, tq, wires=0), 0)
    ours = pennylane_channels.ptm(spec, [r.reshape(1) for r in rates])[..., 0].numpy()
    aer = ptm_of_superop(np.asarray(SuperOp(thermal_relaxation_error(t1, t2, tq, pe)).data))
    assert np.abs(ours - aer).max() < TOL
    pennylane = pennylane_channels.kraus_ptm(qml.ThermalRelaxationError(pe, t1, t2, tq, wires=0).kraus_matrices())
    assert np.abs(ours - pennylane).max() < 1e-7
    inputs = tuple(torch.tensor([v], dtype=torch.float64, requires_grad=True) for v in (pe, t1, t2, tq))
    assert torch.autograd.gradcheck(lambda *r: pennylane_channels.ptm(spec, list(r)), inputs)
    assert torch.autograd.gradgradcheck(lambda *r: pennylane_channels.ptm(spec, list(r)), inputs)


@pytest.mark.parametrize("wires", [[0], [1, 0], [0, 1]])
def test_qubit_channels_equal_default_mixed_in_values_and_gradients_without_torch(wires):
    """Complex Kraus maps on one or two wires (in either order): values, and the gradient of a gate angle before
    the channel against default.mixed's central differences (numpy, so every digit of the Kraus maps is kept)."""
    rng = np.random.default_rng(5 + len(wires))
    d = 2 ** len(wires)
    q, _ = np.linalg.qr(rng.normal(size=(3 * d, d)) + 1j * rng.normal(size=(3 * d, d)))
    kraus = [q[:d], q[d : 2 * d], q[2 * d :]]

    def tape_at(angle):
        ops = [qml.RX(angle, wires=0), qml.RY(1.2, wires=1), qml.CNOT([0, 1]), qml.QubitChannel(kraus, wires=wires),
               qml.RZ(0.3, wires=0), qml.Hadamard(1)]  # fmt: skip
        measured = [qml.expval(qml.PauliY(0) @ qml.PauliX(1)), qml.expval(qml.PauliY(1)), qml.probs(wires=[0, 1])]
        return qml.tape.QuantumScript(ops, measured)

    def mixed(angle):
        results = qml.execute([tape_at(angle)], qml.device("default.mixed", wires=2))[0]
        return np.concatenate([np.ravel(r) for r in results])

    angle = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    got = _flat(backends.get("density").execute([tape_at(angle)], ExecutionConfig((0, 1))).results[0], 1)[0]
    assert np.allclose(got.detach().numpy(), mixed(0.4), atol=TOL, rtol=0)
    (gradient,) = torch.autograd.grad(got[0], angle)
    h = 1e-5
    assert abs(gradient.item() - (mixed(0.4 + h)[0] - mixed(0.4 - h)[0]) / (2 * h)) < 1e-8


def test_second_derivatives_through_rates_equal_default_mixed():
    circuit = random_circuit(7, 2, depth=8)
    x = torch.tensor([[0.3, -0.7, 1.1], [0.9, 0.2, -0.4]], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([0.4, -0.3, 0.8, 0.1], dtype=torch.float64, requires_grad=True)
    hessians = []
    for values in (density_values, mixed_values):
        out = values(circuit, x, w, 2)
        (gw,) = torch.autograd.grad(out[:, 0].sum(), (w,), create_graph=True)
        hessians.append(torch.stack([torch.autograd.grad(g, w, retain_graph=True)[0] for g in gw]))
    assert hessians[0].abs().max() > 1e-3  # the second derivatives are not trivially zero
    assert torch.allclose(hessians[0], hessians[1], atol=TOL, rtol=0)


def test_a_damping_rate_fitted_by_gradient_through_density():
    """PennyLane's noisy-circuits demo: a damping rate learned from a target expectation."""
    target = torch.tensor(0.2, dtype=torch.float64)  # <Z> after X then damping gamma: 2 gamma - 1 -> gamma = 0.6

    def circuit(x, w):
        qml.PauliX(0)
        qml.AmplitudeDamping(torch.sigmoid(w[0]), wires=0)
        return qml.expval(qml.PauliZ(0))

    layer = QuantumLayer(circuit, n_qubits=1, weight_shapes={"w": 1}, n_inputs=1, backend="density",
                         init=lambda t: torch.nn.init.zeros_(t))  # fmt: skip
    optimiser = torch.optim.Adam(layer.parameters(), lr=0.1)
    for _ in range(150):
        optimiser.zero_grad()
        loss = (layer(torch.zeros(1, 1, dtype=torch.float64)).squeeze() - target) ** 2
        loss.backward()
        optimiser.step()
    assert abs(torch.sigmoid(layer.w.detach()[0]).item() - 0.6) < 1e-3


def test_qml_noise_models_on_density_equal_the_qnode():
    dev = qml.device("default.mixed", wires=2)
    model = qml.NoiseModel({qml.noise.op_eq(qml.RX) | qml.noise.op_eq(qml.CNOT):
                            qml.noise.partial_wires(qml.AmplitudeDamping, 0.2)})  # fmt: skip

    def circuit(x, w):
        qml.RX(x[..., 0], wires=0)
        qml.CNOT([0, 1])
        qml.RY(w[0], wires=1)
        return qml.expval(qml.Z(0)), qml.expval(qml.Z(1))

    x = torch.tensor([[0.3], [1.2], [-0.5]], dtype=torch.float64)
    w = torch.tensor([0.7], dtype=torch.float64)
    init = {"w": lambda t: t.data.copy_(w)}
    noisy_qnode = qml.noise.add_noise(qml.QNode(circuit, dev), model)
    noisy_device = qml.QNode(circuit, qml.noise.insert(dev, qml.BitFlip, 0.1, position="all"))
    for qnode in (noisy_qnode, noisy_device):
        layer = QuantumLayer(qnode, n_qubits=2, weight_shapes={"w": 1}, backend="density", init=init)
        weights = layer.w.detach().double().numpy()
        expected = torch.tensor(np.array([qnode(x[b].numpy(), weights) for b in range(3)]))  # numpy: every digit
        assert torch.allclose(layer(x), expected, atol=TOL, rtol=0)
        noiseless = QuantumLayer(circuit, n_qubits=2, weight_shapes={"w": 1}, backend="density", init=init)
        assert (noiseless(x) - expected).abs().max() > 1e-2  # the noise is there


@pytest.mark.parametrize(
    ("channel", "rates", "named"),
    [
        (qml.BitFlip, (torch.tensor(1.3, dtype=torch.float64),), "p=1.3"),
        (qml.AmplitudeDamping, (torch.tensor([0.2, -0.1], dtype=torch.float64),), "gamma="),
        (qml.ResetError, (0.6, 0.6), "p_0 + p_1"),
        (qml.ThermalRelaxationError, (0.1, 100.0, 250.0, 10.0), "t2=250"),
    ],
)
def test_rates_outside_pennylanes_ranges_are_refused_by_name(channel, rates, named):
    def circuit(x, w):
        qml.RX(x[..., 0], wires=0)
        channel(*rates, wires=0)
        return qml.expval(qml.Z(0))

    with pytest.raises(ConfigError, match=re.escape(named)) as caught:
        density_values(circuit, torch.zeros(2, 1, dtype=torch.float64), torch.zeros(1), 1)
    assert channel.__name__ in str(caught.value)


def _user_model():
    from qiskit_aer.noise import NoiseModel, depolarizing_error

    model = NoiseModel(basis_gates=["rz", "sx", "x", "cx"])
    model.add_all_qubit_quantum_error(depolarizing_error(0.03, 2), ["cx"])
    model.add_all_qubit_quantum_error(depolarizing_error(0.01, 1), ["sx"])
    return model


@pytest.mark.parametrize("where", ["density:fake_manila", "density with noise_model="])
def test_channels_with_qiskit_noise_equal_aer_running_the_same_kraus_maps(where):
    """Channels together with a device's noise (routed with the gates) or a user's NoiseModel: Aer runs the same
    transpiled circuit with each place holder replaced by the channel's Kraus maps, under the same noise model."""
    from qiskit.quantum_info import Kraus, SparsePauliOp
    from qiskit_aer import AerSimulator
    from qiskit_aer.noise import NoiseModel

    from hybridai.quantum.density import converting
    from hybridai.quantum.qiskit_frontend.conversion import CHANNEL_LABEL

    def circuit(x, w):
        qml.RY(x[..., 0], wires=0)
        qml.CNOT([0, 2])
        qml.AmplitudeDamping(0.3, wires=2)
        qml.PauliError("XZ", 0.2, wires=[2, 0])
        qml.RX(w[0], wires=2)
        qml.DepolarizingChannel(0.1, wires=0)
        return qml.expval(qml.Z(0) @ qml.Z(2)), qml.expval(qml.X(2))

    x = torch.tensor([[0.4], [1.9]], dtype=torch.float64)
    w = torch.tensor([0.6], dtype=torch.float64)
    tape = qml.tape.make_qscript(circuit)(x, w)
    backend = (
        backends.get("density:fake_manila") if ":" in where else backends.get("density", noise_model=_user_model())
    )
    ours = _flat(backend.execute([tape], ExecutionConfig((0, 1, 2))).results[0], 2)
    converted = converting.converted(tape, [0, 1, 2])
    transpiled, observables = backend.transpiled(converted, False)
    channel_ops = [op for op in tape.operations if isinstance(op, qml.operation.Channel)]
    model = NoiseModel.from_backend(backend.device) if ":" in where else _user_model()
    for b in range(2):
        values = [float(p if p.dim() == 0 else p[b]) for p in converted.params]
        bound = transpiled.assign_parameters({p: values[int(p.name[6:-1])] for p in transpiled.parameters})
        real = bound.copy_empty_like()
        for instruction in bound.data:
            label = getattr(instruction.operation, "label", None) or ""
            if instruction.operation.name == "kraus" and label.startswith(CHANNEL_LABEL):
                op = channel_ops[int(label[len(CHANNEL_LABEL) :])]
                k = len(op.wires)
                kraus = [np.asarray(m).reshape((2,) * 2 * k).transpose(*reversed(range(k)),
                         *reversed(range(k, 2 * k))).reshape(2**k, 2**k) for m in op.kraus_matrices()]  # fmt: skip
                real.append(Kraus(kraus).to_instruction(), instruction.qubits)
            else:
                real.append(instruction)
        for r, obs in enumerate(observables):
            real.save_expectation_value(SparsePauliOp(obs.paulis, obs.coeffs), list(range(real.num_qubits)),
                                        label=f"o{r}")  # fmt: skip
        simulator = AerSimulator(method="density_matrix", noise_model=model)
        data = simulator.run(real, shots=None).result().data()
        aer = [float(np.real(data[f"o{r}"])) for r in range(len(observables))]
        assert np.allclose(ours[b].numpy(), aer, atol=TOL, rtol=0)


def test_constant_channels_with_shots_agree_with_the_exact_value():
    def circuit(x, w):
        qml.RY(x[..., 0], wires=0)
        qml.AmplitudeDamping(0.4, wires=0)
        qml.CNOT([0, 1])
        qml.BitFlip(0.1, wires=1)
        return qml.expval(qml.Z(1))

    x = torch.tensor([[0.4], [2.0]], dtype=torch.float64)
    w = torch.zeros(1, dtype=torch.float64)
    exact = mixed_values(circuit, x, w, 2)[:, 0]
    tape = qml.tape.make_qscript(circuit)(x, w)
    shots = 20_000
    config = ExecutionConfig((0, 1), shots=shots, seed=3)
    sampled = backends.get("density").execute([tape], config).results[0]
    error = torch.sqrt((1 - exact**2) / shots)
    assert ((sampled - exact).abs() <= 5 * error + 1e-12).all()


def test_per_sample_rates_on_default_mixed_run_one_row_at_a_time():
    def circuit(x, w):
        qml.RX(x[..., 0], wires=0)
        qml.BitFlip(0.4 * sigmoid(x[..., 1]), wires=0)
        return qml.expval(qml.Z(0))

    x = torch.tensor([[0.3, -1.0], [1.0, 2.0], [2.0, 0.0]], dtype=torch.float64)
    w = torch.zeros(1, dtype=torch.float64)
    got = density_values(circuit, x, w, 1, backend="pennylane:default.mixed")
    assert torch.allclose(got, mixed_values(circuit, x, w, 1), atol=TOL, rtol=0)


# -- every refusal that names another route is followed with the same circuit ------------------------------


def _noisy(x, w):
    qml.RX(x[..., 0], wires=0)
    qml.CNOT([0, 1])
    qml.AmplitudeDamping(0.5 * sigmoid(w[0]), wires=1)
    qml.BitFlip(0.2 * sigmoid(x[..., 1]), wires=0)
    return qml.expval(qml.Z(0) @ qml.Z(1))


def _suggested(message: str) -> list[str]:
    """The backends a refusal names."""
    return re.findall(r"'((?:density|pennylane:default\.mixed)[^']*)'", message)


@pytest.mark.parametrize("refusing", ["aer", "ibm:fake_manila", "statevector", "pennylane:default.qubit"])
def test_every_refusal_of_channels_names_backends_that_run_the_same_circuit(refusing):
    x = torch.tensor([[0.3, 0.5], [1.4, -0.2]], dtype=torch.float64)
    w = torch.tensor([0.2], dtype=torch.float64)
    init = {"w": lambda t: t.data.copy_(w)}
    with pytest.raises(UnsupportedOperationError) as caught:
        QuantumLayer(_noisy, n_qubits=2, weight_shapes={"w": 1}, backend=refusing, init=init)(x)
    suggestions = _suggested(str(caught.value))
    assert suggestions and any(s.startswith("density") for s in suggestions)
    for name in suggestions:
        layer = QuantumLayer(_noisy, n_qubits=2, weight_shapes={"w": 1}, backend=name, init=init)
        out = layer(x)
        out.sum().backward()
        assert layer.w.grad is not None and layer.w.grad.abs().sum() > 0
        if name in ("density", "pennylane:default.mixed"):  # noiseless but for the channels: default.mixed's values
            expected = mixed_values(_noisy, x, layer.w.detach().double(), 2)[:, 0]
            assert torch.allclose(out.reshape(-1), expected, atol=TOL, rtol=0)


def test_trainable_rates_with_shots_are_refused_and_the_named_route_trains_them():
    x = torch.tensor([[0.3, 0.5]], dtype=torch.float64)
    with pytest.raises(ConfigError, match="shots=None") as caught:
        layer = QuantumLayer(_noisy, n_qubits=2, weight_shapes={"w": 1}, backend="density", shots=100, seed=1)
        layer(x).sum().backward()
    assert "AmplitudeDamping" in str(caught.value)
    layer = QuantumLayer(_noisy, n_qubits=2, weight_shapes={"w": 1}, backend="density", shots=None)
    layer(x).sum().backward()
    assert layer.w.grad.abs().sum() > 0


def test_zne_on_density_removes_the_noise_of_channels_without_a_noiseless_warning():
    import warnings

    from hybridai import ZNE

    x = torch.tensor([[0.3, 0.5], [1.4, -0.2]], dtype=torch.float64)
    init = {"w": lambda t: torch.nn.init.constant_(t, 0.2)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "exact, noiseless" warning: the channels are noise
        mitigated = QuantumLayer(_noisy, n_qubits=2, weight_shapes={"w": 1}, backend="density", mitigation=ZNE(),
                                 init=init)  # fmt: skip
        ours = mitigated(x)
    peer = QuantumLayer(_noisy, n_qubits=2, weight_shapes={"w": 1}, backend="pennylane:default.mixed",
                        mitigation=ZNE(), init=init)(x)  # fmt: skip
    noisy = QuantumLayer(_noisy, n_qubits=2, weight_shapes={"w": 1}, backend="density", init=init)(x)
    assert torch.allclose(ours, peer, atol=TOL, rtol=0)  # the same folds, channels repeated as Mitiq inverts
    assert (ours - noisy).abs().max() > 1e-3

    def clean(x, w):
        qml.RX(x[..., 0], wires=0)
        return qml.expval(qml.PauliZ(0))

    layer = QuantumLayer(clean, n_qubits=1, weight_shapes={"w": 1}, backend="density", mitigation=ZNE())
    with pytest.warns(UserWarning, match="exact, noiseless 'density'"):
        layer(x)


def test_channels_follow_the_parameters_device():
    """No GPU here: torch's meta device (shapes only) shows that every tensor a run with channels makes (their
    PTMs, the rate checks) is made on the parameters' device, as on CUDA."""
    from hybridai.quantum.density.simulate import expectations, run

    x = torch.tensor([[0.3, 0.5], [1.4, -0.2]], dtype=torch.float64)
    w = torch.tensor([0.2], dtype=torch.float64)
    backend = backends.get("density")
    tape = qml.tape.make_qscript(_noisy)(x, w)
    backend.execute([tape], ExecutionConfig((0, 1)))
    (plan,) = [v for k, v in backend.frontend._made.items() if k[0] == "density"]
    values = torch.rand(8, 2, dtype=torch.float64, device="meta")  # more rows than the circuit's parameters
    state = run(plan, values, torch.device("meta"), torch.float64)
    assert expectations(plan, state).device.type == "meta"


def test_channels_in_complex64_agree_with_complex128_to_single_precision():
    x = torch.tensor([[0.3, 0.5], [1.4, -0.2]], dtype=torch.float64)
    w = torch.tensor([0.2], dtype=torch.float64)
    tape = qml.tape.make_qscript(_noisy)(x, w)
    config = ExecutionConfig((0, 1))
    single = backends.get("density", dtype="complex64").execute([tape], config).results[0]
    double = backends.get("density").execute([tape], config).results[0]
    assert single.dtype == torch.float32 and double.dtype == torch.float64
    assert torch.allclose(single.double(), double, atol=1e-5, rtol=0)
