"""Shots from the noisy states: outcome probabilities of the measured qubits, readout errors, seeded counts.

A basis group's circuit (``aer.measured_circuit``: the circuit rotated into the group's basis, transpiled as Aer
runs it, so the rotations carry their gates' noise) ends in Z measurements, each preceded by the noise model's error
on ``measure`` when it has one (``planning``: Aer applies it before the read). The probabilities of the outcomes of the
group's qubits are the Walsh-Hadamard transform of the state's Z-word coefficients (``p(z) = 2^-L sum_S (-1)^(z.S)
c_{Z_S}``); each qubit's readout error (rows: the true bit) then maps them to the probabilities of the read bits,
which is what flipping each sampled bit with the readout probabilities gives. Counts are drawn per parameter set
with a ``torch.Generator`` (``hybridai.quantum.execution.sampling.counts``, never the global RNG), and each Pauli
label's mean parity over the shots is its estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hybridai.quantum.density.plan import Plan, Readout
from hybridai.quantum.execution.sampling import counts


def sampled_readout(plan: Plan, letters: tuple[int, ...], labels: list[str], readouts: list[Any]) -> Readout:
    """The ``Readout`` of a plan measuring physical qubits ``letters`` (sorted; big-endian in the outcome index)
    for ``labels`` (Qiskit labels: the letter of qubit q is ``label[-1 - q]``); ``readouts``: each letter
    qubit's readout matrix or None."""
    sim = {q: s for s, q in enumerate(plan.physical)}
    n = len(letters)
    outcomes = np.arange(2**n)
    bits = (outcomes[:, None] >> (n - 1 - np.arange(n))[None, :]) & 1  # [2^n, n]: bit j of outcome z, MSB first
    indices = np.zeros(2**n, dtype=np.int64)
    for j, q in enumerate(letters):
        indices += bits[:, j] * 3 * 4 ** (plan.m - 1 - sim[q])  # Z (code 3) on the subset's qubits
    walsh = (-1.0) ** ((bits @ bits.T) % 2) / 2**n  # [S, z]
    confusion = np.ones((1, 1))
    for matrix in readouts:
        confusion = np.kron(confusion, np.eye(2) if matrix is None else matrix)
    signs = np.stack([(-1.0) ** (bits @ np.array([label[-1 - q] != "I" for q in letters], dtype=np.int64) % 2)
                      for label in labels], axis=1)  # fmt: skip
    return Readout(indices, walsh @ confusion, signs)


def sampled_parities(plan: Plan, state: torch.Tensor, shots: int, generator: torch.Generator) -> torch.Tensor:
    """Each label's mean parity over ``shots`` samples per row: ``[rows, W]`` (a constant: no gradient)."""
    tensors = plan.tensors(state.device, state.dtype)
    flat = state.detach().reshape(state.shape[0], -1)
    probabilities = flat[:, tensors["indices"]] @ tensors["weights"]
    drawn = counts(probabilities, shots, generator)
    return drawn @ tensors["signs"] / shots
