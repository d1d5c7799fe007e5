"""Tapes converted once per structure: the Qiskit circuit and observables are built for the first tape of a
structure and reused, with the new tape's parameter values, for every later tape of the same structure.

``qiskit_frontend.conversion.convert`` builds a ``QuantumCircuit`` and ``SparsePauliOp`` observables on every
call: milliseconds for a small circuit, a third of a second for ``probs`` of 6 qubits (64 projectors), where the
simulation itself takes less. Here only the gates are read per tape (``qiskit_gates``: the gate names, qubits,
constant matrices and the parameter values), and the measurements as exact numbers (their Pauli terms'
coefficients, ``pauli_terms``, or the measured wires); tapes that agree on both share one ``Converted`` skeleton, in
every backend (Qiskit's transpiler and hybridai's planning read circuits and observables, never modify them).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from hybridai.quantum.qiskit_frontend.conversion import Converted, convert, gate_key, pauli_terms, qiskit_gates


def structure_key(tape: Any, wires: list) -> tuple[tuple, list[Any]] | None:
    """``(key, params)``: the tape's structure (gates and measurements, exactly) and its parameters, one per
    parametric gate; None when a measurement is one ``convert`` refuses (it then says why)."""
    position = {w: i for i, w in enumerate(wires)}
    gates, params = qiskit_gates(tape.operations, position, wires)
    measured = []
    for mp in tape.measurements:
        kind = type(mp).__name__
        if kind in ("ExpectationMP", "VarianceMP") and mp.obs is not None:
            terms = tuple((c, tuple(sorted(word.items()))) for c, word in pauli_terms(mp.obs, position))
            measured.append((kind, terms))
        elif kind == "ProbabilityMP" and mp.obs is None:
            measured.append((kind, tuple(position.get(w, w) for w in (mp.wires or wires))))
        else:
            return None
    return (len(wires), gate_key(gates), tuple(measured)), params


_SKELETONS: dict[tuple, Converted] = {}  # structure -> the first tape's conversion (never modified), for all backends
_LOCK = threading.Lock()
LIMIT = 2048  # structures kept; beyond it, the oldest goes


def converted(tape: Any, wires: list) -> Converted:
    """``convert(tape, wires)``, with the circuit and observables of an earlier tape of the same structure (shared by
    every backend and thread: a circuit and its observables do not depend on the backend)."""
    found = structure_key(tape, wires)
    if found is None:
        return convert(tape, wires)  # raises what it cannot express
    key, params = found
    with _LOCK:
        skeleton = _SKELETONS.get(key)
    if skeleton is None:
        skeleton = dataclasses.replace(convert(tape, wires), params=[])  # no tensors (nor their graphs) kept
        with _LOCK:
            if len(_SKELETONS) >= LIMIT:
                del _SKELETONS[next(iter(_SKELETONS))]
            skeleton = _SKELETONS.setdefault(key, skeleton)
    return Converted(skeleton.circuit, params, skeleton.observables, skeleton.post, skeleton.key, skeleton.channels)


__all__ = ["converted", "structure_key"]
