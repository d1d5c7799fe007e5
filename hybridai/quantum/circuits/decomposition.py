"""Decomposing PennyLane operations until every piece is one its consumer takes: the one walk shared by the
Qiskit conversion, the statevector executor (its steps and its parameter-shift form) and ZNE folding.

Each consumer takes some operations as they are (``take(op)`` returns True, having used or skipped it) and needs
the rest in smaller pieces: an operation it does not take is replaced by PennyLane's own decomposition, in order,
recursively, at most ``MAX_DEPTH`` levels deep. An operation neither taken nor decomposable (or still not taken
``MAX_DEPTH`` levels down) is refused with ONE ``UnsupportedOperationError`` naming it, its wires and why.
Decompositions are built under hybridai's PennyLane lock (``quantum.recording``), never loose in a caller's tape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hybridai.core.errors import UnsupportedOperationError
from hybridai.quantum.circuits.recording import recording

MAX_DEPTH = 12  # levels of decomposition below an operation of the tape (templates nest a few levels)


def walk(operations: Iterable[Any], take: Callable[[Any], bool], *, cannot: str, remedy: str) -> None:
    """Offer every operation to ``take``, decomposing those it does not take (module docstring).

    ``cannot`` starts the refusal ("the statevector backend cannot apply"), ``remedy`` ends it (what to do
    instead)."""

    # depth first, in order, with a stack of its own: a recursive inner function would be a reference cycle that
    # keeps every call's converted gates alive until the garbage collector runs
    with recording():
        for first in operations:
            pending = [(first, 0)]
            while pending:
                op, depth = pending.pop()
                if take(op):
                    continue
                if not op.has_decomposition or depth >= MAX_DEPTH:
                    why = (
                        "no decomposition" if not op.has_decomposition
                        else f"not within {MAX_DEPTH} levels of decomposition"
                    )  # fmt: skip
                    raise UnsupportedOperationError(f"{cannot} {op.name} on wires {list(op.wires)} ({why}); {remedy}")
                pending.extend((sub, depth + 1) for sub in reversed(list(op.decomposition())))


def decompose(
    operations: Iterable[Any],
    accept: Callable[[Any], bool],
    *,
    cannot: str,
    remedy: str,
    skip: Callable[[Any], bool] | None = None,
) -> list[Any]:
    """``operations`` decomposed until ``accept`` holds for every piece, in order; pieces where ``skip`` holds
    are dropped (identities, barriers). Refusals as ``walk``'s."""
    out: list[Any] = []

    def take(op: Any) -> bool:
        if skip is not None and skip(op):
            return True
        if accept(op):
            out.append(op)
            return True
        return False

    walk(operations, take, cannot=cannot, remedy=remedy)
    return out


ROTATIONS = ("RX", "RY", "RZ", "PhaseShift")


def controlled_rotations(operations: Iterable[Any], wider_than: int = 0) -> list[Any]:
    """``operations`` with every ``qml.ctrl`` of a one-qubit rotation (``C(RX)``, ``C(RY)``, ``C(RZ)``,
    ``C(PhaseShift)``, any number of controls and control values) written as half-angle rotations around
    multi-controlled X gates: PennyLane's own decomposition of them fails for a batch of angles (a batch of one:
    ``IndexError``), while these pieces take the angles as they are (scalars or ``[B]``, gradients through them).

    With all controls 1: ``C^n RY(t) = MCX RY(-t/2) MCX RY(t/2)`` (``X RY(a) X = RY(-a)``), the same for RZ;
    ``C^n RX(t)`` is ``C^n RZ(t)`` between Hadamards on the target; ``C^n P(t) = C^n RZ(t)`` times a phase
    ``P(t/2)`` on the last control, controlled by the others. A control value 0 is an X before and after. Only
    operations on more than ``wider_than`` wires are rewritten (narrower ones may be applied as matrices)."""
    import pennylane as qml

    out: list[Any] = []
    with recording():
        for op in operations:
            if not (op.name.startswith("C(") and getattr(op, "base", None) is not None and op.base.name in ROTATIONS
                    and len(op.base.wires) == 1 and len(op.wires) > wider_than):  # fmt: skip
                out.append(op)
                continue
            flips = [qml.PauliX(w) for w, v in zip(op.control_wires, op.control_values, strict=True) if not v]
            out += flips + _controlled(op.base.name, op.data[0], list(op.control_wires), op.target_wires[0]) + flips
    return out


def _controlled(name: str, angle: Any, controls: list[Any], target: Any) -> list[Any]:
    """``name(angle)`` on ``target`` controlled by ``controls`` (all on 1), in rotations and multi-controlled X."""
    import pennylane as qml

    if not controls:
        return [getattr(qml, name)(angle, wires=target)]
    if name == "PhaseShift":
        return _controlled("RZ", angle, controls, target) + _controlled("PhaseShift", angle / 2, controls[:-1],
                                                                         controls[-1])  # fmt: skip
    if name == "RX":
        return [qml.Hadamard(target), *_controlled("RZ", angle, controls, target), qml.Hadamard(target)]
    rotation = getattr(qml, name)
    return [rotation(angle / 2, wires=target), qml.MultiControlledX(wires=[*controls, target]),
            rotation(-angle / 2, wires=target), qml.MultiControlledX(wires=[*controls, target])]  # fmt: skip


def pauli_measure_route(op: Any) -> str:
    """Why ``qml.pauli_measure`` (``op``, a ``PauliMeasure``) cannot run, and the route that does: no PennyLane
    simulator applies it (it has no decomposition), so every backend refuses it with this text."""
    word = op.hyperparameters.get("pauli_word", "")
    return (
        f"{op.name}({word!r}, wires={list(op.wires)}) (qml.pauli_measure) has no decomposition and no PennyLane "
        "simulator applies it; accepted: the same measurement on an ancilla wire a (n_qubits + 1): qml.Hadamard(a), "
        "qml.ctrl(P, control=a) for each Pauli P of the word, qml.Hadamard(a), m = qml.measure(a, reset=True), on "
        "backend='pennylane:default.qubit'"
    )
