"""PennyLane operations -> the statevector executor's steps.

Every operation becomes one of a few *steps* acting on wire positions ``0..n-1``:

- ``sq``: single-qubit matrices on distinct wires, ``[..., k, 2, 2]`` (embeddings and
  rotation layers computed in ONE vectorised op, not gate by gate),
- ``dense``: a matrix on a few wires, ``[..., 2^k, 2^k]``,
- ``diag``: a diagonal gate given by its eigenvalues ``[..., 2^k]`` (RZ, CRZ, IsingZZ, ...),
- ``mono``: a constant gate with one non-zero per row (X, CNOT, SWAP, Toffoli, CZ, S, ...),
  stored as a permutation and phases, never as a dense matrix,
- ``init``: a full initial state (StatePrep, BasisState, AmplitudeEmbedding) in first place.

``...`` is the batch dimension when the operation is broadcast. Operations outside this
set are decomposed with PennyLane's own decomposition.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch

from hybridai.core.errors import UnsupportedOperationError
from hybridai.quantum.circuits.decomposition import controlled_rotations, pauli_measure_route, walk
from hybridai.quantum.circuits.tape_structure import hyperparameters_key

MAX_DENSE_WIRES = 3
SKIPPED = {"Identity", "Barrier", "Snapshot", "WireCut"}
DIAGONAL = {
    "RZ", "PhaseShift", "U1", "CRZ", "ControlledPhaseShift", "CPhase", "IsingZZ", "MultiRZ", "PCPhase",
    "DiagonalQubitUnitary", "CPhaseShift00", "CPhaseShift01", "CPhaseShift10", "GlobalPhase",
}  # fmt: skip
SUGGESTION = "use backend='pennylane:default.qubit'"
CHANNEL_SUGGESTION = (
    "use backend='density' (the same circuit with its channels; rates constant, trainable or per sample, "
    "differentiable) or 'pennylane:default.mixed'"
)


class Step:
    """One executor step; ``key`` is its structure (everything but parameter values). A layer of a template
    (``layer``: the template's ``[..., L, k, 2, 2]`` matrices and this layer's index) selects its own matrices
    only when asked for ``tensor``: a plan that takes all layers at once never does."""

    __slots__ = ("kind", "wires", "_tensor", "batched", "const", "layer")

    def __init__(
        self,
        kind: str,
        wires: tuple[int, ...],
        tensor: torch.Tensor | None,
        batched: bool,
        const: Any = None,
        layer: tuple[torch.Tensor, int] | None = None,
    ) -> None:
        self.kind, self.wires, self._tensor, self.batched, self.const, self.layer = (
            kind, wires, tensor, batched, const, layer,
        )  # fmt: skip

    @property
    def tensor(self) -> torch.Tensor:
        """The step's matrices (or diagonal); only a constant monomial step (``mono``) has none."""
        tensor = self.tensor_or_none
        if tensor is None:
            raise TypeError(f"a constant {self.kind!r} step has no tensor")
        return tensor

    @property
    def tensor_or_none(self) -> torch.Tensor | None:
        if self._tensor is None and self.layer is not None:
            mats, index = self.layer
            self._tensor = mats[..., index, :, :, :]
        return self._tensor

    @property
    def key(self) -> tuple:
        return (self.kind, self.wires, self.batched, self.const)


def exact_tensor(x: Any, device: torch.device | None = None) -> torch.Tensor:
    """``x`` as a tensor on ``device``; Python numbers and numpy data keep float64/complex128 (``torch.as_tensor``
    would round a Python float through torch's default dtype, float32, before any cast back up)."""
    if torch.is_tensor(x):
        return x.to(device) if device is not None else x
    return torch.as_tensor(np.asarray(x), device=device)


def _expi(x: torch.Tensor) -> torch.Tensor:
    return torch.complex(torch.cos(x), torch.sin(x))


