"""The execution contract: per-layer statistics on shared backends, threads, ZNE around any executor.

Backends are shared by layers and threads and hold no per-call state; ``hybridai.quantum.execution.run.execute``
applies zero-noise extrapolation around any ``QuantumExecutor``, including a plugin without autograd
whose gradients come from ``hybridai.quantum.execution.shift_rule.parameter_shift``.
"""

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pennylane as qml
import pytest
import torch

import hybridai
from hybridai import ZNE, QuantumKernel, QuantumLayer, backends
from hybridai.backends import Execution, ExecutionConfig, ExecutionStats, QuantumCapabilities, QuantumExecutor
from hybridai.core.errors import ConfigError
from hybridai.quantum.execution.run import execute
from hybridai.quantum.execution.shift_rule import parameter_shift

P = 0.05  # depolarizing probability of the channels written in the circuits
WIRES = (0, 1)


def gates(inputs, weights):
    qml.RY(inputs[..., 0], wires=0)
    qml.RY(inputs[..., 1], wires=1)
    qml.CNOT(wires=[0, 1])
    qml.RX(weights[0], wires=0)
    qml.RZ(weights[1], wires=1)
    qml.RY(weights[2] * inputs[..., 0], wires=1)


def layered(inputs, weights):
    gates(inputs, weights)
    return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(0) @ qml.PauliX(1))


def with_noise(p):
    """``layered`` with a depolarizing channel after every gate (``p=0``: the noiseless circuit)."""

    def circuit(inputs, weights):
        with qml.queuing.AnnotatedQueue() as q:
            measurements = layered(inputs, weights)
        for op in q.queue:
            qml.apply(op)
            if not isinstance(op, qml.measurements.MeasurementProcess):
                for w in op.wires:
                    qml.DepolarizingChannel(p, wires=w)
        return measurements

    return circuit


class ShiftRuleQPU(QuantumExecutor):
    """The smallest plugin executor: numbers from numpy (default.mixed) with a depolarizing channel of
    probability ``noise`` after every gate it runs, gradients by hybridai's shift rule, no autograd."""

    def __init__(self, target=None, *, noise=0.0):
        super().__init__(target, noise=noise)
        self.noise = noise

    @property
    def capabilities(self):
        return QuantumCapabilities(differentiable=True, exact=False, noise=True)

    def execute(self, tapes, config):
        dev = qml.device("default.mixed", wires=list(config.wires))
        found = [[(i, p) for i, p in enumerate(t.get_parameters(trainable_only=False)) if torch.is_tensor(p)]
                 for t in tapes]  # fmt: skip

        def evaluate(values):  # values[i]: parameter sets [S, B, P_i] of tape i -> expectations [S, B, R_i]
            runs = []
            for tape, where, v in zip(tapes, found, values, strict=True):
                script = qml.tape.QuantumScript(tape.operations, tape.measurements)
                bound = script.bind_new_parameters(list(v.reshape(-1, v.shape[-1]).T), [i for i, _ in where])
                noisy = [g for op in bound.operations for g in (op, *self._noise(op))]
                runs.append(qml.tape.QuantumScript(noisy, bound.measurements))
            outs = qml.execute(runs, dev)
            columns = [out if isinstance(out, tuple) else (out,) for out in outs]  # one array per measurement
            return [np.stack([np.broadcast_to(r, (v[..., 0].size,)) for r in c], -1).reshape(*v.shape[:2], -1)
                    for c, v in zip(columns, values, strict=True)]  # fmt: skip

        batches = [t.batch_size or 1 for t in tapes]
        raws = parameter_shift([[p for _, p in where] for where in found], batches, evaluate)
        results = [
            tuple(r[:, j] if t.batch_size else r[0, j] for j in range(r.shape[1]))
            for t, r in zip(tapes, raws, strict=True)
        ]
        return Execution([r if len(r) > 1 else r[0] for r in results], ExecutionStats(sum(batches), 1))

    def _noise(self, op):
        return [qml.DepolarizingChannel(self.noise, wires=w) for w in op.wires] if self.noise else []


