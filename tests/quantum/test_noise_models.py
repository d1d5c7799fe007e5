"""A user's Qiskit ``NoiseModel`` means on ``density`` and ``aer`` what it means in Aer: circuits transpiled for
``AerSimulator(noise_model=m)``, errors on measure before the read (sampled), what Aer refuses refused before any job,
a warning when no error lands; caches keyed by values. Oracle: Aer itself, on the same Qiskit circuit."""

import warnings

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qiskit import QuantumCircuit, transpile
from qiskit.quantum_info import SparsePauliOp
from qiskit_aer import AerSimulator
from qiskit_aer.noise import (
    NoiseModel,
    PauliError,
    PauliLindbladError,
    QuantumError,
    ReadoutError,
    amplitude_damping_error,
    depolarizing_error,
    pauli_error,
)

from hybridai import QuantumLayer, backends
from hybridai.core.errors import BackendExecutionError, ConfigError
from hybridai.core.execution import ExecutionConfig

FAMILIES = ("aer", "density")
LEVEL, SEED = 1, 1234  # the backends' default optimization_level and seed_transpiler

# PennyLane operation -> the Qiskit method of the same gate (wire i is qubit i)
GATES = {"Hadamard": "h", "S": "s", "T": "t", "PauliX": "x", "CNOT": "cx", "CZ": "cz", "RX": "rx", "RY": "ry",
         "RZ": "rz", "IsingXX": "rxx", "IsingZZ": "rzz"}  # fmt: skip


def qiskit_circuit(ops: list, n: int) -> QuantumCircuit:
    """The Qiskit equivalent of ``ops``, each angle a ``Parameter`` (as hybridai transpiles it: once per structure)
    with its value in ``metadata["values"]``."""
    from qiskit.circuit import Parameter

    qc = QuantumCircuit(n)
    values = {}
    for op in ops:
        angles = []
        for p in op.parameters:
            angles.append(Parameter(f"a{len(values):03d}"))
            values[angles[-1]] = float(p)
        getattr(qc, GATES[op.name])(*angles, *[int(w) for w in op.wires])
    qc.metadata = {"values": values}
    return qc


def transpiled(model: NoiseModel, qc: QuantumCircuit) -> QuantumCircuit:
    """``qc`` transpiled for AerSimulator(noise_model=model) with its parameters, then bound."""
    t = transpile(qc, AerSimulator(noise_model=model), optimization_level=LEVEL, seed_transpiler=SEED)
    return t.assign_parameters({p: qc.metadata["values"][p] for p in t.parameters})


def aer_exact(model: NoiseModel, qc: QuantumCircuit, label: str) -> float:
    """<label> of ``qc`` under ``model``: Aer's density-matrix method, transpiled for AerSimulator(noise_model=...)."""
    t = transpiled(model, qc)
    obs = SparsePauliOp(label).apply_layout(t.layout)
    t.save_expectation_value(obs, list(range(t.num_qubits)))
    result = AerSimulator(noise_model=model, method="density_matrix").run(t).result()
    return float(np.real(result.data()["expectation_value"]))


