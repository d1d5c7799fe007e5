"""What a compiled circuit is made of (``planning`` makes it, ``simulate`` runs it): blocks of pieces, the constant
Pauli transfer matrices, the parametric gates, the single-qubit chains and the readout; and their torch tensors,
made once per device and dtype.

Pieces of a block: ``("c", i)`` constant ``i``; ``("p", j)`` parametric gate ``j`` (on the block's qubits);
``("h", c)`` chain ``c`` (a one-qubit block); ``("k", (k, s))`` row ``s`` of the Kronecker products of chains of
``k``-qubit blocks (``kron_tables[k][s]``: a chain per position, -1 for the identity). A chain is a sequence of
``("c", i)`` and ``("p", j)`` factors on one qubit; all chains are evaluated at once (``chain_table``: factors as
indices into a pool of the identity, the chains' constants and the one-qubit parametric matrices).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from hybridai.quantum.density.channels import Expansion
from hybridai.quantum.qiskit_frontend.channels import ChannelSpec
from hybridai.quantum.qiskit_frontend.expressions import Angle

Factor = tuple[str, Any]


@dataclass
class Param:
    """One parametric gate: its angle and the expansion of its PTM (on its block's qubit order)."""

    angle: Angle | None
    expansion: Expansion | None
    affine: tuple[int, float, float] | None = None  # (i, a, b): the angle is a * theta[i] + b
    channel: ChannelSpec | None = None  # a PennyLane channel with rates instead of a gate (no angle, no expansion)
    varying: bool = True  # whether its matrix differs between rows (it reads a parameter given per row)
    group: int = -1  # params of one matrix size and frequency set are evaluated together
    slot: int = -1


@dataclass
class Block:
    """Consecutive operations on ``qubits`` (simulated indices, sorted), as pieces applied in order."""

    qubits: tuple[int, ...]
    pieces: list[Factor] = field(default_factory=list)


@dataclass
class Readout:
    """What a plan measures, as flat indices into the state and weights: exact, the Pauli terms of the observables
    (``[T]``) and their coefficients (``[T, R]``); sampled, the Z words on the measured qubits (``[2^L]``), the map
    of their coefficients to outcome probabilities with readout errors (``[2^L, 2^L]``) and each label's parity
    signs over the outcomes (``signs``: ``[2^L, W]``)."""

    indices: np.ndarray
    weights: np.ndarray
    signs: np.ndarray | None = None


class Plan:
    """A compiled circuit on ``m`` simulated qubits (``physical``); see the module docstring."""

    def __init__(self, physical: tuple[int, ...]) -> None:
        self.physical = physical
        self.m = len(physical)
        self.blocks: list[Block] = []
        self.constants: list[np.ndarray] = []
        self.params: list[Param] = []
        self.groups: list[tuple[int, tuple[float, ...] | None, list[int]]] = []  # (D, frequencies or None for
        # channels, params)
        self.group_varying: list[bool] = []  # per group: its matrices differ between rows (else: made once)
        self.chains: list[tuple[Factor, ...]] = []
        self.chain_table = np.zeros((0, 0), dtype=np.int64)  # [L, C] pool indices
        self.chain_varying: np.ndarray = np.zeros(0, dtype=bool)  # [C]: a chain reads a matrix that varies by row
        self.chain_constants: list[int] = []  # constants in the pool, after the identity
        self.kron_tables: dict[int, np.ndarray] = {}  # k -> [rows, k] chain indices (-1: identity)
        self.kron_varying: dict[int, np.ndarray] = {}  # k -> [rows]: the row reads a chain that varies
        self.readout: Readout | None = None
        self._tensors: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def constant(self, matrix: np.ndarray) -> Factor:
        self.constants.append(np.array(matrix, dtype=np.float64))  # a copy: cached matrices are read-only
        return ("c", len(self.constants) - 1)

    def tensors(self, device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
        """The plan's constants and tables on ``device`` in ``dtype`` (made once per device and dtype)."""
        key = (device, dtype)
        with self._lock:
            if key in self._tensors:
                return self._tensors[key]

        def put(a: Any) -> torch.Tensor:
            return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)

        def index(a: Any) -> torch.Tensor:
            return torch.as_tensor(np.asarray(a, dtype=np.int64), device=device)

        groups: list[Any] = []  # batch-last: [D, D, G] constants, [F, D, D, G] cosine and sine terms
        for _, frequencies, members in self.groups:
            if frequencies is None:  # channels: their PTMs are made from their rates in each call, kind by kind
                groups.append(self._channel_kinds(members, index))
                continue
            exps = [e for e in (self.params[i].expansion for i in members) if e is not None]  # gates: every one
            cos = put(np.moveaxis(np.array([[c for _, c, _ in e.terms] for e in exps]), 0, -1)) if frequencies else None
            sin = put(np.moveaxis(np.array([[s for _, _, s in e.terms] for e in exps]), 0, -1)) if frequencies else None
            forms = [f for f in (self.params[i].affine for i in members) if f is not None]
            affine = None
            if len(forms) == len(members):  # every angle a * theta[i] + b: one gather, one multiply-add
                affine = (index([f[0] for f in forms]), put([f[1] for f in forms]), put([f[2] for f in forms]))
            constant = put(np.moveaxis(np.array([e.constant for e in exps]), 0, -1))
            groups.append((constant, frequencies, cos, sin, affine))
        constants = [put(c) for c in self.constants]
        pool = [constants[i] for i in self.chain_constants]
        made = {
            "constants": constants,
            "groups": groups,
            "identity": put(np.eye(4)),
            "chain_pool": torch.stack([put(np.eye(4)), *pool], -1),  # [4, 4, 1 + K]
            **self._split_tables(index),
            "initial": put(_initial(self.m)),
            "indices": None if self.readout is None else index(self.readout.indices),
            "weights": None if self.readout is None else put(self.readout.weights),
            "signs": None if self.readout is None or self.readout.signs is None else put(self.readout.signs),
        }
        with self._lock:
            return self._tensors.setdefault(key, made)

    def _split_tables(self, index: Any) -> dict[str, Any]:
        """The chain and Kronecker tables split into what is the same for every row (made once, ``[D, D, ...]``)
        and what varies (``[D, D, ..., rows]``). Chains: pool indices of the constant and the varying chains; a
        chain's place among them (``chain_place``: ``(varying, position)``). Kronecker rows: indices into the
        constant chains followed by the identity, or into the varying chains, then the constant ones, then the
        identity; a row's place (``kron_place``)."""
        varying = self.chain_varying
        fixed, moving = np.flatnonzero(~varying), np.flatnonzero(varying)
        position = np.zeros(len(varying), dtype=np.int64)
        position[fixed], position[moving] = np.arange(len(fixed)), np.arange(len(moving))
        kron: dict[tuple[int, bool], Any] = {}
        kron_place: dict[tuple[int, int], tuple[bool, int]] = {}
        for k, table in self.kron_tables.items():
            rows_varying = self.kron_varying[k]
            for flag in (False, True):
                chosen = np.flatnonzero(rows_varying == flag)
                picked = table[chosen]
                if flag:  # varying chains, then the constant ones, then the identity
                    mapped = np.where(varying[picked], position[picked], len(moving) + position[picked])
                    mapped = np.where(picked < 0, len(moving) + len(fixed), mapped)
                else:
                    mapped = np.where(picked < 0, len(fixed), position[picked])
                kron[k, flag] = index(mapped.reshape(len(chosen), k))
                for n, s in enumerate(chosen):
                    kron_place[k, int(s)] = (flag, n)
        return {
            "chain_tables": (index(self.chain_table[:, fixed]), index(self.chain_table[:, moving])),
            "chain_place": [(bool(varying[c]), int(position[c])) for c in range(len(varying))],
            "kron_tables": kron,
            "kron_place": kron_place,
        }

    def _channel_kinds(self, members: list[int], index: Any) -> tuple[list, torch.Tensor]:
        """A channel group's kinds, ``[(spec, rate indices [G_kind, R])]`` (each kind's PTMs made in one call),
        and the order that puts the kinds' PTMs back in the group's order."""
        kinds: dict[tuple, list[tuple[int, ChannelSpec]]] = {}
        for slot, i in enumerate(members):
            spec = self.params[i].channel
            assert spec is not None
            kinds.setdefault((spec.name, spec.hyper), []).append((slot, spec))
        entries, order = [], []
        for items in kinds.values():
            order += [slot for slot, _ in items]
            entries.append((items[0][1], index([list(spec.rates) for _, spec in items])))
        return entries, index(np.argsort(order))


def _initial(m: int) -> np.ndarray:
    """The Pauli coefficients ``tr(rho P)`` of |0...0><0...0|: 1 for words of I and Z only, else 0."""
    state = np.ones(1)
    for _ in range(m):
        state = np.kron(state, np.array([1.0, 0.0, 0.0, 1.0]))
    return state