class Counting(QuantumExecutor):
    """Another executor, with the tapes of each of its ``execute`` calls recorded (test only)."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.calls = inner, []

    @property
    def capabilities(self):
        return self.inner.capabilities

    def execute(self, tapes, config):
        self.calls.append((len(tapes), config.keep_gates, config.mitigation))
        return self.inner.execute(tapes, config)


def values_and_grads(layer, x):
    x = x.detach().clone().requires_grad_()
    out = layer(x)
    cot = torch.tensor([0.8, -1.3], dtype=out.dtype)[: out.shape[1]] if out.ndim == 2 else 0.8  # [B] for one expval
    gx, gw = torch.autograd.grad((out * cot).sum(), [x, layer.weights])
    return out.detach(), gx, gw


def twin(backend, circuit=layered, **options):
    torch.manual_seed(0)
    layer = QuantumLayer(circuit, 2, {"weights": 3}, backend=backend, **options).double()
    return layer


# -- statistics belong to the layer, not to the shared backend ------------------------------------


def test_layers_sharing_one_backend_report_their_own_statistics():
    pytest.importorskip("qiskit_aer")
    shared = backends.get("aer:fake_manila", seed=3, shots=500)
    small, large = twin(shared), twin(shared)
    assert small.resolved_backend is large.resolved_backend is shared
    with torch.no_grad():
        small(torch.rand(2, 2, dtype=torch.float64))
        large(torch.rand(5, 2, dtype=torch.float64))
    assert (small.execution_stats["circuits"], large.execution_stats["circuits"]) == (2, 5)
    assert (small.execution_stats["shots"], large.execution_stats["shots"]) == (2 * 500, 5 * 500)
    assert small.execution_stats["calls"] == large.execution_stats["calls"] == 1
    placed = twin("statevector")
    hybridai.place(placed, quantum=shared)
    assert placed.resolved_backend is shared and placed.execution_stats is None  # nothing run yet
    with torch.no_grad():
        placed(torch.rand(3, 2, dtype=torch.float64))
    assert placed.execution_stats["circuits"] == 3 and small.execution_stats["circuits"] == 2


# -- one backend object, four threads ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name, options, config",
    [
        ("statevector", {}, {}),
        ("statevector", {}, {"shots": 300, "seed": 4}),
        ("pennylane:lightning.qubit", {}, {}),
        ("pennylane:default.qubit", {}, {"shots": 300, "seed": 4}),
        ("aer", {}, {"seed": 9}),
        ("aer", {"depolarizing": (0.01, 0.05)}, {"shots": 300, "seed": 9}),
    ],
)
def test_one_backend_from_four_threads_equals_serial(name, options, config):
    if name.startswith("aer"):
        pytest.importorskip("qiskit_aer")
    backend = backends.get(name, **options)
    generator = torch.Generator().manual_seed(1)
    weights = torch.rand(3, dtype=torch.float64, generator=generator)
    tapes = [
        qml.tape.make_qscript(layered)(torch.rand(4, 2, dtype=torch.float64, generator=generator), weights)
        for _ in range(16)
    ]
    run_config = ExecutionConfig(wires=WIRES, **config)

    def run(tape):
        with torch.no_grad():
            (result,) = backend.execute([tape], run_config).results
        return torch.stack([torch.as_tensor(r, dtype=torch.float64) for r in result])

    serial = [run(t) for t in tapes]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(run, tapes))
    for a, b in zip(serial, threaded, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(serial[0], serial[1])  # different inputs, different results


# -- ZNE around any executor ---------------------------------------------------------------------------


def test_zne_on_default_mixed_with_channels_in_the_circuit_moves_towards_noiseless():
    x = torch.rand(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    clean = twin("pennylane:default.mixed", with_noise(0.0))
    plain = twin("pennylane:default.mixed", with_noise(P))
    mitigated = twin("pennylane:default.mixed", with_noise(P), mitigation=ZNE(scale_factors=(1, 3, 5)))
    with torch.no_grad():
        exact, raw, zne = clean(x), plain(x), mitigated(x)
    assert (raw - exact).abs().mean() > 0.05  # the channels matter
    assert (zne - exact).abs().mean() < 0.25 * (raw - exact).abs().mean()
    record = mitigated.last_mitigation
    assert record.noisy.shape == (3, 3, 2) and np.allclose(record.noisy[0], raw.numpy(), atol=1e-12)
    tape = mitigated.tape(x)  # the same through execute() directly
    run = execute(mitigated.resolved_backend, [tape], ExecutionConfig(WIRES, mitigation=ZNE(scale_factors=(1, 3, 5))))
    torch.testing.assert_close(torch.stack(run.results[0], -1).detach(), zne, rtol=0, atol=1e-12)
    assert run.stats.circuits == 3 * 3 and run.stats.calls == 1


def test_zne_on_a_plugin_executor_with_shift_rule_gradients_equals_default_mixed_backprop():
    zne = ZNE(scale_factors=(1, 3, 5))
    x = torch.rand(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    plugin = twin(ShiftRuleQPU(), with_noise(P), mitigation=zne)
    reference = twin("pennylane:default.mixed", with_noise(P), mitigation=zne, diff_method="backprop")
    got, want = values_and_grads(plugin, x), values_and_grads(reference, x)
    for a, b in zip(got, want, strict=True):  # values, d/d inputs, d/d weights
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    assert got[1].abs().min() > 1e-3 and got[2].abs().min() > 1e-3  # real gradients, not zeros
    clean = twin("statevector")
    with torch.no_grad():
        exact, raw = clean(x), twin(ShiftRuleQPU(), with_noise(P))(x)
    assert (got[0] - exact).abs().mean() < 0.2 * (raw - exact).abs().mean()
    assert plugin.execution_stats["calls"] == 1 and plugin.execution_stats["circuits"] == 3 * 3


def test_plugin_without_noise_equals_statevector_for_one_and_several_measurements():
    def single(inputs, weights):
        gates(inputs, weights)
        return qml.expval(qml.PauliY(1))

    x = torch.rand(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    for circuit in (single, layered):
        got, want = (
            values_and_grads(twin(ShiftRuleQPU(), circuit), x),
            values_and_grads(twin("statevector", circuit), x),
        )
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_plugin_shift_rule_gradients_equal_finite_differences():
    zne = ZNE(scale_factors=(1, 2, 3), folding="random", seed=4)  # the same random folds at every call
    layer = twin(ShiftRuleQPU(noise=0.02), mitigation=zne)
    x = torch.rand(2, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    _, gx, gw = values_and_grads(layer, x)
    cot = torch.tensor([0.8, -1.3], dtype=torch.float64)
    h = 1e-6
    with torch.no_grad():
        for tensor, grad in ((x, gx), (layer.weights, gw)):
            flat = tensor.view(-1)
            for i in range(flat.numel()):
                flat[i] += h
                up = (layer(x) * cot).sum()
                flat[i] -= 2 * h
                down = (layer(x) * cot).sum()
                flat[i] += h
                assert grad.view(-1)[i].item() == pytest.approx(((up - down) / (2 * h)).item(), abs=1e-7)


def test_all_folded_tapes_of_a_batch_go_to_the_executor_in_one_call():
    zne = ZNE(scale_factors=(1, 3, 5))
    counting = Counting(backends.get("pennylane:default.mixed"))
    layer = twin(counting, with_noise(P), mitigation=zne)
    with torch.no_grad():
        layer(torch.rand(4, 2, dtype=torch.float64))
    assert counting.calls == [(3, True, None)]  # 1 tape x 3 scale factors, folds kept, mitigation applied here

    def feature_map(x):
        qml.AngleEmbedding(x, wires=range(2))
        qml.CNOT(wires=[0, 1])
        qml.DepolarizingChannel(P, wires=1)

    counting.calls.clear()
    kernel = QuantumKernel(feature_map, 2, backend=counting, mitigation=zne, block_size=2)
    with torch.no_grad():
        K = kernel.matrix(torch.rand(4, 2, dtype=torch.float64))
    assert counting.calls == [(3 * 3, True, None)]  # 6 pairs in blocks of 2: 3 tapes x 3 folds, ONE call
    assert K.shape == (4, 4) and kernel.execution_stats["calls"] == 1


def test_an_executor_that_runs_the_engine_itself_gets_the_call_unchanged():
    class OwnZNE(Counting):
        @property
        def capabilities(self):
            return dataclasses.replace(self.inner.capabilities, mitigation_engines=("ibm",))

        def execute(self, tapes, config):
            self.calls.append((len(tapes), config.keep_gates, config.mitigation))
            return self.inner.execute(tapes, config.replace(mitigation=None))  # stands in for the engine

    own, zne = OwnZNE(backends.get("pennylane:default.mixed")), ZNE(engine="ibm")
    tape = qml.tape.make_qscript(with_noise(P))(torch.rand(2, 2), torch.rand(3))
    run = execute(own, [tape], ExecutionConfig(WIRES, mitigation=zne))
    assert own.calls == [(1, False, zne)] and run.mitigation is None
    with pytest.raises(ConfigError, match="engine='mitiq'"):
        execute(Counting(backends.get("pennylane:default.mixed")), [tape], ExecutionConfig(WIRES, mitigation=zne))
    with pytest.raises(ConfigError, match="mitigation='zne'"):
        execute(own, [tape], ExecutionConfig(WIRES, mitigation="zne"))


@pytest.mark.filterwarnings("ignore:The input circuit is very short")
def test_zne_equals_mitiq_execute_with_zne_on_the_same_noisy_executor():
    cirq = pytest.importorskip("cirq")
    from mitiq import zne as mitiq_zne
    from mitiq.zne.inference import RichardsonFactory
    from mitiq.zne.scaling import fold_global

    angles = [0.3, 1.1, -0.7]
    q = cirq.LineQubit.range(2)
    circuit = cirq.Circuit([cirq.ry(angles[0]).on(q[0]), cirq.ry(angles[1]).on(q[1]), cirq.CNOT(q[0], q[1]),
                            cirq.rx(angles[2]).on(q[0])])  # fmt: skip

    def noisy_cirq(c):  # a depolarizing channel after every gate, as ShiftRuleQPU(noise=P) runs them
        noisy = cirq.Circuit()
        for op in c.all_operations():
            noisy.append([op, *(cirq.depolarize(P).on(w) for w in op.qubits)], strategy=cirq.InsertStrategy.NEW)
        rho = cirq.DensityMatrixSimulator(dtype=np.complex128).simulate(noisy).final_density_matrix
        return float(np.real(np.trace(rho @ np.kron(np.diag([1, -1]), np.eye(2)))))

    want = mitiq_zne.execute_with_zne(
        circuit, noisy_cirq, factory=RichardsonFactory([1, 3, 5]), scale_noise=fold_global
    )

    def ours(inputs, weights):
        qml.RY(weights[0], wires=0)
        qml.RY(weights[1], wires=1)
        qml.CNOT(wires=[0, 1])
        qml.RX(weights[2], wires=0)
        return qml.expval(qml.PauliZ(0))

    layer = QuantumLayer(
        ours, 2, {"weights": 3}, backend=ShiftRuleQPU(noise=P), mitigation=ZNE(scale_factors=(1, 3, 5))
    )
    with torch.no_grad():
        layer.double().weights.copy_(torch.tensor(angles, dtype=torch.float64))
        got = layer(torch.zeros(1, 2, dtype=torch.float64))
    assert got.item() == pytest.approx(want, abs=1e-9)
    assert abs(want - noisy_cirq(circuit)) > 1e-3  # extrapolation changed the value
