"""The one decomposition walk that the Qiskit conversion, the statevector executor, its parameter-shift form
and ZNE folding share: pieces in order, one depth limit, one refusal naming the operation."""

import gc
import weakref

import pennylane as qml
import pytest
import torch

from hybridai.core.errors import UnsupportedOperationError
from hybridai.quantum.circuits.decomposition import MAX_DEPTH, decompose, walk
from hybridai.quantum.circuits.recording import recording


class Opaque(qml.operation.Operation):
    """A gate with neither a matrix nor a decomposition."""

    num_wires = 1
    num_params = 1


class Loop(qml.operation.Operation):
    """A gate whose decomposition is itself, forever."""

    num_wires = 1

    @staticmethod
    def compute_decomposition(wires):
        return [Loop(wires=wires)]


def built(function):
    with recording():
        return function()


def test_pieces_come_in_order_and_skipped_ones_are_dropped():
    ops = built(lambda: [qml.Rot(0.1, 0.2, 0.3, wires=0), qml.Barrier(wires=[0, 1]), qml.CRX(0.4, wires=[0, 1])])
    pieces = decompose(ops, lambda op: op.name in ("RZ", "RY", "RX", "CNOT"), skip=lambda op: op.name == "Barrier",
                       cannot="test cannot take", remedy="none")  # fmt: skip
    assert [p.name for p in pieces] == ["RZ", "RY", "RZ", "RZ", "RY", "CNOT", "RY", "CNOT", "RZ"]
    assert qml.math.allclose(qml.matrix(qml.tape.QuantumScript(pieces), wire_order=[0, 1]),
                             qml.matrix(qml.tape.QuantumScript(ops), wire_order=[0, 1]))  # fmt: skip


def test_an_operation_without_decomposition_is_refused_by_name_and_wires():
    ops = built(lambda: [qml.Hadamard(0), Opaque(0.3, wires=2)])
    refusal = r"^test cannot take Opaque on wires \[2\] \(no decomposition\); do this$"
    with pytest.raises(UnsupportedOperationError, match=refusal):
        walk(ops, lambda op: op.name == "Hadamard", cannot="test cannot take", remedy="do this")


def test_one_depth_limit():
    seen = []

    def take(op):
        seen.append(op.name)
        return False

    with pytest.raises(UnsupportedOperationError, match=f"Loop on wires \\[0\\] \\(not within {MAX_DEPTH} levels"):
        walk(built(lambda: [Loop(wires=0)]), take, cannot="test cannot take", remedy="none")
    assert len(seen) == MAX_DEPTH + 1


def test_the_walk_leaves_no_reference_cycle():
    # a cycle would keep ``take`` (and what it holds: an executor's converted gates) until the garbage collector ran
    ops = built(lambda: [qml.StronglyEntanglingLayers(torch.ones(2, 3, 3), wires=range(3)), qml.Rot(1, 2, 3, wires=0)])
    taken = []

    def take(op):
        taken.append(op.name)
        return op.name in ("Rot", "CNOT")

    held = weakref.ref(take)
    gc.disable()
    try:
        walk(ops, take, cannot="test cannot take", remedy="none")
        del take
        assert held() is None
    finally:
        gc.enable()
    assert taken == ["StronglyEntanglingLayers"] + ["Rot", "Rot", "Rot", "CNOT", "CNOT", "CNOT"] * 2 + ["Rot"]


def test_every_walker_refuses_through_the_shared_walk():
    from hybridai.quantum.mitigation.folding import elementary_ops
    from hybridai.quantum.qiskit_frontend.conversion import convert
    from hybridai.quantum.statevector.gates import Converter
    from hybridai.quantum.statevector.shifts import shift_form

    opaque = built(lambda: [Opaque(torch.tensor(0.3, requires_grad=True), wires=0)])
    loop = built(lambda: [Loop(wires=0)])
    with pytest.raises(UnsupportedOperationError, match=r"the Qiskit conversion cannot express Opaque on wires \[0\]"):
        convert(qml.tape.QuantumScript(opaque, [qml.expval(qml.PauliZ(0))]), [0])
    with pytest.raises(UnsupportedOperationError, match=r"the statevector backend cannot apply Opaque on wires \[0\]"):
        Converter({0: 0}, torch.complex128, torch.device("cpu")).convert(opaque)
    with pytest.raises(UnsupportedOperationError, match="parameter-shift gradients .* cannot pass through Opaque"):
        shift_form(opaque)
    assert elementary_ops(opaque) == opaque  # folding keeps what has no decomposition (a noise channel, say)
    with pytest.raises(UnsupportedOperationError, match=f"zero-noise folding cannot fold Loop .*{MAX_DEPTH} levels"):
        elementary_ops(loop)
