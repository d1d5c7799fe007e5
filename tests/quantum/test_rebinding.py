"""Re-binding: by default (``rebind=True``) a QuantumLayer records its circuit on every call and reuses only what
the recorded structure decides; ``rebind="unsafe"`` reuses the recorded circuit with new inputs and weights where
its checks see the same circuit. Either way, on these circuits, results equal recording every call
(``rebind=False``); ``tests/robustness/test_rebinding_soundness.py`` shows the default on circuits that read
values and outside state."""

from __future__ import annotations

import copy
import threading

import pennylane as qml
import pytest
import torch

from hybridai import QuantumLayer
from hybridai.core.errors import ConfigError


def counted(circuit):
    calls = []

    def qfunc(inputs, weights):
        calls.append(1)
        return circuit(inputs, weights)

    return qfunc, calls


def template_circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(3))
    qml.BasicEntanglerLayers(weights, wires=range(3))
    return [qml.expval(qml.PauliZ(i)) for i in range(3)]


MODES = [True, "unsafe"]


def pair(circuit, shapes=None, mode=True, **options):
    """The same layer twice (same weights): re-binding in ``mode``, and off."""
    shapes = shapes or {"weights": (4, 3)}
    qfunc, calls = counted(circuit)
    torch.manual_seed(0)
    fast = QuantumLayer(qfunc, 3, shapes, rebind=mode, **options).double()
    slow = QuantumLayer(circuit, 3, shapes, rebind=False, **options).double()
    slow.load_state_dict(fast.state_dict())
    return fast, slow, calls


@pytest.mark.parametrize("mode", MODES)
def test_rebound_training_equals_recording_every_call(mode):
    fast, slow, calls = pair(template_circuit, mode=mode)
    optimisers = [torch.optim.SGD(m.parameters(), lr=0.3) for m in (fast, slow)]
    gen = torch.Generator().manual_seed(1)
    for _ in range(6):
        x = torch.rand(5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
        x2 = x.detach().clone().requires_grad_()
        outs = [fast(x), slow(x2)]
        assert torch.equal(outs[0], outs[1])
        for out, opt in zip(outs, optimisers, strict=True):
            opt.zero_grad()
            (out * torch.arange(1.0, 4.0, dtype=torch.float64)).sum().backward()
            opt.step()
        assert torch.equal(x.grad, x2.grad) and torch.equal(fast.weights.grad, slow.weights.grad)
    assert torch.equal(fast.weights, slow.weights)
    # unsafe: recorded on the first two calls (compared), re-bound on the other four; default: every call
    assert len(calls) == (2 if mode == "unsafe" else 6)


@pytest.mark.parametrize("mode", MODES)
def test_a_circuit_whose_structure_depends_on_the_input_shape_is_recorded_per_shape(mode):
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        if inputs.shape[0] > 4:  # a shape, not a value: part of the key
            qml.PauliX(wires=0)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, calls = pair(circuit, mode=mode)
    gen = torch.Generator().manual_seed(2)
    for batch in (3, 3, 3, 6, 6, 6, 3, 6):
        x = torch.rand(batch, 3, dtype=torch.float64, generator=gen)
        assert torch.equal(fast(x), slow(x))
    assert len(calls) == (4 if mode == "unsafe" else 8)  # unsafe: two recordings per batch size, then re-bound


@pytest.mark.parametrize("mode", MODES)
def test_a_branch_on_values_is_recorded_every_call(mode):
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        if inputs[..., 0].max() > 0.5:  # reads a value: another circuit for other inputs
            qml.PauliX(wires=1)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, calls = pair(circuit, mode=mode)
    for first in (0.1, 0.2, 0.3, 0.9, 0.8, 0.1):
        x = torch.full((2, 3), 0.4, dtype=torch.float64)
        x[0, 0] = first
        assert torch.equal(fast(x), slow(x))
    assert len(calls) == 6


@pytest.mark.parametrize("mode", MODES)
def test_parameters_computed_from_the_arguments_are_recorded_every_call(mode):
    def circuit(inputs, weights):
        qml.RX(2 * inputs[:, 0], wires=0)  # computed from inputs: only qfunc recomputes it
        qml.RY(weights[0, 1], wires=1)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, calls = pair(circuit, mode=mode)
    gen = torch.Generator().manual_seed(3)
    for _ in range(4):
        x = torch.rand(4, 3, dtype=torch.float64, generator=gen)
        assert torch.equal(fast(x), slow(x))
    assert len(calls) == 4


@pytest.mark.parametrize("mode", MODES)
def test_a_circuit_that_changes_between_its_first_calls_is_never_rebound(mode):
    state = {"calls": 0}

    def circuit(inputs, weights):
        state["calls"] += 1
        qml.AngleEmbedding(inputs, wires=range(3))
        if state["calls"] % 2:  # outside state: caught when the first two recordings differ
            qml.Hadamard(wires=2)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, _, calls = pair(circuit, mode=mode)
    x = torch.rand(2, 3, dtype=torch.float64)
    results = [fast(x) for _ in range(4)]
    assert len(calls) == 4
    assert not torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])


