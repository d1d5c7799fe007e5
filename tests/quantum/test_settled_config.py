"""The call settled once: shots, seed and ``diff_method="best"`` final before any executor runs.

``hybridai.quantum.execution.run.execute`` settles the call (``QuantumExecutor.settle``) and every executor
receives the settled config; an executor called directly settles it itself. Zero-noise extrapolation reads what
an executor needs from its capabilities (``folds_need_barriers``, ``runs_channels``) and its
``native_operations``.
"""

import warnings

import pennylane as qml
import pytest
import torch

from hybridai import ZNE, backends
from hybridai.backends import Execution, ExecutionConfig, ExecutionStats, QuantumCapabilities, QuantumExecutor
from hybridai.core.errors import ConfigError
from hybridai.quantum.execution.run import execute
from hybridai.quantum.mitigation.folding import is_fold_barrier

WIRES = (0, 1)
EXECUTORS = ("statevector", "pennylane:default.qubit", "aer", "density")
# what "best" means on each executor, without shots and with shots
BEST = {
    "statevector": ("backprop", "parameter-shift"),
    "pennylane:default.qubit": ("backprop", "parameter-shift"),
    "aer": ("parameter-shift", "parameter-shift"),
    "density": ("backprop", "parameter-shift"),
}


def tape(shots=None, weight=0.3):
    w = torch.tensor(weight, dtype=torch.float64, requires_grad=True)
    return qml.tape.QuantumScript(
        [qml.RX(w, 0), qml.CNOT([0, 1]), qml.RY(w, 1)], [qml.expval(qml.PauliZ(1))], shots=shots
    )


def received(monkeypatch, backend):
    """The (tapes, config) pairs ``backend.execute`` is called with."""
    calls = []
    original = backend.execute

    def spy(tapes, config):
        calls.append((list(tapes), config))
        return original(tapes, config)

    monkeypatch.setattr(backend, "execute", spy)
    return calls


@pytest.mark.parametrize("name", EXECUTORS)
def test_tape_shots_reach_every_executor_as_the_config_shots(name, monkeypatch):
    backend = backends.get(name)
    calls = received(monkeypatch, backend)
    run = execute(backend, [tape(shots=100)], ExecutionConfig(WIRES, seed=5))
    ((tapes, config),) = calls
    assert config.shots == 100
    assert config.diff_method == BEST[name][1]
    assert [t.shots.total_shots for t in tapes] == [100]
    assert run.stats.shots == 100 * run.stats.circuits > 0


@pytest.mark.parametrize("name", EXECUTORS)
def test_config_shots_win_over_tape_shots_and_every_tape_carries_them(name, monkeypatch):
    backend = backends.get(name)
    calls = received(monkeypatch, backend)
    execute(backend, [tape(shots=100), tape()], ExecutionConfig(WIRES, shots=40, seed=5))
    ((tapes, config),) = calls
    assert config.shots == 40
    assert [t.shots.total_shots for t in tapes] == [40, 40]


@pytest.mark.parametrize("name", EXECUTORS)
def test_best_becomes_the_method_the_executor_declares(name, monkeypatch):
    backend = backends.get(name)
    calls = received(monkeypatch, backend)
    execute(backend, [tape()], ExecutionConfig(WIRES))
    execute(backend, [tape()], ExecutionConfig(WIRES, shots=50, seed=1))
    assert tuple(config.diff_method for _, config in calls) == BEST[name]
    assert [config.shots for _, config in calls] == [None, 50]


@pytest.mark.parametrize("name", EXECUTORS)
def test_a_direct_call_is_settled_as_execute_settles_it(name):
    backend = backends.get(name)
    direct = backend.execute([tape(shots=64)], ExecutionConfig(WIRES, seed=3))
    assert direct.stats.shots == 64 * direct.stats.circuits > 0
    settled = backend.settle([tape(shots=64)], ExecutionConfig(WIRES, seed=3))
    assert backend.settle(*settled) == settled  # settled arguments come back unchanged


def test_the_executor_default_shots_and_seed_apply_where_the_call_sets_none():
    backend = backends.get("statevector", shots=30, seed=9)
    _, config = backend.settle([tape()], ExecutionConfig(WIRES))
    assert (config.shots, config.seed) == (30, 9)
    _, config = backend.settle([tape(shots=70)], ExecutionConfig(WIRES, seed=2))
    assert (config.shots, config.seed) == (70, 2)  # the tapes' shots, then the executor's; the config's seed


def test_the_statevector_executor_samples_with_the_tape_shots_reproducibly():
    backend = backends.get("statevector")
    first, second = (backend.execute([tape(shots=20)], ExecutionConfig(WIRES, seed=4)) for _ in range(2))
    exact = backend.execute([tape()], ExecutionConfig(WIRES)).results[0]
    assert torch.equal(first.results[0], second.results[0])
    assert not torch.equal(first.results[0], exact)  # 20 samples, not the exact value


