"""Quantum channels as Pauli transfer matrices (PTMs): real matrices that act on a density matrix's Pauli coefficients.

A density matrix on k qubits is ``rho = sum_j c_j P_j / 2^k`` with real ``c_j = tr(rho P_j)``; a channel E maps the
coefficients by the real matrix ``R[i, j] = tr(P_i E(P_j)) / 2^k``, and a channel on some qubits of a register is
R on those qubits' Pauli axes (identity elsewhere). The basis: per qubit ``I, X, Y, Z`` (index 0..3); on several
qubits the index is big-endian over the qubit tuple the matrix is given for (the first qubit is the most
significant digit). A Qiskit matrix on ``qargs`` is big-endian over ``reversed(qargs)`` (Qiskit's qubit 0 is the
least significant bit), which is the order these functions return for it.

Why PTMs and not complex superoperators: everything is real (a quarter of the multiply-adds of complex matrices,
half the memory), Pauli expectations are read off the coefficients, and a rotation gate's PTM is a trigonometric
polynomial of its angle, ``A + sum_f cos(f a) C_f + sin(f a) S_f`` (``expand``), evaluated for a whole batch.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

PAULIS = np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]], [[0, -1j], [1j, 0]], [[1, 0], [0, -1]]], dtype=np.complex128)
LETTER_CODES = {"I": 0, "X": 1, "Y": 2, "Z": 3}
FREQUENCIES = (0.5, 1.0)  # of U(a) (x) conj(U(a)) for rotations (1) and controlled rotations (1/2 and 1)
FIT_TOLERANCE = 1e-10


@functools.cache
def pauli_basis(k: int) -> np.ndarray:
    """The ``4^k`` Pauli matrices on k qubits, ``[4^k, 2^k, 2^k]`` (read-only)."""
    basis = np.ones((1, 1, 1), dtype=np.complex128)
    for _ in range(k):
        basis = np.einsum("aij,bkl->abikjl", basis, PAULIS).reshape(basis.shape[0] * 4, *(2 * basis.shape[1],) * 2)
    basis.setflags(write=False)
    return basis


def _real(matrix: np.ndarray, what: str) -> np.ndarray:
    if np.abs(matrix.imag).max(initial=0.0) > 1e-9:
        raise ValueError(f"{what} is not Hermiticity-preserving (imaginary PTM entries)")
    return np.ascontiguousarray(matrix.real)


def ptm_of_unitary(u: np.ndarray) -> np.ndarray:
    """The PTM of ``rho -> U rho U^dagger`` (same qubit order as U's rows)."""
    k = int(round(math.log2(u.shape[0])))
    basis = pauli_basis(k)
    conjugated = u @ basis @ u.conj().T  # U P_j U^dagger, [4^k, d, d]
    return _real(np.einsum("iab,jba->ij", basis, conjugated) / 2**k, "a unitary")


def ptm_of_superop(column_stacked: np.ndarray) -> np.ndarray:
    """The PTM of a channel given as Qiskit's ``SuperOp`` data (column-stacking: ``vec(rho)[i + d j] = rho[i, j]``)."""
    d = int(round(math.sqrt(column_stacked.shape[0])))
    k = int(round(math.log2(d)))
    row_major = column_stacked.reshape(d, d, d, d).transpose(1, 0, 3, 2).reshape(d * d, d * d)
    vectors = pauli_basis(k).reshape(4**k, d * d).T  # column j: P_j, row-major
    return _real(vectors.conj().T @ row_major @ vectors / d, "a channel")


def reorder(ptm: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    """``ptm`` on qubits ``qs`` given for ``(qs[order[0]], qs[order[1]], ...)``: its axes permuted."""
    k = len(order)
    if order == tuple(range(k)):
        return ptm
    tensor = ptm.reshape((4,) * (2 * k)).transpose(*order, *(k + o for o in order))
    return np.ascontiguousarray(tensor.reshape(4**k, 4**k))


def embed(ptm: np.ndarray, positions: tuple[int, ...], k: int) -> np.ndarray:
    """A PTM on ``len(positions)`` of ``k`` qubits (at ``positions``, in that order) as a ``4^k`` matrix."""
    j = len(positions)
    if j == k and positions == tuple(range(k)):
        return ptm
    others = [p for p in range(k) if p not in positions]
    full = np.kron(ptm, np.eye(4 ** len(others)))  # on (positions..., others...)
    order = list(positions) + others
    inverse = tuple(order.index(p) for p in range(k))
    return reorder(full, inverse)


class Expansion:
    """The PTM of a one-angle gate as ``A + sum_f cos(f a) C_f + sin(f a) S_f`` (``terms``: ``(f, C_f, S_f)``)."""

    def __init__(self, constant: np.ndarray, terms: tuple[tuple[float, np.ndarray, np.ndarray], ...]) -> None:
        self.constant, self.terms = constant, terms

    def at(self, angle: float) -> np.ndarray:
        """The PTM at ``angle`` (for checks)."""
        return self.constant + sum(math.cos(f * angle) * c + math.sin(f * angle) * s for f, c, s in self.terms)

    def reordered(self, order: tuple[int, ...]) -> Expansion:
        return Expansion(reorder(self.constant, order),
                         tuple((f, reorder(c, order), reorder(s, order)) for f, c, s in self.terms))  # fmt: skip

    @property
    def frequencies(self) -> tuple[float, ...]:
        return tuple(f for f, _, _ in self.terms)


def expand(ptm_at: Any) -> Expansion | None:
    """The ``Expansion`` of ``ptm_at(angle)`` (a one-angle gate's PTM), fitted exactly on angles over a 4 pi period;
    None when it is not such a polynomial with frequencies in ``FREQUENCIES`` (the gate cannot be expanded)."""
    samples = np.arange(9) * (4 * math.pi / 9)
    functions = [np.ones_like(samples)]
    for f in FREQUENCIES:
        functions += [np.cos(f * samples), np.sin(f * samples)]
    design = np.stack(functions, 1)  # [9, 1 + 2F]
    values = np.stack([ptm_at(float(a)) for a in samples])  # [9, D, D]
    coefficients, *_ = np.linalg.lstsq(design, values.reshape(len(samples), -1), rcond=None)
    coefficients = coefficients.reshape(-1, *values.shape[1:])
    terms = []
    for i, f in enumerate(FREQUENCIES):
        c, s = coefficients[1 + 2 * i], coefficients[2 + 2 * i]
        c[np.abs(c) < 1e-15], s[np.abs(s) < 1e-15] = 0.0, 0.0
        if np.abs(c).max() > 0 or np.abs(s).max() > 0:
            terms.append((f, c, s))
    constant = coefficients[0]
    constant[np.abs(constant) < 1e-15] = 0.0
    expansion = Expansion(constant, tuple(terms))
    for angle in (0.123, 2.718, -1.9):  # off the fitted grid
        if np.abs(expansion.at(angle) - ptm_at(angle)).max() > FIT_TOLERANCE:
            return None
    return expansion
