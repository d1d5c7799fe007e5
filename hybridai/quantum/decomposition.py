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
from hybridai.quantum.recording import recording

MAX_DEPTH = 12  # levels of decomposition below an operation of the tape (templates nest a few levels)


def walk(operations: Iterable[Any], take: Callable[[Any], bool], *, cannot: str, remedy: str) -> None:
    """Offer every operation to ``take``, decomposing those it does not take (module docstring).

    ``cannot`` starts the refusal ("the statevector backend cannot apply"), ``remedy`` ends it (what to do
    instead)."""

    def visit(op: Any, depth: int) -> None:
        if take(op):
            return
        if not op.has_decomposition or depth >= MAX_DEPTH:
            why = "no decomposition" if not op.has_decomposition else f"not within {MAX_DEPTH} levels of decomposition"
            raise UnsupportedOperationError(f"{cannot} {op.name} on wires {list(op.wires)} ({why}); {remedy}")
        for sub in op.decomposition():
            visit(sub, depth + 1)

    with recording():
        for op in operations:
            visit(op, 0)


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