# per rotation: the coefficients of cos(theta/2) and sin(theta/2) in the entries 00, 01, 10, 11, each (real, imag)
ROTATION_BASES = {
    "RX": ((1, 0, 0, 0, 0, 0, 1, 0), (0, 0, 0, -1, 0, -1, 0, 0)),  # I cos - i X sin
    "RY": ((1, 0, 0, 0, 0, 0, 1, 0), (0, 0, -1, 0, 1, 0, 0, 0)),  # I cos - i Y sin
    "RZ": ((1, 0, 0, 0, 0, 0, 1, 0), (0, -1, 0, 0, 0, 0, 0, 1)),  # I cos - i Z sin
}
_BASES: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def rotation_matrices(theta: torch.Tensor, name: str, cdtype: torch.dtype) -> torch.Tensor:
    """``name`` (a key of ``ROTATION_BASES``) of the real angles ``theta`` (any shape) as ``[*theta.shape, 2, 2]``
    in ``cdtype``: (cos, sin) of the half angles, as sin(theta/2 + (pi/2, 0)), times one constant ``[2, 8]``
    matrix; three arithmetic torch operations (and autograd nodes) whatever the shape."""
    rdtype = torch.float32 if cdtype == torch.complex64 else torch.float64
    key = (name, rdtype, theta.device)
    constants = _BASES.get(key)
    if constants is None:
        basis = torch.tensor(ROTATION_BASES[name], dtype=rdtype, device=theta.device)
        constants = _BASES.setdefault(key, (torch.tensor([math.pi / 2, 0], dtype=rdtype, device=theta.device), basis))
    offsets, basis = constants
    trig = torch.sin(torch.add(offsets, theta.to(rdtype).unsqueeze(-1), alpha=0.5))  # (cos, sin) of theta / 2
    return torch.view_as_complex((trig @ basis).view(*theta.shape, 4, 2)).view(*theta.shape, 2, 2)


def rot(phi: torch.Tensor, theta: torch.Tensor, omega: torch.Tensor, cdtype: torch.dtype) -> torch.Tensor:
    """Rot(phi, theta, omega) = RZ(omega) RY(theta) RZ(phi), vectorised over any shape."""
    c, s = torch.cos(theta / 2), torch.sin(theta / 2)
    plus, minus = (phi + omega) / 2, (phi - omega) / 2
    angles = torch.stack([-plus, minus, -minus, plus], -1)
    magnitudes = torch.stack([c, -s, s, c], -1)
    return torch.polar(torch.ones_like(angles), angles).mul(magnitudes).to(cdtype).unflatten(-1, (2, 2))


_CONSTANT_GATES: dict[tuple, tuple[str, Any]] = {}


def constant_gate(op: Any) -> tuple[str, Any]:
    """Classify a parameter-free gate: ('mono', (perm, phases)) or ('dense', matrix); once per class, wire count and
    hyperparameters (compared exactly: a gate whose hyperparameters cannot be is classified every time)."""
    hyperparameters = hyperparameters_key(op.hyperparameters)
    key = (type(op), op.name, len(op.wires), hyperparameters)
    found = _CONSTANT_GATES.get(key) if hyperparameters is not None else None
    if found is not None:
        return found
    matrix = np.asarray(op.matrix(), dtype=np.complex128)
    nonzero = np.abs(matrix) > 1e-12
    if np.all(nonzero.sum(axis=1) == 1) and np.all(nonzero.sum(axis=0) == 1):
        perm = tuple(int(i) for i in nonzero.argmax(axis=1))
        phases = tuple(complex(matrix[r, c]) for r, c in enumerate(perm))
        found = ("mono", (perm, phases))
    else:
        found = ("dense", matrix)
    if hyperparameters is not None:
        _CONSTANT_GATES[key] = found
    return found


