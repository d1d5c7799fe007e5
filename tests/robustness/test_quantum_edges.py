"""Edges of the quantum paths where an answer used to be silently wrong, or an error raw (issue 28).

Out-of-range shots and seeds reached torch, numpy and Qiskit unchecked (``OverflowError``, or a seed accepted
and failing later); a second derivative through ``diff_method="adjoint"`` failed inside an ``out=`` kernel;
mid-circuit measurements on ``pennylane:default.qubit`` raised PennyLane's ``WireError``; huge or unreachable
ZNE scale factors gave numpy's ``LinAlgError`` or an extrapolation at the wrong factor; a plugin's ``execute``
returning None or results of the wrong shape failed far away or was reshaped into a wrong answer; the memory
guard refused 24 qubits only after planning them; a job id holding the token was shown; ``target_alignment``
of a matrix with NaN returned NaN; the ZNE warning on an exact backend was untrue with shots. Each is now right
(equal to its reference) or refused with a ``HybridAIError`` naming the argument, the value and what is accepted.
"""

from __future__ import annotations

import logging

import numpy as np
import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai import ZNE, QuantumKernel, QuantumLayer, backends
from hybridai.backends import QuantumCapabilities, QuantumExecutor
from hybridai.core.errors import (
    SEED_MAX,
    SHOTS_MAX,
    BackendExecutionError,
    ConfigError,
    ResourceLimitError,
    UnsupportedOperationError,
)
from hybridai.core.execution import Execution, ExecutionConfig
from hybridai.quantum import target_alignment
from hybridai.quantum.qiskit.executor import Tally
from hybridai.quantum.statevector.plan import Plan
from tests.robustness.refusals import refusal

NAN = float("nan")


def small(inputs, weights):
    qml.RY(inputs[..., 0], wires=0)
    qml.RX(weights[0], wires=1)
    qml.CNOT(wires=[0, 1])
    qml.RY(weights[1], wires=1)
    return qml.expval(qml.PauliZ(1))


def feature_map(x):
    qml.RX(x[..., 0], wires=0)


def one_gate(inputs):
    qml.RX(inputs[..., 0], wires=0)
    return qml.expval(qml.PauliZ(0))


def layer_run(backend="statevector", **options):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layer = QuantumLayer(small, 2, {"weights": 2}, backend=backend, **options)
    return layer(torch.full((2, 1), 0.7))


def kernel_run(**options):
    return QuantumKernel(feature_map, 1, **options).matrix(torch.zeros(2, 1))


def deploy_run(shots):
    model = nn.Sequential(nn.Linear(1, 1), QuantumLayer(small, 2, {"weights": 2}))
    return hybridai.deploy(model, quantum="statevector", shots=shots)


def zne_on_one_gate(factors):
    zne = ZNE(scale_factors=factors)
    layer = QuantumLayer(one_gate, 1, {}, backend="aer", depolarizing=(0.05, 0.05), mitigation=zne)
    return layer(torch.ones(1, 1))


def nan_kernel_matrix(_):
    K = torch.eye(3, dtype=torch.float64)
    K[0, 2] = K[2, 0] = NAN
    return target_alignment(K, torch.tensor([1.0, -1.0, 1.0]))