@pytest.mark.parametrize("mode", MODES)
def test_one_layer_shared_by_threads_gives_each_its_own_result(mode):
    fast, slow, _ = pair(template_circuit, mode=mode)
    gen = torch.Generator().manual_seed(4)
    inputs = [torch.rand(b, 3, dtype=torch.float64, generator=gen) for b in (2, 2, 5, 5, 2, 5, 2, 5)]
    expected = [slow(x) for x in inputs]
    got = [None] * len(inputs)

    def work(i):
        for _ in range(3):
            got[i] = fast(inputs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(torch.equal(g, e) for g, e in zip(got, expected, strict=True))


@pytest.mark.parametrize("mode", MODES)
def test_copies_start_empty_and_bad_values_are_refused(mode):
    fast, slow, _ = pair(template_circuit, mode=mode)
    x = torch.rand(3, 3, dtype=torch.float64)
    for _ in range(3):
        fast(x)
    twin = copy.deepcopy(fast)
    assert not twin._rebinding._seen  # a cache: not copied
    assert torch.equal(twin(x), slow(x))
    assert torch.equal(fast(x), slow(x))
    with pytest.raises(ConfigError, match="rebind"):
        QuantumLayer(template_circuit, 3, {"weights": (4, 3)}, rebind="yes")


@pytest.mark.parametrize("value", ["Unsafe", "yes", 1, 0, None, "True"])
def test_rebind_modes_are_checked_by_name(value):
    assert QuantumLayer(template_circuit, 3, {"weights": (4, 3)}, rebind="unsafe")._rebinding.mode == "unsafe"
    with pytest.raises(ConfigError, match=r"rebind=.*accepted: True .*False .*'unsafe'"):
        QuantumLayer(template_circuit, 3, {"weights": (4, 3)}, rebind=value)


def test_the_default_keeps_one_entry_per_structure():
    fast, slow, calls = pair(template_circuit)
    gen = torch.Generator().manual_seed(5)
    for batch in (4, 4, 4, 2, 4, 2):
        x = torch.rand(batch, 3, dtype=torch.float64, generator=gen)
        assert torch.equal(fast(x), slow(x))
    assert len(calls) == 6 and len(fast._rebinding._seen) == 2  # recorded every call; two structures


def test_parameter_shapes_that_follow_values_get_their_own_broadcast_sizes():
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        # broadcast over the batch, or one angle for all: same gate and wires, another parameter shape
        qml.RZ(inputs[:, 1] if len(inputs[inputs > 0.5]) else inputs[0, 1], wires=2)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, _ = pair(circuit)
    for high in (True, False, True, True, False, False):
        x = torch.full((3, 3), 0.2, dtype=torch.float64) + torch.arange(3.0, dtype=torch.float64)[:, None] / 10
        x[1, 2] = 0.7 if high else 0.3
        assert torch.equal(fast(x), slow(x))
    assert len(fast._rebinding._seen) == 2


def test_a_structure_seen_for_the_first_time_is_checked_again():
    flag = [False]

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(5 if flag[0] else 0))]  # wire 5 of 3: refused

    layer = QuantumLayer(circuit, 3, {"weights": (4, 3)}).double()
    x = torch.rand(2, 3, dtype=torch.float64)
    for _ in range(3):
        layer(x)
    flag[0] = True
    with pytest.raises(ConfigError, match="wires"):
        layer(x)


def test_an_undecidable_structure_is_recorded_and_checked_every_call():
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        qml.ctrl(qml.RX(inputs[:, 0], wires=1), control=0)  # a hyperparameter that is an operator
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, calls = pair(circuit)
    gen = torch.Generator().manual_seed(6)
    for _ in range(3):
        x = torch.rand(4, 3, dtype=torch.float64, generator=gen)
        assert torch.equal(fast(x), slow(x))
    assert len(calls) == 3 and not fast._rebinding._seen


def test_unsafe_keys_hold_requires_grad_and_grad_mode():
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        if inputs.requires_grad:
            qml.Hadamard(wires=0)
        if torch.is_grad_enabled():
            qml.PauliX(wires=1)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, calls = pair(circuit, mode="unsafe")
    x = torch.rand(2, 3, dtype=torch.float64)
    for requires_grad, grad in [(False, True)] * 3 + [(True, True)] * 3 + [(True, False)] * 3 + [(False, True)]:
        with torch.set_grad_enabled(grad):
            given = [x.clone().requires_grad_(requires_grad) for _ in range(2)]
            assert torch.equal(fast(given[0]), slow(given[1]))
    assert len(calls) == 6  # two recordings per key, then re-bound
