"""Re-binding: a QuantumLayer reuses its recorded circuit with new inputs and weights only where that is provably
the same circuit; every other circuit is recorded again, and results always equal recording every call."""

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


def pair(circuit, shapes=None, **options):
    """The same layer twice (same weights): re-binding on, and off."""
    shapes = shapes or {"weights": (4, 3)}
    qfunc, calls = counted(circuit)
    torch.manual_seed(0)
    fast = QuantumLayer(qfunc, 3, shapes, **options).double()
    slow = QuantumLayer(circuit, 3, shapes, rebind=False, **options).double()
    slow.load_state_dict(fast.state_dict())
    return fast, slow, calls


def test_rebound_training_equals_recording_every_call():
    fast, slow, calls = pair(template_circuit)
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
    assert len(calls) == 2  # recorded on the first two calls (compared), re-bound on the other four


def test_a_circuit_whose_structure_depends_on_the_input_shape_is_recorded_per_shape():
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        if inputs.shape[0] > 4:  # a shape, not a value: part of the key
            qml.PauliX(wires=0)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, calls = pair(circuit)
    gen = torch.Generator().manual_seed(2)
    for batch in (3, 3, 3, 6, 6, 6, 3, 6):
        x = torch.rand(batch, 3, dtype=torch.float64, generator=gen)
        assert torch.equal(fast(x), slow(x))
    assert len(calls) == 4  # two recordings per batch size, then re-bound


def test_a_branch_on_values_is_recorded_every_call():
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        if inputs[..., 0].max() > 0.5:  # reads a value: another circuit for other inputs
            qml.PauliX(wires=1)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, calls = pair(circuit)
    for first in (0.1, 0.2, 0.3, 0.9, 0.8, 0.1):
        x = torch.full((2, 3), 0.4, dtype=torch.float64)
        x[0, 0] = first
        assert torch.equal(fast(x), slow(x))
    assert len(calls) == 6


def test_parameters_computed_from_the_arguments_are_recorded_every_call():
    def circuit(inputs, weights):
        qml.RX(2 * inputs[:, 0], wires=0)  # computed from inputs: only qfunc recomputes it
        qml.RY(weights[0, 1], wires=1)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, slow, calls = pair(circuit)
    gen = torch.Generator().manual_seed(3)
    for _ in range(4):
        x = torch.rand(4, 3, dtype=torch.float64, generator=gen)
        assert torch.equal(fast(x), slow(x))
    assert len(calls) == 4


def test_a_circuit_that_changes_between_its_first_calls_is_never_rebound():
    state = {"calls": 0}

    def circuit(inputs, weights):
        state["calls"] += 1
        qml.AngleEmbedding(inputs, wires=range(3))
        if state["calls"] % 2:  # outside state: caught when the first two recordings differ
            qml.Hadamard(wires=2)
        qml.BasicEntanglerLayers(weights, wires=range(3))
        return [qml.expval(qml.PauliZ(i)) for i in range(3)]

    fast, _, calls = pair(circuit)
    x = torch.rand(2, 3, dtype=torch.float64)
    results = [fast(x) for _ in range(4)]
    assert len(calls) == 4
    assert not torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])


def test_one_layer_shared_by_threads_gives_each_its_own_result():
    fast, slow, _ = pair(template_circuit)
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


def test_copies_start_empty_and_bad_values_are_refused():
    fast, slow, _ = pair(template_circuit)
    x = torch.rand(3, 3, dtype=torch.float64)
    for _ in range(3):
        fast(x)
    twin = copy.deepcopy(fast)
    assert not twin._rebinding._seen  # a cache: not copied
    assert torch.equal(twin(x), slow(x))
    assert torch.equal(fast(x), slow(x))
    with pytest.raises(ConfigError, match="rebind"):
        QuantumLayer(template_circuit, 3, {"weights": (4, 3)}, rebind="yes")
