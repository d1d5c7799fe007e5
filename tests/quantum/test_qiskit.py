"""Qiskit conversion and the aer / ibm backends (all offline: Aer and fake IBM devices)."""

import logging
import math

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridai import QuantumLayer, backends
from hybridai.core.errors import (
    BackendExecutionError,
    BackendNotFoundError,
    BackendUnavailableError,
    ConfigError,
    UnsupportedOperationError,
)
from hybridai.core.execution import ExecutionConfig
from hybridai.quantum.qiskit.redaction import redact
from hybridai.quantum.qiskit_frontend.conversion import convert

N = 3
SHAPES = {"weights": (1, N, 3)}


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N))
    qml.StronglyEntanglingLayers(weights, wires=range(N))
    return (
        qml.expval(qml.PauliZ(0)),
        qml.expval(qml.PauliX(1) @ qml.PauliY(2)),
        qml.expval(0.5 * qml.PauliZ(2) - 0.3 * qml.PauliX(0)),
        qml.var(qml.PauliZ(1)),
        qml.probs(wires=[2, 0]),
    )


def pair(backend, torch_seed=0, **options):
    torch.manual_seed(torch_seed)
    exact = QuantumLayer(circuit, N, SHAPES, backend="statevector").double()
    other = QuantumLayer(circuit, N, SHAPES, backend=backend, **options).double()
    other.load_state_dict(exact.state_dict())
    return exact, other


def counts(layer):
    """Primitive calls and circuits of the layer's last forward pass."""
    stats = layer.execution_stats
    return {"calls": stats["calls"], "circuits": stats["circuits"]}


def grads(layer, x):
    x = x.detach().clone().requires_grad_()
    out = layer(x)
    cot = torch.linspace(0.2, 1.4, out.shape[1], dtype=out.dtype)
    gx, gw = torch.autograd.grad((out * cot).sum(), [x, layer.weights])
    return out.detach(), gx, gw


# -- conversion ---------------------------------------------------------------------------

POOL = ["RX", "RY", "RZ", "Rot", "CNOT", "CZ", "Hadamard", "CRX", "IsingXX", "IsingZZ", "SWAP", "S", "T",
        "Toffoli", "PhaseShift", "CRot", "MultiRZ", "SX", "PauliY"]  # fmt: skip


@st.composite
def random_circuits(draw):
    n = draw(st.integers(min_value=2, max_value=4))
    ops = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        name = draw(st.sampled_from(POOL))
        arity = n if name == "MultiRZ" else getattr(qml, name).num_wires
        if arity > n:
            continue
        wires = draw(st.permutations(range(n)))[:arity]
        angles = [draw(st.floats(-3.0, 3.0)) for _ in range(getattr(qml, name).num_params)]
        ops.append((name, list(wires), angles))
    return n, ops


@settings(max_examples=40, deadline=None)
@given(random_circuits())
def test_converted_circuits_equal_pennylane_state_and_expectations(spec):
    from qiskit.quantum_info import Statevector

    n, ops = spec

    def qfunc():
        for name, wires, angles in ops:
            getattr(qml, name)(*angles, wires=wires)
        return [qml.expval(qml.PauliZ(0) @ qml.PauliX(n - 1)), qml.expval(qml.PauliY(1) - 0.5 * qml.PauliZ(0))]

    tape = qml.tape.make_qscript(qfunc)()
    converted = convert(tape, list(range(n)))
    bound = converted.circuit.assign_parameters([float(p) for p in converted.params])
    theirs = Statevector(bound).reverse_qargs().data
    ours = qml.execute([qml.tape.QuantumScript(tape.operations, [qml.state()])], qml.device("default.qubit", wires=n))[
        0
    ]
    overlap = abs(np.vdot(np.asarray(ours), theirs))
    assert overlap == pytest.approx(1.0, abs=1e-10)  # equal up to a global phase
    want = qml.execute([tape], qml.device("default.qubit", wires=n))[0]
    got = [Statevector(bound).expectation_value(o).real for o in converted.observables]
    np.testing.assert_allclose(got, np.asarray(want, dtype=float), atol=1e-10)


def test_observable_qubit_order_pennylane_wire_zero_is_rightmost():
    tape = qml.tape.QuantumScript([], [qml.expval(qml.PauliX(0) @ qml.PauliZ(2))])
    (op,) = convert(tape, [0, 1, 2]).observables
    assert op.paulis.to_labels() == ["ZIX"]


def test_unsupported_measurement_is_named():
    tape = qml.tape.QuantumScript([qml.Hadamard(0)], [qml.state()])
    with pytest.raises(UnsupportedOperationError, match="StateMP"):
        convert(tape, [0])