def test_tapes_of_one_call_with_different_shots_are_refused():
    backend = backends.get("statevector")
    with pytest.raises(ConfigError, match=r"shots=\[10, 20\].*one number of shots for all tapes"):
        execute(backend, [tape(shots=10), tape(shots=20), tape()], ExecutionConfig(WIRES))


def test_a_method_the_executor_does_not_declare_is_refused_when_settled():
    backend = backends.get("aer")
    with pytest.raises(ConfigError, match=r"diff_method='backprop'.*one of \('best', 'parameter-shift'\) on 'aer'"):
        backend.settle([tape()], ExecutionConfig(WIRES, diff_method="backprop"))


def test_statevector_best_settles_to_adjoint_when_backprop_states_exceed_max_memory():
    roomy = backends.get("statevector")
    tight = backends.get("statevector", max_memory=8 * 256 + 128)  # 2 qubits: backprop keeps more than adjoint
    assert roomy.settle([tape()], ExecutionConfig(WIRES))[1].diff_method == "backprop"
    assert tight.settle([tape()], ExecutionConfig(WIRES))[1].diff_method == "adjoint"
    with torch.no_grad():  # no gradient needed: nothing to plan, nothing to choose
        assert tight.settle([tape()], ExecutionConfig(WIRES))[1].diff_method == "backprop"


# -- plugins: what "best" means, and what zero-noise extrapolation reads --------------------------------


class Plugin(QuantumExecutor):
    """Runs tapes on default.mixed and keeps what it receives."""

    family = "settle-plugin"

    def __init__(self, caps, native=None):
        super().__init__()
        self.caps, self.native, self.calls = caps, native, []

    @property
    def capabilities(self):
        return self.caps

    def native_operations(self, tape):
        return self.native

    def execute(self, tapes, config):
        tapes, config = self.settle(tapes, config)
        self.calls.append((tapes, config))
        device = qml.device("default.mixed", wires=list(config.wires))
        results = qml.execute(tapes, device, diff_method="backprop")
        return Execution(list(results), ExecutionStats(circuits=len(tapes), calls=1))


def noisy(**changes):
    return QuantumCapabilities(differentiable=True, exact=False, noise=True, **changes)


@pytest.mark.parametrize(
    ("methods", "best"),
    [(("best",), "best"), (("best", "backprop"), "backprop"), (("parameter-shift",), "parameter-shift")],
)
def test_a_plugin_best_is_the_first_method_it_names_after_best(methods, best):
    plugin = Plugin(noisy(diff_methods=methods))
    execute(plugin, [tape()], ExecutionConfig(WIRES))
    assert plugin.calls[0][1].diff_method == best


@pytest.mark.parametrize("barriers", [True, False])
def test_zne_folds_with_barriers_where_the_capability_asks_for_them(barriers):
    plugin = Plugin(noisy(diff_methods=("best", "backprop"), folds_need_barriers=barriers))
    execute(plugin, [tape()], ExecutionConfig(WIRES, mitigation=ZNE(scale_factors=(1.0, 3.0))))
    ((tapes, config),) = plugin.calls
    assert len(tapes) == 2
    assert any(is_fold_barrier(op) for op in tapes[1].operations) is barriers
    assert config.keep_gates is not barriers
    assert config.mitigation is None


def test_zne_folds_the_native_operations_an_executor_names():
    native = [qml.RX(0.3, 0), qml.CNOT([0, 1])]
    plugin = Plugin(noisy(diff_methods=("best", "backprop")), native=native)
    execute(plugin, [tape()], ExecutionConfig(WIRES, mitigation=ZNE(scale_factors=(1.0, 3.0))))
    ((tapes, _),) = plugin.calls
    assert [op.name for op in tapes[1].operations] == ["RX", "CNOT", "Adjoint(CNOT)", "Adjoint(RX)", "RX", "CNOT"]


def test_zne_warns_on_an_exact_executor_that_runs_channels_only_without_channels():
    plugin = Plugin(QuantumCapabilities(differentiable=True, exact=True, runs_channels=True))
    config = ExecutionConfig(WIRES, mitigation=ZNE(scale_factors=(1.0, 3.0)))
    with pytest.warns(UserWarning, match="no noise to remove"):
        execute(plugin, [tape()], config)
    with_channel = qml.tape.QuantumScript([*tape().operations, qml.DepolarizingChannel(0.1, 0)], tape().measurements)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        execute(plugin, [with_channel], config)
    assert len(plugin.calls) == 2