BIG = 2**64
# (callable, bad value, error class, argument named, text that shows the value)
CASES = [
    # shots beyond what torch, numpy and Qiskit take: named where given, before anything runs
    (lambda v: layer_run(shots=v), BIG, ConfigError, "shots", str(BIG)),
    (lambda v: layer_run(shots=v), SHOTS_MAX + 1, ConfigError, "shots", str(SHOTS_MAX + 1)),
    (lambda v: layer_run("aer", shots=v), BIG, ConfigError, "shots", str(BIG)),
    (lambda v: layer_run("pennylane:default.qubit", shots=v), BIG, ConfigError, "shots", str(BIG)),
    (lambda v: kernel_run(shots=v), BIG, ConfigError, "shots", str(BIG)),
    (lambda v: backends.get("statevector", shots=v), BIG, ConfigError, "shots", str(BIG)),
    (lambda v: backends.get("aer", shots=v), BIG, ConfigError, "shots", str(BIG)),
    (lambda v: backends.get("ibm:fake_manila", shots=v), BIG, ConfigError, "shots", str(BIG)),
    (lambda v: backends.get("pennylane:default.qubit", shots=v), BIG, ConfigError, "shots", str(BIG)),
    (lambda v: ExecutionConfig((0,), shots=v), BIG, ConfigError, "shots", str(BIG)),
    (deploy_run, BIG, ConfigError, "shots", str(BIG)),
    # seeds beyond what every generator takes
    (lambda v: layer_run(shots=10, seed=v), BIG, ConfigError, "seed", str(BIG)),
    (lambda v: layer_run("aer", shots=10, seed=v), BIG, ConfigError, "seed", str(BIG)),
    (lambda v: layer_run("aer", seed=v), 2**63, ConfigError, "seed", str(2**63)),
    (lambda v: layer_run("pennylane:default.qubit", shots=10, seed=v), BIG, ConfigError, "seed", str(BIG)),
    (lambda v: kernel_run(shots=10, seed=v), BIG, ConfigError, "seed", str(BIG)),
    (lambda v: ExecutionConfig((0,), seed=v), BIG, ConfigError, "seed", str(BIG)),
    (lambda v: ZNE(seed=v), SEED_MAX + 1, ConfigError, "seed", str(SEED_MAX + 1)),  # Mitiq's RandomState
    # scale factors: bounded, and reachable by the circuit folded
    (lambda v: ZNE(scale_factors=v), (1, 1e308, 1.7e308), ConfigError, "scale_factors", "1e+308"),
    (lambda v: ZNE(scale_factors=v), (1, 3, 1e6), ConfigError, "scale_factors", "1000000.0"),
    (zne_on_one_gate, (1, 2, 3), ConfigError, "scale_factors", "2.0"),
    (zne_on_one_gate, (1, 1.5, 2), ConfigError, "scale_factors", "1.5"),
    # a kernel matrix holding NaN
    (nan_kernel_matrix, None, ConfigError, "K", "non-finite"),
]


def _id(case) -> str:
    call, value, _, argument, _ = case
    return f"{argument}={str(value)[:24]}"


@pytest.mark.parametrize("call, value, error, argument, shown", CASES, ids=[_id(c) for c in CASES])
def test_bad_value_gives_a_typed_error_naming_argument_value_and_accepted(call, value, error, argument, shown):
    message = refusal(call, value, error)
    assert f"{argument}=" in message and shown in message and "accepted" in message, message


@pytest.mark.parametrize("backend", ["statevector", "aer", "pennylane:default.qubit"])
def test_the_largest_seed_is_taken_and_reproducible(backend):
    first, again = (layer_run(backend, shots=50, seed=SEED_MAX) for _ in range(2))
    torch.testing.assert_close(first, again, rtol=0, atol=0)


def test_the_largest_zne_seed_folds_at_random():
    zne = ZNE(scale_factors=(1, 2, 3), folding="random", seed=SEED_MAX)  # partial folds draw from the seed
    layer = QuantumLayer(small, 2, {"weights": 2}, backend="aer", depolarizing=(0.01, 0.05), mitigation=zne)
    with torch.no_grad():
        assert torch.isfinite(layer(torch.ones(2, 1))).all()


# -- a second derivative through diff_method="adjoint" equals backprop's ------------------------------------


def second_derivatives(diff_method):
    torch.manual_seed(0)
    layer = QuantumLayer(small, 2, {"weights": 2}, diff_method=diff_method).double()
    x = torch.rand(3, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(1), requires_grad=True)
    gx, gw = torch.autograd.grad(layer(x).pow(2).sum(), (x, layer.weights), create_graph=True)
    hx, hw = torch.autograd.grad(gx.sum() + gw.sum(), (x, layer.weights))
    return [t.detach() for t in (gx, gw, hx, hw)]


def test_second_derivatives_through_adjoint_equal_backprop():
    for got, want in zip(second_derivatives("adjoint"), second_derivatives("backprop"), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-10)


# -- mid-circuit measurements -------------------------------------------------------------------------------


def measured_and_reset(inputs, weights):
    qml.RY(inputs[..., 0], wires=0)
    m = qml.measure(0, reset=True)
    qml.cond(m, qml.RX)(weights[0], wires=1)
    qml.RY(weights[1], wires=0)
    return qml.expval(qml.PauliZ(1)), qml.expval(m), qml.probs()


