"""Qiskit observables (``SparsePauliOp``, ``Pauli`` or another ``BaseOperator``) -> PennyLane observables.

``read_observables(observables, n_qubits)`` checks them ONCE as ``EstimatorQNN`` takes them: one operator or a
sequence of them, each on the circuit's ``n_qubits``, Hermitian (real coefficients); ``None`` gives
EstimatorQNN's default, Z⊗Z⊗…⊗Z over all qubits (one output). Each becomes a tuple of ``(coefficient, ((wire,
letter), ...))`` terms; Qiskit's label has qubit 0 as its RIGHTMOST letter, which is PennyLane wire 0.
``expectations(terms)`` builds the ``qml.expval`` of each inside a recording.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybridai.core.errors import invalid

Terms = tuple[tuple[float, tuple[tuple[int, str], ...]], ...]
ACCEPTED = (
    "a qiskit.quantum_info SparsePauliOp (or Pauli, or another BaseOperator) on the circuit's {n} qubits, a "
    "non-empty list of them, or None (Z⊗Z⊗…⊗Z over all qubits, EstimatorQNN's default)"
)


def read_observables(observables: Any, n_qubits: int, virtual: int | None = None) -> list[Terms]:
    """One ``Terms`` per output (module docstring); a ConfigError names ``observables=`` otherwise. ``virtual``:
    the qubits the default Z acts on (a transpiled circuit's input qubits, as EstimatorQNN reads its layout)."""
    from qiskit.quantum_info.operators.base_operator import BaseOperator

    accepted = ACCEPTED.format(n=n_qubits)
    if observables is None:
        return [((1.0, tuple((q, "Z") for q in range(n_qubits if virtual is None else virtual))),)]
    if isinstance(observables, BaseOperator):
        return [_terms(observables, n_qubits, "observables", accepted)]
    if not isinstance(observables, Sequence) or isinstance(observables, str) or not observables:
        raise invalid("observables", observables, accepted)
    return [_terms(op, n_qubits, f"observables[{i}]", accepted) for i, op in enumerate(observables)]


def _shown(op: Any) -> str:
    """``op`` on one line (a SparsePauliOp as its labels and coefficients)."""
    if hasattr(op, "to_list") and hasattr(op, "paulis"):
        return f"SparsePauliOp({op.to_list()})"
    return " ".join(repr(op).split())


def _terms(op: Any, n_qubits: int, argument: str, accepted: str) -> Terms:
    from qiskit.quantum_info import Pauli, SparsePauliOp
    from qiskit.quantum_info.operators.base_operator import BaseOperator

    if not isinstance(op, BaseOperator):
        raise invalid(argument, _shown(op), accepted)
    if op.num_qubits != n_qubits:
        raise invalid(argument, _shown(op), f"an operator on {n_qubits} qubits (the circuit's), not {op.num_qubits}")
    try:
        sparse = op if isinstance(op, SparsePauliOp) else SparsePauliOp(op) if isinstance(op, Pauli) else None
        sparse = SparsePauliOp.from_operator(op) if sparse is None else sparse
    except Exception as exc:
        raise invalid(argument, _shown(op), f"{accepted} ({type(exc).__name__}: {exc})") from None
    sparse = sparse.simplify(atol=0)
    if sparse.coeffs.dtype == object:
        raise invalid(argument, _shown(op), "an operator with numeric coefficients (bind its parameters)")
    if any(abs(c.imag) > 1e-12 for c in sparse.coeffs):
        raise invalid(argument, _shown(op), "a Hermitian operator (real coefficients): an observable")
    terms = []
    for label, coeff in sparse.to_list():
        word = tuple((n_qubits - 1 - k, letter) for k, letter in enumerate(label) if letter != "I")
        terms.append((float(coeff.real), tuple(sorted(word))))
    return tuple(terms)


def expectations(observables: list[Terms]) -> list[Any]:
    """``qml.expval`` of each observable (call inside a recording)."""
    import pennylane as qml

    return [qml.expval(_observable(terms)) for terms in observables]


def _observable(terms: Terms) -> Any:
    import pennylane as qml

    letters = {"X": qml.PauliX, "Y": qml.PauliY, "Z": qml.PauliZ}

    def word(pairs: tuple[tuple[int, str], ...]) -> Any:
        if not pairs:
            return qml.Identity(0)
        ops = [letters[letter](wire) for wire, letter in pairs]
        return ops[0] if len(ops) == 1 else qml.prod(*ops)

    if len(terms) == 1 and terms[0][0] == 1.0:
        return word(terms[0][1])
    return qml.Hamiltonian([c for c, _ in terms], [word(pairs) for _, pairs in terms])
