"""Measurements on batched statevectors ``psi [B, 2^n]``: exact and sampled with shots.

Expectations of Pauli words use their structure: Z-words are sign vectors applied to the
probabilities (one matrix product for all of them); words with X or Y are a permutation
and phases. Other observables are applied as small dense matrices on their wires.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hybridai.core.errors import UnsupportedOperationError
from hybridai.quantum.circuits.hermiticity import check_hermitian
from hybridai.quantum.circuits.recording import recording
from hybridai.quantum.execution.sampling import counts
from hybridai.quantum.statevector.gates import SUGGESTION, Converter, exact_tensor
from hybridai.quantum.statevector.primitives import apply_matrix, bit_positions

LETTERS = {"X", "Y", "Z", "I"}


def pauli_monomial(n: int, word: dict[int, str]) -> tuple[np.ndarray, np.ndarray]:
    """(P psi)[r] = phase[r] * psi[perm[r]] for a Pauli word {position: letter}."""
    index = np.arange(2**n, dtype=np.int64)
    mask, phase = 0, np.ones(2**n, dtype=np.complex128)
    for w, letter in word.items():
        bit = (index >> (n - 1 - w)) & 1
        if letter in ("X", "Y"):
            mask |= 1 << (n - 1 - w)
        if letter == "Y":
            phase = phase * np.where(bit == 0, -1j, 1j)
        elif letter == "Z":
            phase = phase * np.where(bit == 0, 1, -1)
    return index ^ mask, phase


class _Probabilities(torch.autograd.Function):
    """``re^2 + im^2`` (a sum over a trailing axis of size 2 is slow on CPU: 17x slower at 2^16 entries), whose
    backward is ONE product, ``2 g psi``."""

    @staticmethod
    def forward(ctx, psi: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(psi)
        return psi.real.square().addcmul_(psi.imag, psi.imag)  # one new tensor (at 2^24 entries: 3x faster)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (psi,) = ctx.saved_tensors
        # real times real, one new tensor (complex times real converts g to complex first: 2x slower at 2^24)
        return torch.view_as_complex(torch.view_as_real(psi.resolve_conj()) * grad.unsqueeze(-1)).mul_(2)


def probabilities(psi: torch.Tensor) -> torch.Tensor:
    """|psi|^2 as ``[B, 2^n]`` real (two elementwise squares and a one-product backward)."""
    return _Probabilities.apply(psi)


def marginal_probs(
    psi: torch.Tensor, n: int, wires: tuple[int, ...], probs: torch.Tensor | None = None
) -> torch.Tensor:
    """Probabilities of the basis states of ``wires`` (in that order), ``[B, 2^k]``."""
    probs = (probabilities(psi) if probs is None else probs).reshape([psi.shape[0]] + [2] * n)
    others = [a + 1 for a in range(n) if a not in wires]
    if others:
        probs = probs.sum(dim=others)
    kept = sorted(wires)
    order = [kept.index(w) + 1 for w in wires]
    return probs.permute(0, *order).reshape(psi.shape[0], -1)


Z_VECTORS_KEPT = 8  # constant z_vector results kept per measurement


class Measurement:
    """One compiled measurement of a plan."""

    def __init__(self, mp: Any, n: int, converter: Converter, device: torch.device) -> None:
        self.kind = type(mp).__name__
        self.n = n
        self.converter = converter
        self.mp = mp
        obs = mp.obs
        check_hermitian(obs, "statevector")  # the real part alone would answer for another observable
        self.wires = converter.positions(mp.wires) if len(mp.wires) else tuple(range(n))
        self.words: list[tuple[dict[int, str], int]] = []  # (word, term index)
        self.z_signs: torch.Tensor | None = None
        self.monomials: list[tuple[int, torch.Tensor, torch.Tensor]] = []
        self._z_vectors: dict[tuple, torch.Tensor] = {}  # constant z_vector results (same values: same vector)
        if self.kind in ("ExpectationMP", "VarianceMP"):
            if obs is None:
                raise UnsupportedOperationError(f"{self.kind} without an observable; {SUGGESTION}")
            rep = obs.pauli_rep
            if rep is not None:
                z_cols = []
                for t, pw in enumerate(rep):
                    word = {converter.positions([w])[0]: letter for w, letter in pw.items()}
                    if all(letter == "Z" for letter in word.values()):
                        local = bit_positions(n, tuple(word))
                        parity = np.array([bin(int(x)).count("1") % 2 for x in range(2 ** len(word))])
                        z_cols.append((t, 1.0 - 2.0 * parity[local]))
                    else:
                        perm, phase = pauli_monomial(n, word)
                        self.monomials.append(
                            (t, torch.as_tensor(perm, device=device), torch.as_tensor(phase, device=device))
                        )
                self.z_terms = [t for t, _ in z_cols]
                if z_cols:
                    signs = np.stack([col for _, col in z_cols], axis=1)
                    self.z_signs = torch.as_tensor(signs, device=device)
                self.rep = rep
            else:
                self.rep = None
                self.obs_wires = converter.positions(obs.wires)
        elif self.kind not in ("ProbabilityMP", "StateMP", "DensityMatrixMP"):
            raise UnsupportedOperationError(
                f"the statevector backend measures expval, var, probs, state and density_matrix, not {self.kind}; "
                f"{SUGGESTION}"
            )

    # -- exact -----------------------------------------------------------------------------

    def _coefficients(self, mp: Any, dtype: torch.dtype) -> list[torch.Tensor]:
        return [exact_tensor(c, self.converter.device).real.to(dtype) for c in mp.obs.pauli_rep.values()]

    def _apply_obs(self, psi: torch.Tensor, mp: Any) -> torch.Tensor:
        """O psi as a vector (for variances and non-Pauli observables)."""
        if self.rep is None:
            return apply_matrix(psi, self.n, self.obs_wires, self.converter.tensor(mp.obs.matrix()))
        coeffs = self._coefficients(mp, psi.real.dtype)
        out = torch.zeros_like(psi)
        if self.z_signs is not None:
            signs = self.z_signs.to(psi.real.dtype)
            weights = torch.stack([coeffs[t] for t in self.z_terms])
            out = out + psi * (signs @ weights)
        for t, perm, phase in self.monomials:
            out = out + coeffs[t] * phase.to(psi.dtype) * psi[:, perm]
        return out

    @property
    def diagonal(self) -> bool:
        """An expectation of Z-words only: a linear function of the probabilities."""
        return self.kind == "ExpectationMP" and self.rep is not None and not self.monomials

    def z_vector(self, mp: Any, dtype: torch.dtype) -> torch.Tensor:
        """``v`` with ``<O> = probs @ v`` for a diagonal observable (``[2^n]``); kept per dtype and coefficients
        when these are plain numbers (a tensor coefficient may carry a gradient: computed every call)."""
        values = tuple(mp.obs.pauli_rep.values())
        key = (dtype, values) if all(isinstance(c, int | float | complex | np.number) for c in values) else None
        vector = self._z_vectors.get(key) if key is not None else None
        if vector is None:
            coeffs = self._coefficients(mp, dtype)
            if self.z_signs is None:
                vector = torch.zeros(2**self.n, dtype=dtype, device=self.converter.device)
            else:
                vector = self.z_signs.to(dtype) @ torch.stack([coeffs[t] for t in self.z_terms])
            if key is not None:
                if len(self._z_vectors) >= Z_VECTORS_KEPT:
                    self._z_vectors.clear()  # coefficients that change call after call: keep no history
                self._z_vectors[key] = vector
        return vector

    def _expval(self, psi: torch.Tensor, mp: Any, probs: torch.Tensor) -> torch.Tensor:
        if self.rep is None:
            return (psi.conj() * self._apply_obs(psi, mp)).sum(-1).real
        coeffs = self._coefficients(mp, psi.real.dtype)
        value = probs @ self.z_vector(mp, probs.dtype)
        for t, perm, phase in self.monomials:
            value = value + coeffs[t] * (psi.conj() * phase.to(psi.dtype) * psi[:, perm]).sum(-1).real
        return value

    def exact(self, psi: torch.Tensor, mp: Any, probs: torch.Tensor) -> torch.Tensor:
        if self.kind == "StateMP":
            return psi
        if self.kind == "ProbabilityMP":
            return (
                marginal_probs(psi, self.n, self.wires, probs)
                if mp.obs is None
                else marginal_probs(self._rotated(psi, mp), self.n, self.wires)
            )
        if self.kind == "DensityMatrixMP":
            b, k = psi.shape[0], len(self.wires)
            axes = [w + 1 for w in self.wires]
            v = psi.reshape([b] + [2] * self.n).movedim(axes, list(range(1, k + 1))).reshape(b, 2**k, -1)
            return v @ v.conj().transpose(-1, -2)
        mean = self._expval(psi, mp, probs)
        if self.kind == "ExpectationMP":
            return mean
        phi = self._apply_obs(psi, mp)
        return (phi.real**2 + phi.imag**2).sum(-1) - mean**2

    def _rotated(self, psi: torch.Tensor, mp: Any) -> torch.Tensor:
        """psi in the eigenbasis of the measured observable (probs(op=...)), else unchanged."""
        if mp.obs is None:
            return psi
        with recording():
            gates = mp.obs.diagonalizing_gates()
        for step in self.converter.convert(gates):
            if step.kind == "sq":
                for j, w in enumerate(step.wires):
                    psi = apply_matrix(psi, self.n, (w,), step.tensor[..., j, :, :])
            elif step.kind == "dense":
                psi = apply_matrix(psi, self.n, step.wires, step.tensor)
            elif step.kind == "diag":
                psi = psi * step.tensor[..., torch.as_tensor(bit_positions(self.n, step.wires), device=psi.device)]
            else:
                perm, phases = step.const
                m = torch.zeros(len(perm), len(perm), dtype=psi.dtype, device=psi.device)
                m[torch.arange(len(perm)), torch.as_tensor(perm)] = torch.as_tensor(phases, dtype=psi.dtype)
                psi = apply_matrix(psi, self.n, step.wires, m.to(psi.device))
        return psi

    # -- sampled ---------------------------------------------------------------------------

    def sampled(self, psi: torch.Tensor, mp: Any, shots: int, generator: torch.Generator) -> torch.Tensor:
        """Estimate from ``shots`` samples drawn with ``generator`` (no gradient)."""
        import pennylane as qml

        if self.kind == "ProbabilityMP":
            return counts(marginal_probs(self._rotated(psi, mp), self.n, self.wires), shots, generator) / shots
        if self.kind not in ("ExpectationMP", "VarianceMP"):
            raise UnsupportedOperationError(f"{self.kind} cannot be sampled with shots; {SUGGESTION}")
        rep = mp.obs.pauli_rep
        with recording():
            terms = (
                [(float(np.real(c)), pw.operation() if pw else None) for pw, c in rep.items()]
                if rep
                else [(1.0, mp.obs)]
            )
        if self.kind == "VarianceMP" and len(terms) > 1:
            raise UnsupportedOperationError(f"the variance of a sum of {len(terms)} terms with shots; {SUGGESTION}")
        total = torch.zeros(psi.shape[0], dtype=psi.real.dtype, device=psi.device)
        for coeff, term in terms:
            if term is None or isinstance(term, qml.Identity):
                total = total + coeff
                continue
            with recording():
                measured = qml.expval(term) if term.diagonalizing_gates() else None
                eigvals = np.real(qml.math.toarray(term.eigvals()))
            rotated = psi if measured is None else self._rotated(psi, measured)
            wires = self.converter.positions(term.wires)
            eig = torch.as_tensor(eigvals, dtype=psi.real.dtype, device=psi.device)
            freq = counts(marginal_probs(rotated, self.n, wires), shots, generator) / shots
            mean = freq @ eig
            total = total + coeff * (mean if self.kind == "ExpectationMP" else freq @ eig**2 - mean**2)
        return total


def measure_exact(
    measurements: list[Measurement], mps: list[Any], psi: torch.Tensor, rows: torch.Tensor | None = None
) -> list[torch.Tensor]:
    """All exact results of a tape; Z-word expectations together as ONE matrix product. ``rows``: the state's
    probabilities come before a basis permutation (``Plan.run_to_tail``; diagonal measurements only), whose
    inverse ``rows`` takes the Z-vectors to them."""
    probs = probabilities(psi)
    results: list[torch.Tensor | None] = [None] * len(mps)
    diagonal = [i for i, m in enumerate(measurements) if m.diagonal]
    if rows is not None and len(diagonal) < len(mps):
        raise ValueError("a permuted state's probabilities measure Z-word expectations only")
    if diagonal:
        _z_words(results, measurements, mps, diagonal, probs, rows)
    return [
        m.exact(psi, mp, probs) if result is None else result
        for result, m, mp in zip(results, measurements, mps, strict=True)
    ]


def _z_words(
    results: list,
    measurements: list[Measurement],
    mps: list[Any],
    diagonal: list[int],
    distribution: torch.Tensor,
    rows: torch.Tensor | None = None,
) -> None:
    """Fill ``results[i]`` for the diagonal measurements ``i``: their Z-vectors (``rows`` of them, when given)
    against ``distribution`` ``[B, 2^n]`` (probabilities or sample frequencies) as ONE matrix product."""
    vectors = torch.stack([measurements[i].z_vector(mps[i], distribution.dtype) for i in diagonal], dim=1)
    if rows is not None:
        vectors = vectors.index_select(0, rows)
    for i, column in zip(diagonal, (distribution @ vectors).unbind(1), strict=True):
        results[i] = column


JOINT_MAX_QUBITS = 16  # Z-word expectations share one set of samples of the whole register up to this size


def measure_sampled(
    measurements: list[Measurement], mps: list[Any], psi: torch.Tensor, shots: int, generator: torch.Generator
) -> list[torch.Tensor]:
    """All results of a tape estimated from ``shots`` samples per state. Expectations of Z-words are read
    from ONE set of samples of the whole register (as one measurement in the computational basis gives
    them all); other measurements draw their own samples in their own basis."""
    results: list[torch.Tensor | None] = [None] * len(mps)
    n = measurements[0].n if measurements else 0
    diagonal = [i for i, m in enumerate(measurements) if m.diagonal] if n <= JOINT_MAX_QUBITS else []
    if diagonal:
        _z_words(results, measurements, mps, diagonal, counts(probabilities(psi), shots, generator) / shots)
    return [
        m.sampled(psi, mp, shots, generator) if result is None else result
        for result, m, mp in zip(results, measurements, mps, strict=True)
    ]