# -- aer ----------------------------------------------------------------------------------


def test_aer_exact_equals_statevector_values_and_parameter_shift_gradients():
    exact, aer = pair("aer")
    x = torch.rand(4, N, dtype=torch.float64)
    a, b = grads(exact, x), grads(aer, x)
    torch.testing.assert_close(b[0], a[0], rtol=0, atol=1e-10)
    torch.testing.assert_close(b[1], a[1], rtol=0, atol=1e-8)  # inputs
    torch.testing.assert_close(b[2], a[2], rtol=0, atol=1e-8)  # weights
    assert counts(aer) == {"calls": 1, "circuits": 4 * (1 + 2 * (3 * N + N))}
    assert aer.execution_stats["shots"] == 0 and aer.last_execution.stats.seconds > 0


def test_aer_shots_within_five_standard_errors_and_seeded():
    shots = 4000
    exact = pair("aer", torch_seed=1)[0]
    x = torch.rand(3, N, dtype=torch.float64)
    with torch.no_grad():
        want = exact(x)
    seeded = [QuantumLayer(circuit, N, SHAPES, backend="aer", shots=shots, seed=5).double() for _ in range(2)]
    for layer in seeded:
        layer.load_state_dict(exact.state_dict())
    with torch.no_grad():
        a, b = seeded[0](x), seeded[1](x)
    assert torch.equal(a, b)
    assert seeded[0].execution_stats["shots"] == 3 * shots and counts(seeded[0]) == {"calls": 1, "circuits": 3}
    expvals = [0, 1]  # Pauli words: standard error <= 1/sqrt(shots)
    assert (a[:, expvals] - want[:, expvals]).abs().max() < 5 / math.sqrt(shots)
    assert (a[:, 5:] - want[:, 5:]).abs().max() < 5 * 0.5 / math.sqrt(shots)  # probabilities


def test_shot_gradients_close_to_analytic():
    exact, aer = pair("aer", torch_seed=2, shots=8000, seed=3)
    x = torch.rand(2, N, dtype=torch.float64)
    a, b = grads(exact, x), grads(aer, x)
    assert (b[2] - a[2]).abs().max() < 0.15
    assert (b[1] - a[1]).abs().max() < 0.15


def test_noise_pulls_expectations_towards_zero():
    def polarised(inputs, weights):
        qml.RX(inputs[..., 0] * weights[0], wires=0)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    x = torch.full((2, 1), 0.1, dtype=torch.float64)
    exact = QuantumLayer(polarised, 2, {"weights": 1}, backend="statevector", init=torch.nn.init.ones_)
    with torch.no_grad():
        clean = exact.double()(x)
        for name, options in (("aer", {"depolarizing": (0.02, 0.08)}), ("aer:fake_manila", {})):
            noisy = QuantumLayer(polarised, 2, {"weights": 1}, backend=name, init=torch.nn.init.ones_, **options)
            got = noisy.double()(x)
            assert (got.abs() < clean.abs() - 1e-3).all(), (name, got, clean)
            assert not noisy.resolved_backend.capabilities.exact


def test_calls_are_split_only_by_max_parameter_sets():
    _, aer = pair("aer", max_parameter_sets=50)
    x = torch.rand(4, N, dtype=torch.float64)
    grads(aer, x)
    assert counts(aer) == {"calls": math.ceil(4 * 25 / 50), "circuits": 100}
    with torch.no_grad():
        aer(x)
    assert counts(aer) == {"calls": 1, "circuits": 4}


def test_aer_errors():
    with pytest.raises(BackendNotFoundError, match="fake_manila"):
        backends.get("aer:fake_manilla")
    with pytest.raises(ConfigError, match="depolarizing"):
        backends.get("aer", depolarizing=2.0)
    layer = QuantumLayer(circuit, N, SHAPES, backend="aer", readout_error=0.05)
    with pytest.raises(ConfigError, match="readout_error"):
        layer(torch.rand(2, N))