class Converter:
    """Converts the operations of one tape into steps (dtype, device and wire map fixed)."""

    def __init__(self, wire_index: dict, cdtype: torch.dtype, device: torch.device) -> None:
        self.wire_index = wire_index
        self.cdtype = cdtype
        self.rdtype = torch.float32 if cdtype == torch.complex64 else torch.float64
        self.device = device

    def positions(self, wires: Any) -> tuple[int, ...]:
        try:
            return tuple(self.wire_index[w] for w in wires)
        except KeyError as exc:
            raise UnsupportedOperationError(
                f"operation on wire {exc.args[0]!r}, which is not among the backend's wires {list(self.wire_index)}"
            ) from None

    def real(self, x: Any) -> torch.Tensor:
        return exact_tensor(x, self.device).to(self.rdtype)

    def tensor(self, x: Any) -> torch.Tensor:
        return exact_tensor(x, self.device).to(self.cdtype)

    def convert(self, operations: list[Any]) -> list[Step]:
        """The steps of ``operations``, decomposed where no step applies them (``circuits.decomposition``;
        decompositions and matrices built under hybridai's PennyLane lock)."""
        steps: list[Step] = []
        taken = [0]  # operations taken so far: a state preparation is a first step only before any other

        def take(op: Any) -> bool:
            done = self._step(op, steps, first=taken[0] == 0 and not steps)
            taken[0] += done
            return done

        remedy = f"it applies gates with a matrix on at most {MAX_DENSE_WIRES} wires and their decompositions; "
        pieces = controlled_rotations(operations, wider_than=MAX_DENSE_WIRES)  # wider: no matrix, nor PennyLane's
        walk(pieces, take, cannot="the statevector backend cannot apply", remedy=remedy + SUGGESTION)  # pieces
        return steps

    def _step(self, op: Any, steps: list[Step], first: bool) -> bool:
        """Append the step(s) of ``op`` and return True, or return False where it must be decomposed first."""
        import pennylane as qml

        name = op.name
        batched = op.batch_size is not None
        if name in SKIPPED:
            return True
        if isinstance(op, qml.operation.StatePrepBase) and first and not steps:
            state = op.state_vector(wire_order=list(self.wire_index))
            dim = 2 ** len(self.wire_index)
            steps.append(
                Step(
                    "init",
                    (),
                    self.tensor(state).reshape(-1, dim) if batched else self.tensor(state).reshape(dim),
                    batched,
                )
            )
            return True
        if name == "PauliMeasure":
            raise UnsupportedOperationError(f"the statevector backend cannot apply {pauli_measure_route(op)}")
        if isinstance(op, qml.operation.Channel | qml.measurements.MidMeasureMP):
            why = "a noise channel" if isinstance(op, qml.operation.Channel) else "not unitary"
            advice = CHANNEL_SUGGESTION if isinstance(op, qml.operation.Channel) else SUGGESTION
            raise UnsupportedOperationError(f"the statevector backend cannot apply {name} ({why}); {advice}")
        wires = self.positions(op.wires)
        handler = getattr(self, f"_template_{name}", None)
        if handler is not None and handler(op, wires, batched, steps):
            return True
        if op.num_params == 0 and op.has_matrix and len(wires) <= 8:
            kind, data = constant_gate(op)
            if kind == "mono":
                steps.append(Step("mono", wires, None, False, data))
            else:
                steps.append(Step("dense", wires, self.tensor(data), False, ("const", name, len(wires))))
            return True
        if name in DIAGONAL and op.has_matrix or name == "GlobalPhase":
            eig = self._eigvals(op, name)
            steps.append(Step("diag", wires if name != "GlobalPhase" else (), eig, batched))
            return True
        if name == "Rot":
            phi, theta, omega = (self.real(p) for p in op.parameters)
            steps.append(Step("sq", wires, rot(phi, theta, omega, self.cdtype).unsqueeze(-3), batched))
            return True
        if name in ("RX", "RY"):
            mats = rotation_matrices(self.real(op.parameters[0]), name, self.cdtype)
            steps.append(Step("sq", wires, mats.unsqueeze(-3), batched))
            return True
        if op.has_matrix and len(wires) <= MAX_DENSE_WIRES:
            try:
                matrix = self.tensor(op.matrix())
            except Exception:  # some PennyLane matrices fail for broadcast torch parameters
                matrix = None
            if matrix is not None or not op.has_decomposition:
                kind = "sq" if len(wires) == 1 else "dense"
                if matrix is None:
                    matrix = self.tensor(op.matrix())
                steps.append(Step(kind, wires, matrix.unsqueeze(-3) if kind == "sq" else matrix, batched))
                return True
        return False

    def _eigvals(self, op: Any, name: str) -> torch.Tensor:
        if name == "RZ":
            theta = self.real(op.parameters[0]).unsqueeze(-1)
            return _expi(torch.cat([-theta / 2, theta / 2], -1)).to(self.cdtype)
        if name in ("PhaseShift", "U1"):
            phi = self.real(op.parameters[0]).unsqueeze(-1)
            return _expi(torch.cat([torch.zeros_like(phi), phi], -1)).to(self.cdtype)
        if name == "GlobalPhase":
            return _expi(-self.real(op.parameters[0])).to(self.cdtype).unsqueeze(-1)
        if name in ("MultiRZ", "IsingZZ"):
            k = len(op.wires)
            parity = np.array([bin(i).count("1") % 2 for i in range(2**k)])
            signs = torch.as_tensor(1.0 - 2.0 * parity, device=self.device, dtype=self.rdtype)
            return _expi(-self.real(op.parameters[0]).unsqueeze(-1) / 2 * signs).to(self.cdtype)
        if name in ("CRZ", "ControlledPhaseShift", "CPhase"):
            angle = self.real(op.parameters[0]).unsqueeze(-1)
            zero = torch.zeros_like(angle)
            angles = torch.cat([zero, zero, -angle / 2, angle / 2] if name == "CRZ" else [zero, zero, zero, angle], -1)
            return _expi(angles).to(self.cdtype)
        # PennyLane's eigvals() can drop to complex64 (IsingZZ); the matrix diagonal keeps the precision
        return torch.diagonal(self.tensor(op.matrix()), dim1=-2, dim2=-1)

    # -- templates computed in one vectorised op -------------------------------------------

    def _template_AngleEmbedding(self, op: Any, wires, batched, steps) -> bool:
        rotation = op.hyperparameters["rotation"]
        rotation = getattr(rotation, "__name__", str(rotation))
        if rotation not in ROTATION_BASES:
            return False
        steps.append(Step("sq", wires, rotation_matrices(self.real(op.parameters[0]), rotation, self.cdtype), batched))
        return True

    def _template_BasicEntanglerLayers(self, op: Any, wires, batched, steps) -> bool:
        rotation = getattr(op.hyperparameters["rotation"], "__name__", "")
        if rotation not in ROTATION_BASES:
            return False
        mats = rotation_matrices(self.real(op.parameters[0]), rotation, self.cdtype)  # [..., L, k, 2, 2]
        ring = _ring_steps(wires)
        for layer in range(mats.shape[-4]):
            steps.append(Step("sq", wires, None, batched, layer=(mats, layer)))
            steps.extend(ring)
        return True

    def _template_StronglyEntanglingLayers(self, op: Any, wires, batched, steps) -> bool:
        weights = self.real(op.parameters[0])  # [..., L, k, 3]
        mats = rot(weights[..., 0], weights[..., 1], weights[..., 2], self.cdtype)  # [..., L, k, 2, 2]
        entanglers = _sel_entanglers(wires, op.hyperparameters["ranges"], op.hyperparameters["imprimitive"])
        if entanglers is None:
            return False
        for layer in range(mats.shape[-4]):
            steps.append(Step("sq", wires, None, batched, layer=(mats, layer)))
            for gate in entanglers[layer]:  # a shared constant Step, or (wires, matrix, const) of a dense gate
                steps.append(
                    gate if isinstance(gate, Step) else Step("dense", gate[0], self.tensor(gate[1]), False, gate[2])
                )
        return True