def hybridai_value(family: str, ops: list, n: int, obs, **options) -> float:
    tape = qml.tape.QuantumScript(ops, [qml.expval(obs)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # only in this block: a model whose errors miss is fine here
        return float(backends.get(family, **options).execute([tape], ExecutionConfig(tuple(range(n)))).results[0])


def model_on(gates1: list[str], gates2: list[str], p1: float = 0.1, p2: float = 0.1, basis=None) -> NoiseModel:
    model = NoiseModel() if basis is None else NoiseModel(basis_gates=basis)
    if gates1:
        model.add_all_qubit_quantum_error(depolarizing_error(p1, 1), gates1)
    if gates2:
        model.add_all_qubit_quantum_error(depolarizing_error(p2, 2), gates2)
    return model


# -- 1. a user's model means what it means in Aer ------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_a_model_on_u1_u2_u3_transpiles_for_its_own_basis(family):
    """Errors on u1/u2/u3/cx: Aer transpiles RY into u1/u2/u3, which carry the error; hybridai used to keep 'ry'."""
    model = model_on(["u1", "u2", "u3"], ["cx"])
    ops = [qml.Hadamard(0), qml.RY(0.7, 1), qml.CNOT([0, 1])]
    want = aer_exact(model, qiskit_circuit(ops, 2), "ZZ")
    got = hybridai_value(family, ops, 2, qml.PauliZ(0) @ qml.PauliZ(1), noise_model=model)
    assert abs(want - float(np.cos(0.7)) * 0.9) > 0.01  # more than the CNOT's error lands in Aer
    assert got == pytest.approx(want, abs=1e-10)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_model_with_its_own_basis_gates_is_noisy_on_gates_outside_it(family):
    """NoiseModel(basis_gates=[rz, sx, x, cx]): RY and IsingXX become rz/sx/cx with errors (hybridai: noiseless)."""
    model = model_on(["rz", "sx", "x"], ["cx"], 0.05, 0.1, basis=["rz", "sx", "x", "cx"])
    ops = [qml.RY(0.4, 0), qml.IsingXX(0.7, [0, 1])]
    want = aer_exact(model, qiskit_circuit(ops, 2), "ZZ")
    noiseless = float(np.cos(0.4) * np.cos(0.7))
    got = hybridai_value(family, ops, 2, qml.PauliZ(0) @ qml.PauliZ(1), noise_model=model)
    assert abs(want - noiseless) > 0.05
    assert got == pytest.approx(want, abs=1e-10)


@pytest.mark.parametrize("family", FAMILIES)
def test_depolarizing_rates_cover_every_gate_of_the_transpiled_circuit(family):
    """depolarizing=p with H.S.T: merged into one gate, which must carry the error (it used to be an error-free u3)."""
    ops = [qml.Hadamard(0), qml.S(0), qml.T(0)]
    backend = backends.get(family, depolarizing=0.1)
    value = float(backend.execute([qml.tape.QuantumScript(ops, [qml.expval(qml.PauliX(0))])],
                                  ExecutionConfig((0,))).results[0])  # fmt: skip
    ideal = float(np.cos(3 * np.pi / 4))
    assert value == pytest.approx(aer_exact(backend.noise_model, qiskit_circuit(ops, 1), "X"), abs=1e-10)
    assert abs(value - ideal) > 0.05  # a depolarized gate: the Bloch vector shrinks by (1 - p) per gate
    circuit, _ = backend.transpiled(_converted(ops, [qml.expval(qml.PauliX(0))], 1), False)
    errors = set(backend.noise_model._default_quantum_errors)
    assert {i.operation.name for i in circuit.data} <= errors


def _converted(ops, measurements, n):
    from hybridai.quantum.qiskit_frontend.conversion import convert

    return convert(qml.tape.QuantumScript(ops, measurements), list(range(n)))


ONE_QUBIT = [("Hadamard", 0), ("S", 0), ("T", 0), ("PauliX", 0), ("RX", 1), ("RY", 1), ("RZ", 1)]
TWO_QUBIT = [("CNOT", 0), ("CZ", 0), ("IsingXX", 1), ("IsingZZ", 1)]
BASES = [["rz", "sx", "x", "cx"], ["u", "cx"], ["rx", "ry", "rz", "cz"], ["u1", "u2", "u3", "cx"], ["p", "sx", "ecr"]]


@st.composite
def model_and_circuit(draw):
    basis = draw(st.sampled_from(BASES))
    model = NoiseModel(basis_gates=basis)
    for gate in basis:
        if not draw(st.booleans()):
            continue
        n = 2 if gate in ("cx", "cz", "ecr") else 1
        p = draw(st.floats(0.0, 0.2))
        error = depolarizing_error(p, n)
        if n == 1 and draw(st.booleans()):
            error = error.compose(amplitude_damping_error(draw(st.floats(0.0, 0.2))))
        model.add_all_qubit_quantum_error(error, gate)
    ops = []
    for _ in range(draw(st.integers(1, 6))):
        name, k = draw(st.sampled_from(ONE_QUBIT + TWO_QUBIT))
        params = [draw(st.floats(-3.0, 3.0))] if k else []
        wires = [0, 1] if (name, k) in TWO_QUBIT else [draw(st.integers(0, 1))]
        ops.append(getattr(qml, name)(*params, wires=wires))
    label = draw(st.sampled_from(["ZZ", "XI", "IY", "XZ"]))
    return model, ops, label


def _pennylane_word(label: str):
    letters = {"X": qml.PauliX, "Y": qml.PauliY, "Z": qml.PauliZ}
    terms = [letters[c](len(label) - 1 - i) for i, c in enumerate(label) if c != "I"]
    return terms[0] if len(terms) == 1 else qml.prod(*terms)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_and_circuit())
def test_random_models_with_their_own_basis_gates_equal_aer(case):
    model, ops, label = case
    want = aer_exact(model, qiskit_circuit(ops, 2), label)
    for family in FAMILIES:
        got = hybridai_value(family, ops, 2, _pennylane_word(label), noise_model=model)
        assert got == pytest.approx(want, abs=1e-10), family


# -- 2. errors on measure: before the read with shots, left out of exact values as in Aer's estimator -----------


def measure_model() -> NoiseModel:
    model = NoiseModel(basis_gates=["rz", "sx", "x", "cx"])
    model.add_all_qubit_quantum_error(pauli_error([("X", 0.2), ("I", 0.8)]), "measure")
    model.add_all_qubit_quantum_error(amplitude_damping_error(0.1), "sx")
    return model


def test_measure_errors_apply_to_samples_as_in_aer():
    model = measure_model()
    ops = [qml.RY(0.9, 0), qml.CNOT([0, 1])]
    qc = transpiled(model, qiskit_circuit(ops, 2))
    qc.measure_all()
    counts = AerSimulator(noise_model=model).run(qc, shots=200_000, seed_simulator=5).result().get_counts()
    aer_z0 = sum((1 - 2 * int(bits[-1])) * c for bits, c in counts.items()) / 200_000
    shots = 20_000
    tape = qml.tape.QuantumScript(ops, [qml.expval(qml.PauliZ(0))])
    config = ExecutionConfig((0, 1), shots=shots, seed=11)
    density = float(backends.get("density", noise_model=model).execute([tape], config).results[0])
    exact_without = aer_exact(model, qiskit_circuit(ops, 2), "IZ")  # no measurement: no measure error
    sigma = np.sqrt((1 - aer_z0**2) / shots + (1 - aer_z0**2) / 200_000)
    assert abs(aer_z0 - exact_without) > 10 * sigma  # the measure error shows in Aer's samples
    assert abs(density - aer_z0) < 5 * sigma


@pytest.mark.parametrize("family", FAMILIES)
def test_exact_values_leave_measure_errors_out_as_aers_estimator_does(family):
    from qiskit_aer.primitives import EstimatorV2

    model = measure_model()
    ops = [qml.RY(0.9, 0), qml.CNOT([0, 1])]
    t = transpiled(model, qiskit_circuit(ops, 2))
    backend_options = {"method": "density_matrix", "noise_model": model}
    estimator = EstimatorV2(options={"default_precision": 0.0, "backend_options": backend_options})
    want = float(estimator.run([(t, SparsePauliOp("IZ").apply_layout(t.layout))]).result()[0].data.evs)
    assert want == pytest.approx(aer_exact(model, qiskit_circuit(ops, 2), "IZ"), abs=1e-12)
    assert hybridai_value(family, ops, 2, qml.PauliZ(0), noise_model=model) == pytest.approx(want, abs=1e-10)


def test_reset_errors_act_only_where_a_reset_is_and_density_refuses_resets_by_name():
    """Aer applies an error on reset after a reset; hybridai's circuits have none, so the values are Aer's without it.
    A Qiskit circuit with a reset is refused by name on density (it does not simulate resets)."""
    from hybridai.core.errors import UnsupportedOperationError
    from hybridai.quantum.density.noise import Noise
    from hybridai.quantum.density.planning import compile_circuit

    model = measure_model()
    model.add_all_qubit_quantum_error(pauli_error([("X", 0.3), ("I", 0.7)]), "reset")
    ops = [qml.RY(0.9, 0), qml.CNOT([0, 1])]
    want = aer_exact(model, qiskit_circuit(ops, 2), "ZI")
    for family in FAMILIES:
        assert hybridai_value(family, ops, 2, qml.PauliZ(1), noise_model=model) == pytest.approx(want, abs=1e-10)
    qc = QuantumCircuit(1)
    qc.x(0)
    qc.reset(0)
    with pytest.raises(UnsupportedOperationError, match="cannot simulate 'reset'"):
        compile_circuit(qc, Noise(model), (0,))


# -- 3. what Aer refuses, refused by name when the backend is built ------------------------------------------


def _on_x(error) -> NoiseModel:
    model = NoiseModel(basis_gates=["x"])
    model.add_all_qubit_quantum_error(error, "x")
    return model


def _trace_decreasing() -> QuantumError:
    from qiskit.circuit.library import IGate, XGate

    error = QuantumError([(IGate(), 0.5), (XGate(), 0.5)])
    error._probs = [0.5, 0.2]  # what a later edit of the model may leave: Aer refuses it when the job runs
    return error


def _non_cptp_kraus() -> QuantumError:
    from qiskit.circuit import Instruction

    term = QuantumCircuit(1)
    term.append(Instruction("kraus", 1, 0, [np.sqrt(0.7) * np.eye(2)]), [0])
    return QuantumError(term)


def _bad_readout() -> NoiseModel:
    error = ReadoutError([[0.9, 0.1], [0.1, 0.9]])
    error._probabilities = np.array([[0.9, 0.4], [0.1, 0.9]])
    model = NoiseModel()
    model.add_all_qubit_readout_error(error)
    return model


INVALID = {
    "pauli outside [0, 1]": (lambda: _on_x(PauliError(["I", "X"], [1.3, -0.3])), r"\[1\.3, -0\.3\]"),
    "pauli not summing to 1": (lambda: _on_x(PauliError(["I", "X"], [0.5, 0.2])), r"sum is 0\.7"),
    "negative lindblad rate": (lambda: _on_x(PauliLindbladError(["X"], [-0.5])), r"rates \[-0\.5\]"),
    "trace-decreasing terms": (lambda: _on_x(_trace_decreasing()), r"sum is 0\.7"),
    "non-CPTP kraus": (lambda: _on_x(_non_cptp_kraus()), r"kraus term that is not completely positive"),
    "readout row not summing to 1": (_bad_readout, r"readout error \(every qubit\).*\[0\.9, 0\.4\]"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
@pytest.mark.parametrize("family", FAMILIES)
def test_invalid_errors_are_refused_by_name_when_the_backend_is_built(family, case):
    make, match = INVALID[case]
    with pytest.raises(ConfigError, match=rf"noise_model's .*{match}.*; accepted: "):
        backends.get(family, noise_model=make())


@pytest.mark.parametrize("case", sorted(set(INVALID) - {"non-CPTP kraus"}))
def test_aer_itself_refuses_them(case):
    """The peer: Aer refuses each when a job runs (the non-CPTP Kraus term, it runs, with a trace of 0.7)."""
    model = INVALID[case][0]()
    qc = QuantumCircuit(1, 1)
    qc.x(0)
    qc.measure(0, 0)
    with pytest.raises(ValueError):
        AerSimulator(noise_model=model).run(qc, shots=10).result()


def test_values_at_aers_thresholds_are_accepted():
    """Aer keeps rates down to -1e-10 (left out) and probabilities summing to 1 within 1e-10."""
    small = _on_x(PauliLindbladError(["X", "Z"], [0.1, -5e-11]))
    near = _on_x(PauliError(["I", "X"], [0.7, 0.3 + 5e-11]))
    for model in (small, near):
        want = aer_exact(model, qiskit_circuit([qml.PauliX(0)], 1), "Z")
        for family in FAMILIES:
            assert hybridai_value(family, [qml.PauliX(0)], 1, qml.PauliZ(0), noise_model=model) == pytest.approx(
                want, abs=1e-10
            )


def test_a_request_the_primitive_refuses_is_not_retried(monkeypatch):
    backend = backends.get("aer", retries=2, backoff=0.0)
    attempts = []

    class Job:
        def job_id(self):
            return "job-9"

        def result(self):
            raise ValueError("QuantumError: invalid probability vector total (0.700000!= 1)")

    class Refusing:
        def run(self, pubs):
            attempts.append(1)
            return Job()

    monkeypatch.setattr(backend, "_estimator", lambda seed: Refusing())
    tape = qml.tape.QuantumScript([qml.RX(0.3, 0)], [qml.expval(qml.PauliZ(0))])
    with pytest.raises(BackendExecutionError, match="job job-9 was refused: ValueError.*not retried"):
        backend.execute([tape], ExecutionConfig((0,)))
    assert len(attempts) == 1


# -- 4. a model none of whose errors lands: a warning, once per structure ------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_a_warning_names_the_gates_when_no_error_lands(family):
    model = model_on(["u3"], [])
    backend = backends.get(family, noise_model=model)
    tape = qml.tape.QuantumScript([qml.RZ(0.3, 0), qml.CNOT([0, 1])], [qml.expval(qml.PauliZ(1))])
    config = ExecutionConfig((0, 1))
    with pytest.warns(UserWarning, match=r"quantum errors on \['u3'\].*gates \['cx', 'rz'\]"):
        backend.execute([tape], config)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend.execute([tape], config)  # the same structure: no second warning
        landing = backends.get(family, noise_model=model_on(["rz"], ["cx"]))
        landing.execute([tape], config)  # errors that land: no warning
    assert not [w for w in caught if "none of them acts" in str(w.message)]


# -- 5. caches keyed by values, never by printed text --------------------------------------------------------


def _hamiltonian(coeffs: np.ndarray, n: int):
    words = [np.base_repr(i, 4).zfill(n) for i in range(1, len(coeffs) + 1)]
    letters = {"0": qml.Identity, "1": qml.PauliX, "2": qml.PauliY, "3": qml.PauliZ}
    ops = [qml.prod(*[letters[c](q) for q, c in enumerate(w)]) for w in words]
    return qml.Hamiltonian(list(coeffs), ops)


@pytest.mark.parametrize("family", FAMILIES)
def test_observables_that_print_alike_keep_their_own_values(family):
    n = 6
    rng = np.random.default_rng(3)
    base = rng.uniform(-1, 1, 1100)
    changed = base.copy()
    changed[550] += 0.9  # numpy prints the middle of 1100 coefficients as '...'
    cases = [_hamiltonian(base, n), _hamiltonian(changed, n),
             qml.Hamiltonian([0.5], [qml.PauliZ(0)]), qml.Hamiltonian([0.5000000001], [qml.PauliZ(0)])]  # fmt: skip
    holder = {}

    def circuit(inputs, weights):
        for q in range(n):
            qml.RY(inputs[..., q] * weights[q], wires=q)
            qml.RX(0.4 + 0.1 * q, wires=q)  # a complex state: every Pauli word has an expectation
        for q in range(n - 1):
            qml.CNOT([q, q + 1])
        return qml.expval(holder["H"])

    layer = QuantumLayer(circuit, n, {"weights": n}, backend=family).double()
    x = torch.tensor(rng.uniform(-1, 1, (2, n)))
    reference = qml.QNode(circuit, qml.device("default.qubit", wires=n), interface="torch")
    got, want = [], []
    for h in cases:
        holder["H"] = h
        with torch.no_grad():
            got.append(layer(x).reshape(-1))
            want.append(reference(x, layer.weights.detach()).reshape(-1))
        torch.testing.assert_close(got[-1], want[-1], rtol=0, atol=1e-9)
    assert (want[1] - want[0]).abs().min() > 1e-3  # the changed coefficient shows
    assert (want[3] - want[2]).abs().min() > 1e-11  # 1e-10 * <Z0>
    torch.testing.assert_close(got[3] - got[2], want[3] - want[2], rtol=0, atol=1e-14)