# -- ibm ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_layer_trains_on_ibm_fake_manila_offline():
    def small(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.BasicEntanglerLayers(weights, wires=range(2))
        return qml.expval(qml.PauliZ(0))

    torch.manual_seed(0)
    layer = QuantumLayer(small, 2, {"weights": (1, 2)}, backend="ibm:fake_manila", seed=7, shots=2000)
    x = torch.rand(4, 2)
    with torch.no_grad():
        target = -torch.sign(layer(x).mean())  # drive <Z0> to the other pole
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.6)
    losses = []
    for _ in range(4):
        optimizer.zero_grad()
        loss = ((layer(x) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.1, losses
    assert counts(layer) == {"calls": 1, "circuits": 4 * (1 + 2 * 2)}  # x needs no gradient: 2 weights shifted


class FlakyJob:
    def __init__(self, outcome, job_id):
        self.outcome, self.id = outcome, job_id

    def job_id(self):
        return self.id

    def result(self):
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def test_failed_jobs_are_retried_then_reported_with_the_job_id(monkeypatch):
    backend = backends.get("aer", retries=2, backoff=0.0)
    real = backend._estimator(None)
    attempts = []

    class Flaky:
        def run(self, pubs):
            attempts.append(1)
            if len(attempts) < 3:
                return FlakyJob(RuntimeError("device calibration in progress"), f"job-{len(attempts)}")
            return FlakyJob(real.run(pubs).result(), "job-ok")

    monkeypatch.setattr(backend, "_estimator", lambda seed: Flaky())
    tape = qml.tape.make_qscript(circuit)(torch.rand(2, N, dtype=torch.float64), weights=torch.rand(1, N, 3))
    run = backend.execute([tape], ExecutionConfig(wires=tuple(range(N))))
    (result,) = run.results
    assert len(attempts) == 3 and result[0].shape == (2,)
    assert run.stats.calls == 1 and run.stats.circuits == 2  # one call, however many attempts

    class Broken:
        def run(self, pubs):
            return FlakyJob(RuntimeError("queue time-out"), "job-42")

    monkeypatch.setattr(backend, "_estimator", lambda seed: Broken())
    with pytest.raises(BackendExecutionError, match="job job-42 failed after 3 attempt") as info:
        backend.execute([tape], ExecutionConfig(wires=tuple(range(N))))
    assert info.value.job_id == "job-42"


def test_without_account_names_the_environment_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("QISKIT_IBM_TOKEN", "QISKIT_IBM_INSTANCE", "QISKIT_IBM_CHANNEL", "QISKIT_IBM_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(BackendUnavailableError, match="QISKIT_IBM_TOKEN and QISKIT_IBM_INSTANCE"):
        backends.get("ibm:ibm_kyiv")
    with pytest.raises(ConfigError, match="ibm:fake_<name>"):
        backends.get("ibm")


def test_token_never_appears_in_errors_reprs_or_logs(monkeypatch, caplog):
    secret = "fake-token-5e3c9d1f"
    monkeypatch.setenv("QISKIT_IBM_TOKEN", secret)

    class LeakyService:
        def __init__(self):
            logging.getLogger("qiskit_ibm_runtime.accounts").error("login refused for token %s", secret)
            raise RuntimeError(f"401 Unauthorized: token {secret} is invalid")

    import qiskit_ibm_runtime

    monkeypatch.setattr(qiskit_ibm_runtime, "QiskitRuntimeService", LeakyService)
    with caplog.at_level(logging.INFO):
        with pytest.raises(BackendUnavailableError) as info:
            backends.get("ibm:ibm_kyiv")
        assert secret not in str(info.value) and "***" in str(info.value)

        backend = backends.get("ibm:fake_manila", retries=1, backoff=0.0)

        class Leaky:
            def run(self, pubs, precision=None):
                return FlakyJob(RuntimeError(f"rejected credentials {secret}"), "job-7")

        monkeypatch.setattr(backend, "estimator", lambda seed=None, mitigation=None: Leaky())
        tape = qml.tape.make_qscript(circuit)(torch.rand(2, N), weights=torch.rand(1, N, 3))
        with pytest.raises(BackendExecutionError) as info:
            backend.execute([tape], ExecutionConfig(wires=tuple(range(N))))
    assert secret not in str(info.value) and secret not in repr(backend)
    assert "login refused" in caplog.text and "rejected credentials" in caplog.text
    assert secret not in caplog.text
    assert redact(f"x{secret}y") == "x***y"


@pytest.mark.parametrize("mode", ["session", "batch"])
def test_ibm_session_and_batch_modes_run_locally(mode):
    def small(inputs, weights):
        qml.RY(inputs[..., 0] * weights[0], wires=0)
        return qml.expval(qml.PauliZ(0))

    layer = QuantumLayer(small, 1, {"weights": 1}, backend="ibm:fake_manila", mode=mode, seed=3, shots=4000)
    with torch.no_grad():
        torch.nn.init.ones_(layer.weights)
        out = layer(torch.tensor([[0.0], [math.pi]]))
    assert out[0] > 0.8 and out[1] < -0.8  # cos(0) = 1, cos(pi) = -1, minus readout noise
    assert type(layer.resolved_backend.estimator().mode).__name__ == mode.capitalize()