# a two-qubit gate of StronglyEntanglingLayers: a constant permutation Step, or (wires, matrix, const) of a dense one
Entangler = Step | tuple[tuple[int, int], Any, tuple[str, str, int]]


@functools.lru_cache(maxsize=1024)
def _sel_entanglers(wires: tuple[int, ...], ranges: tuple[int, ...], imprimitive: Any) -> list[list[Entangler]] | None:
    """Per layer, StronglyEntanglingLayers' two-qubit gates: a permutation gate as a ``Step`` shared by every
    call (it holds no per-call data), a dense one as (wires, matrix, const)."""
    if len(wires) == 1:
        return [[] for _ in ranges]
    gate = imprimitive(wires=[0, 1])
    if gate.num_params:
        return None
    kind, data = constant_gate(gate)
    layers: list[list[Entangler]] = []
    for r in ranges:
        pairs = [(wires[i], wires[(i + r) % len(wires)]) for i in range(len(wires))]
        if kind == "mono":
            layers.append([Step("mono", pair, None, False, data) for pair in pairs])
        else:
            layers.append([(pair, data, ("const", gate.name, 2)) for pair in pairs])
    return layers


_CNOT = ((0, 1, 3, 2), (1 + 0j, 1 + 0j, 1 + 0j, 1 + 0j))


@functools.lru_cache(maxsize=1024)
def _ring_steps(wires: tuple[int, ...]) -> tuple[Step, ...]:
    """One layer's CNOTs of BasicEntanglerLayers (none for 1 wire, one for 2, a ring for more) as Steps shared by
    every call (they hold no per-call data)."""
    k = len(wires)
    pairs = [] if k == 1 else [(0, 1)] if k == 2 else [(i, (i + 1) % k) for i in range(k)]
    return tuple(Step("mono", (wires[a], wires[b]), None, False, _CNOT) for a, b in pairs)
