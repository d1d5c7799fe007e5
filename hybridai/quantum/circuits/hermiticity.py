"""Observables must be Hermitian: every backend refuses a non-Hermitian one by name, the same way.

PennyLane returns a complex expectation for ``qml.expval(qml.s_prod(1j, qml.PauliY(0)))``; hybridai's layers and
kernels return real values, and a backend that kept only the real part (or the real parts of the coefficients)
would answer 0.0 for that circuit without a word. Hermiticity is checked exactly: from the observable's Pauli
representation (every coefficient's imaginary part is zero), else PennyLane's own verification
(``is_verified_hermitian``: ``qml.Hermitian`` checked its matrix when it was made), else its matrix (equal to its
conjugate transpose).
"""

from __future__ import annotations

from typing import Any

from hybridai.core.errors import UnsupportedOperationError
from hybridai.quantum.circuits.recording import recording


def check_hermitian(obs: Any, backend: str) -> None:
    """Refuse ``obs`` (a PennyLane observable, or None) on ``backend`` when it is not Hermitian."""
    if obs is None or is_hermitian(obs):
        return
    raise UnsupportedOperationError(
        f"observable {obs} is not Hermitian (its expectation is complex) on backend {backend!r}; accepted: Hermitian "
        "observables, e.g. Pauli words and their sums with real coefficients (qml.s_prod(0.5, qml.Y(0))) or "
        "qml.Hermitian(A, wires)"
    )


def is_hermitian(obs: Any) -> bool:
    """Whether ``obs`` is Hermitian, exactly (module docstring); True when neither its Pauli representation nor its
    matrix can be read (the backend then refuses the observable for what it is)."""
    import pennylane as qml

    rep = getattr(obs, "pauli_rep", None)
    if rep is not None:
        return not any(bool(qml.math.any(qml.math.imag(c) != 0)) for c in rep.values())
    if getattr(obs, "is_verified_hermitian", False):
        return True
    try:
        with recording():
            matrix = qml.matrix(obs, wire_order=obs.wires)
    except Exception:  # no matrix: nothing to check here
        return True
    adjoint = qml.math.conj(qml.math.swapaxes(matrix, -1, -2))
    return bool(qml.math.all(matrix == adjoint))
