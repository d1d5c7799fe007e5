"""Measured circuits for sampled expectations: the Pauli labels of observables grouped into qubit-wise commuting
bases (``basis_groups``), and a transpiled circuit rotated into one basis with its used qubits measured
(``measured_circuit``)."""

from __future__ import annotations

from typing import Any


def basis_groups(observables: list[Any]) -> list[dict]:
    """Greedy qubit-wise commuting groups of the Pauli labels of ``observables`` (``SparsePauliOp``s): each a dict
    of ``letters`` (qubit -> 'X', 'Y' or 'Z'), ``labels`` (the labels it measures) and ``key`` (its letters, sorted)."""
    groups: list[dict] = []
    for obs in observables:
        for label in obs.paulis.to_labels():
            if set(label) == {"I"}:
                continue
            n = len(label)
            letters = {n - 1 - i: c for i, c in enumerate(label) if c != "I"}
            for group in groups:
                if all(group["letters"].get(q, c) == c for q, c in letters.items()):
                    group["letters"].update(letters)
                    group["labels"].add(label)
                    break
            else:
                groups.append({"letters": dict(letters), "labels": {label}})
    for group in groups:
        group["key"] = tuple(sorted(group["letters"].items()))
    return groups


def measured_circuit(circuit: Any, basis: dict, hardware: Any) -> tuple[Any, tuple[int, ...]]:
    """The circuit rotated into ``basis`` (a ``basis_groups`` entry) with its used qubits measured (clbit j: the j-th
    of them), transpiled for ``hardware`` (a backend or a ``Target``) at level 0, and those qubits. Only the qubits a
    gate or an observable touches are measured: a measured idle qubit would keep Aer from leaving it out, and a
    127-qubit device's whole register cannot be simulated."""
    from qiskit import ClassicalRegister, transpile
    from qiskit.transpiler import Target

    measured = circuit.copy()
    for q, letter in basis["letters"].items():
        if letter == "X":
            measured.h(q)
        elif letter == "Y":
            measured.sdg(q)
            measured.h(q)
    used = {measured.find_bit(q).index for i in measured.data if i.operation.name != "barrier" for q in i.qubits}
    qubits = tuple(sorted(used | set(basis["letters"])))
    bits = ClassicalRegister(len(qubits), "meas")
    measured.add_register(bits)
    for j, q in enumerate(qubits):
        measured.measure(q, bits[j])
    where = {"target": hardware} if isinstance(hardware, Target) else {"backend": hardware}
    measured = transpile(measured, **where, optimization_level=0, seed_transpiler=1234)
    return measured, qubits