def reference(inputs, weights):  # the same circuit on a device with a wire to defer the measurement to
    qml.RY(inputs[..., 0], wires=0)
    m = qml.measure(0, reset=True)
    qml.cond(m, qml.RX)(weights[0], wires=1)
    qml.RY(weights[1], wires=0)
    return qml.expval(qml.PauliZ(1)), qml.expval(m), qml.probs(wires=[0, 1])


@pytest.mark.parametrize("diff_method", ["best", "backprop", "parameter-shift"])
def test_mid_circuit_measurements_on_default_qubit_equal_pennylane(diff_method):
    layer = QuantumLayer(measured_and_reset, 2, {"weights": 2}, backend="pennylane:default.qubit",
                         diff_method=diff_method).double()  # fmt: skip
    x = torch.tensor([[0.7], [1.3]], dtype=torch.float64)
    out = layer(x)
    out.sum().backward()
    weights = layer.weights.detach().clone().requires_grad_()
    method = "backprop" if diff_method == "best" else diff_method  # gradients by the same rule
    qnode = qml.QNode(reference, qml.device("default.qubit", wires=3), interface="torch", diff_method=method)
    z, measured, probs = qnode(x, weights)
    want = torch.cat([torch.stack([z, measured], 1), probs], 1)
    want.sum().backward()
    torch.testing.assert_close(out.detach(), want.detach(), rtol=0, atol=1e-10)
    torch.testing.assert_close(layer.weights.grad, weights.grad, rtol=0, atol=1e-8)


def test_mid_circuit_measurements_are_refused_by_name_where_they_cannot_run():
    x = torch.tensor([[0.7]], dtype=torch.float64)
    for backend in ("statevector", "aer"):
        layer = QuantumLayer(measured_and_reset, 2, {"weights": 2}, backend=backend).double()
        with pytest.raises(UnsupportedOperationError) as caught:
            layer(x)
        message = str(caught.value)
        assert "MidMeasure" in message and "'pennylane:default.qubit'" in message, message
        assert "'statevector'" not in message, message  # which refuses them too
    layer = QuantumLayer(measured_and_reset, 2, {"weights": 2}, backend="pennylane:default.qubit",
                         diff_method="adjoint").double()  # fmt: skip
    with pytest.raises(ConfigError, match=r"diff_method='adjoint'.*accepted: 'best', 'parameter-shift'.*qml.measure"):
        layer(x)


# -- what an executor returns ----------------------------------------------------------------------------


class Returns(QuantumExecutor):
    """A plugin executor that returns ``make(tapes, config)`` (exact values of the statevector backend by
    default, changed by ``make``)."""

    family = "returns"

    def __init__(self, make=None):
        super().__init__()
        self.make = make

    @property
    def capabilities(self):
        return QuantumCapabilities(differentiable=True, exact=False, noise=True)

    def execute(self, tapes, config):
        run = backends.get("statevector").execute(tapes, config)
        return self.make(run, tapes)


def extra_row(run, tapes):
    return Execution([torch.cat([r, r[:1]]) for r in run.results], run.stats)


def per_measurement_tuple(run, tapes):
    return Execution([(r,) for r in run.results], run.stats)


BROKEN = {
    "None": lambda run, tapes: None,
    "bare list": lambda run, tapes: run.results,
    "no results": lambda run, tapes: Execution([], run.stats),
    "a row too many": extra_row,
    "a tuple for one measurement": per_measurement_tuple,
    "strings": lambda run, tapes: Execution(["0.5" for _ in run.results], run.stats),
    "NaN": lambda run, tapes: Execution([r * NAN for r in run.results], run.stats),
    "stats as a dict": lambda run, tapes: Execution(run.results, {"circuits": 1}),
}


@pytest.mark.parametrize("mitigation", [None, ZNE()], ids=["plain", "zne"])
@pytest.mark.parametrize("what", sorted(BROKEN))
def test_an_executor_breaking_the_contract_is_named(what, mitigation):
    layer = QuantumLayer(small, 2, {"weights": 2}, backend=Returns(BROKEN[what]), mitigation=mitigation)
    with pytest.raises(BackendExecutionError) as caught:
        layer(torch.zeros(3, 1))
    message = str(caught.value)
    assert "'returns'" in message and "execute()" in message and "accepted" in message, message
    assert "hybridai.core.execution.Execution" in message, message
    assert layer.last_execution is None  # nothing half-kept


