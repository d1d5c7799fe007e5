"""PennyLane's noise channels as Pauli transfer matrices in torch: batched over rates, differentiable (twice too).

Each channel of ``qml`` (``BitFlip``, ``PhaseFlip``, ``DepolarizingChannel``, ``AmplitudeDamping``,
``GeneralizedAmplitudeDamping``, ``PhaseDamping``, ``ResetError``, ``PauliError``, ``ThermalRelaxationError``) is
written in closed form from its Kraus maps as PennyLane defines them, so that a rate may be a constant, a trainable
weight or one value per sample (``[rows]``), and gradients reach it without the ``sqrt(p) * sqrt(p)`` of Kraus
products (whose derivative is not finite at ``p = 0``). ``QubitChannel`` (constant Kraus matrices) is a constant
PTM. Rates are checked against the ranges PennyLane accepts before they are used: a channel outside them is not a
channel (``default.mixed`` refuses it too), and would give expectations outside [-1, 1].

A PTM is ``[D, D, rows]`` (batch-last, as ``simulate`` keeps small matrices), basis ``I, X, Y, Z`` per qubit,
big-endian over the channel's qubits in the order given (``PauliError``'s operators are given in that order).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import torch

from hybridai.core.errors import ConfigError, UnsupportedOperationError
from hybridai.quantum.density.channels import pauli_basis
from hybridai.quantum.qiskit_frontend.channels import RATES, ChannelSpec


def kraus_channel_ptm(spec: ChannelSpec) -> np.ndarray:
    """The PTM of a channel given by its Kraus matrices (``QubitChannel``)."""
    return kraus_ptm(list(spec.kraus_matrices()))


def kraus_ptm(kraus: list) -> np.ndarray:
    """The PTM of the Kraus maps ``kraus`` (big-endian over the channel's wires, as PennyLane writes them):
    ``R[i, j] = sum_K tr(P_i K P_j K^dagger) / d``."""
    matrices = np.stack([np.asarray(m, dtype=np.complex128) for m in kraus])  # [K, d, d]
    d = matrices.shape[-1]
    basis = pauli_basis(int(round(math.log2(d))))
    images = np.einsum("kab,jbc,kdc->jad", matrices, basis, matrices.conj())  # E(P_j)
    out = np.einsum("iab,jba->ij", basis, images) / d
    if np.abs(out.imag).max(initial=0.0) > 1e-9:
        raise UnsupportedOperationError("a QubitChannel whose Kraus maps do not preserve Hermiticity")
    return np.ascontiguousarray(out.real)


def reordered(spec: ChannelSpec, order: tuple[int, ...]) -> ChannelSpec:
    """``spec`` on the same qubits listed as ``(qubits[order[0]], ...)``."""
    if order == tuple(range(spec.k)):
        return spec
    if spec.name == "PauliError":
        (operators,) = spec.hyper
        return ChannelSpec(spec.name, ("".join(operators[o] for o in order),), spec.rates, None, spec.k)
    # Kraus matrices on the qubits in the new order: their tensor axes permuted
    k, matrices = spec.k, spec.kraus_matrices()
    axes = matrices.reshape((len(matrices),) + (2,) * (2 * k)).transpose(
        0, *(1 + o for o in order), *(1 + k + o for o in order)
    )
    kraus = np.ascontiguousarray(axes.reshape(matrices.shape)).tobytes()
    return ChannelSpec(spec.name, spec.hyper, spec.rates, kraus, spec.k)


def check_rates(spec: ChannelSpec, rates: list[torch.Tensor]) -> None:
    """A ConfigError naming the channel and its rate when the rates are outside what PennyLane accepts (one
    synchronisation with the rates' device for all of them)."""
    names = RATES[spec.name]
    values = {n: r.detach() for n, r in zip(names, rates, strict=True)}
    if spec.name == "ThermalRelaxationError":
        pe, t1, t2, tq = (values[n] for n in names)
        checks = [
            ("pe", pe, (pe < 0) | (pe > 1), "in [0, 1]"),
            ("t1", t1, t1 <= 0, "> 0"),
            ("t2", t2, (t2 <= 0) | (t2 > 2 * t1), "> 0 and at most 2 * t1"),
            ("tq", tq, tq < 0, ">= 0"),
        ]
    else:
        checks = [(n, v, (v < 0) | (v > 1), "in [0, 1]") for n, v in values.items()]
        if spec.name == "ResetError":
            total = values["p_0"] + values["p_1"]
            checks.append(("p_0 + p_1", total, total > 1, "at most 1"))
    flags = torch.stack([(bad | ~torch.isfinite(v)).any() for _, v, bad, _ in checks])
    if flags.device.type == "meta" or not flags.any():  # meta: shapes only, no values to check
        return
    name, value, _, accepted = checks[int(flags.nonzero()[0, 0])]
    distinct = value.unique()
    shown = (distinct.item() if distinct.numel() == 1 else distinct.tolist() if distinct.numel() <= 8
             else f"{value.numel()} values in [{value.min()}, {value.max()}]")  # fmt: skip
    raise ConfigError(f"{spec.name} has {name}={shown}; accepted: {name} {accepted} (as PennyLane defines it)")


def ptm(spec: ChannelSpec, rates: list[torch.Tensor]) -> torch.Tensor:
    """The channel's PTMs ``[D, D, ...]`` for its rates (each ``[...]``: ``[rows]``, or ``[G, rows]`` for G channels
    of one kind at once)."""
    return _MAKERS[spec.name](spec, *rates)


def _single(rates: torch.Tensor, diag: tuple, z_from_i: torch.Tensor | None = None) -> torch.Tensor:
    """One-qubit PTMs ``[4, 4, ...]`` (``...``: the rates' shape): ``diag`` on the diagonal (1 for I),
    ``z_from_i`` at ``[Z, I]``."""
    one, zero = torch.ones_like(rates), torch.zeros_like(rates)
    entries = [[zero] * 4 for _ in range(4)]
    entries[0][0] = one
    for i, value in enumerate(diag, start=1):
        entries[i][i] = value
    if z_from_i is not None:
        entries[3][0] = z_from_i
    return torch.stack([torch.stack(row) for row in entries])


def _bit_flip(spec: ChannelSpec, p: torch.Tensor) -> torch.Tensor:
    flip = 1 - 2 * p
    return _single(p, (torch.ones_like(p), flip, flip))


def _phase_flip(spec: ChannelSpec, p: torch.Tensor) -> torch.Tensor:
    flip = 1 - 2 * p
    return _single(p, (flip, flip, torch.ones_like(p)))


def _depolarizing(spec: ChannelSpec, p: torch.Tensor) -> torch.Tensor:
    shrink = 1 - 4 * p / 3
    return _single(p, (shrink, shrink, shrink))


def _amplitude_damping(spec: ChannelSpec, gamma: torch.Tensor) -> torch.Tensor:
    coherence = torch.sqrt(1 - gamma)
    return _single(gamma, (coherence, coherence, 1 - gamma), gamma)


def _generalized_amplitude_damping(spec: ChannelSpec, gamma: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    gamma, p = torch.broadcast_tensors(gamma, p)
    coherence = torch.sqrt(1 - gamma)
    return _single(gamma, (coherence, coherence, 1 - gamma), gamma * (1 - 2 * p))


def _phase_damping(spec: ChannelSpec, gamma: torch.Tensor) -> torch.Tensor:
    coherence = torch.sqrt(1 - gamma)
    return _single(gamma, (coherence, coherence, torch.ones_like(gamma)))


def _reset(spec: ChannelSpec, p0: torch.Tensor, p1: torch.Tensor) -> torch.Tensor:
    p0, p1 = torch.broadcast_tensors(p0, p1)
    kept = 1 - p0 - p1
    return _single(p0, (kept, kept, kept), p0 - p1)


def _thermal(spec: ChannelSpec, pe: torch.Tensor, t1: torch.Tensor, t2: torch.Tensor, tq: torch.Tensor) -> torch.Tensor:
    """Populations relax to the thermal state (excited population ``pe``) at ``exp(-tq / t1)``, coherences decay at
    ``exp(-tq / t2)`` (PennyLane's Kraus maps for t2 <= t1, its Choi matrix otherwise: the same channel)."""
    pe, t1, t2, tq = torch.broadcast_tensors(pe, t1, t2, tq)
    relax, dephase = torch.exp(-tq / t1), torch.exp(-tq / t2)
    return _single(pe, (dephase, dephase, relax), (1 - relax) * (1 - 2 * pe))


def _pauli_error(spec: ChannelSpec, p: torch.Tensor) -> torch.Tensor:
    """``(1 - p) rho + p P rho P``: a Pauli word that anticommutes with ``P`` is scaled by ``1 - 2p``."""
    (operators,) = spec.hyper
    anticommutes = torch.as_tensor(_anticommuting(operators), dtype=p.dtype, device=p.device)  # [D]
    diagonal = 1 - 2 * p[..., None] * anticommutes  # [..., D]
    return torch.diag_embed(diagonal).movedim((-2, -1), (0, 1))


def _anticommuting(operators: str) -> np.ndarray:
    """Per Pauli word (big-endian, ``I, X, Y, Z`` per qubit): 1 if it anticommutes with ``operators``, else 0."""
    codes = {"I": 0, "X": 1, "Y": 2, "Z": 3}
    mine = [codes[c] for c in operators]
    out = []
    for word in itertools.product(range(4), repeat=len(mine)):
        flips = sum(1 for a, b in zip(word, mine, strict=True) if a and b and a != b)
        out.append(flips % 2)
    return np.array(out, dtype=np.float64)


_MAKERS: dict[str, Callable[..., torch.Tensor]] = {
    "BitFlip": _bit_flip,
    "PhaseFlip": _phase_flip,
    "DepolarizingChannel": _depolarizing,
    "AmplitudeDamping": _amplitude_damping,
    "GeneralizedAmplitudeDamping": _generalized_amplitude_damping,
    "PhaseDamping": _phase_damping,
    "ResetError": _reset,
    "PauliError": _pauli_error,
    "ThermalRelaxationError": _thermal,
}