def test_a_correct_plugin_still_runs():
    layer = QuantumLayer(small, 2, {"weights": 2}, backend=Returns(lambda run, tapes: run))
    want = QuantumLayer(small, 2, {"weights": 2})
    want.load_state_dict(layer.state_dict())
    x = torch.rand(3, 1)
    torch.testing.assert_close(layer(x), want(x), rtol=0, atol=0)


@pytest.mark.parametrize(
    "change, shown",
    [
        (lambda out: out[:-1], "0 arrays"),
        (lambda out: [np.concatenate([o, o], axis=1) for o in out], "shape (1, 6, 1)"),
        (lambda out: [o[..., :0] for o in out], "shape (1, 3, 0)"),
        (lambda out: [o * NAN for o in out], "non-finite"),
        (lambda out: [None for o in out], "NoneType"),
    ],
)
def test_an_estimator_result_of_the_wrong_shape_is_named(change, shown):
    class Broken(type(backends.get("aer"))):
        def estimate(self, pairs, values, config, tally):
            return change(super().estimate(pairs, values, config, tally))

    layer = QuantumLayer(small, 2, {"weights": 2}, backend=Broken())
    with torch.no_grad(), pytest.raises(BackendExecutionError) as caught:  # one parameter set per sample
        layer(torch.zeros(3, 1))
    message = str(caught.value)
    assert "'aer'" in message and "estimate()" in message and shown in message and "accepted" in message, message


# -- the memory guard refuses before planning --------------------------------------------------------------


def wide(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(24))
    qml.BasicEntanglerLayers(weights, wires=range(24))
    return qml.expval(qml.PauliZ(0))


@pytest.mark.parametrize("diff_method", ["adjoint", "best"])
def test_the_memory_guard_refuses_24_qubits_before_planning(diff_method, monkeypatch):
    def planned(*args, **kwargs):
        raise AssertionError("the 24-qubit plan was built (seconds and GiB) before the memory guard refused it")

    monkeypatch.setattr(Plan, "__init__", planned)
    layer = QuantumLayer(wide, 24, {"weights": (1, 24)}, diff_method=diff_method, max_memory=2**30)
    with pytest.raises(ResourceLimitError, match=r"n_qubits=24.*max_memory=1 GiB.*accepted"):
        layer(torch.zeros(1, 24))


# -- a job id holding the token is redacted -------------------------------------------------------------


class FailedJob:
    def __init__(self, job_id):
        self.id = job_id

    def job_id(self):
        return self.id

    def result(self, timeout=None):
        raise RuntimeError("the service refused the job")


def test_a_job_id_holding_the_token_is_redacted(monkeypatch, caplog):
    token = "tok-5ecret-abcdef0123456789"
    monkeypatch.setenv("QISKIT_IBM_TOKEN", token)
    backend = backends.get("aer", retries=1, backoff=0.0)
    with caplog.at_level(logging.WARNING, logger="hybridai"), pytest.raises(BackendExecutionError) as caught:
        backend.run_job(lambda: FailedJob(f"job-{token}-7"), Tally(None))
    error = caught.value
    assert token not in str(error) and token not in (error.job_id or "") and "job-***-7" in str(error), str(error)
    assert caplog.records and all(token not in r.getMessage() for r in caplog.records)


# -- the ZNE warning on an exact backend is true with shots -----------------------------------------------


def test_the_zne_warning_on_an_exact_backend_is_true_with_shots():
    with pytest.warns(UserWarning, match="exact, noiseless") as caught:
        layer = QuantumLayer(small, 2, {"weights": 2}, shots=200, mitigation=ZNE(), seed=3)
    message = next(str(w.message) for w in caught if "exact, noiseless" in str(w.message))
    assert "changes nothing but the cost" not in message, message  # sampled values may change: it said they did not
    assert "shots may differ, by shot noise only" in message and "mitigation=None" in message, message
    assert layer.mitigation is not None
