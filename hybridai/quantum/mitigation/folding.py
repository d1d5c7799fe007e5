"""Unitary folding of PennyLane tapes, decided by Mitiq, once per circuit structure.

A tape is first decomposed into elementary gates (the granularity Mitiq folds at); Mitiq folds a
Cirq circuit of opaque placeholders, one per gate, and the pattern it returns (which gate, inverted
or not, in which order) is cached per structure, scale factor and folding method. The folded tapes
reuse the original gates and their torch parameters (an inverted gate is ``qml.adjoint`` of it), so
gradients flow through every occurrence of every angle by whatever rule the executor uses. Noise
channels written in the circuit (``qml.DepolarizingChannel`` on ``default.mixed``, say) stand for the
noise of the gates around them: where Mitiq inverts one, the channel is applied again as it is, so the
circuit's noise grows with the scale factor as the gates' own noise would.

With ``barriers=True`` (executors that optimise circuits, such as the Qiskit ones, which transpile folded
circuits at their own optimisation level) a ``FoldBarrier`` on every wire fences off each run of inverted
gates (``U | U^dagger | U`` for global folding, ``G | G^dagger | G`` for random folding), so that no
optimisation cancels a gate against its inverse; the scale-factor-1 copy has none and is the circuit itself.
Decompositions, inverses and tapes are built under hybridai's PennyLane lock (``quantum.recording``).
"""

from __future__ import annotations

import functools
from typing import Any

from hybridai.core.errors import invalid
from hybridai.quantum.circuits.decomposition import decompose
from hybridai.quantum.circuits.recording import recording

# Gates folded as they are; other operations are decomposed first (templates, Rot, controlled rotations).
ELEMENTARY = frozenset({
    "Hadamard", "PauliX", "PauliY", "PauliZ", "S", "T", "SX", "Adjoint(S)", "Adjoint(T)", "Adjoint(SX)",
    "CNOT", "CZ", "CY", "SWAP", "Toffoli", "CSWAP", "ISWAP", "ECR", "CH", "RX", "RY", "RZ", "PhaseShift",
    "U1", "IsingXX", "IsingYY", "IsingZZ", "QubitUnitary", "GlobalPhase",
})  # fmt: skip
IGNORED = frozenset({"Identity", "Barrier", "Snapshot"})
# Mitiq folds whole gates: a circuit of d gates reaches the scale factors (d + 2k) / d only. A folded circuit whose
# factor is further than this (relative) from the one asked for would be extrapolated at the wrong factor.
SCALE_TOLERANCE = 0.1


def elementary_ops(ops: Any) -> list[Any]:
    """``ops`` decomposed until every operation is in ``ELEMENTARY`` or has no decomposition (a noise channel),
    built without queuing (``hybridai.quantum.circuits.decomposition``)."""
    return decompose(
        ops,
        lambda op: op.name in ELEMENTARY or not op.has_decomposition,
        skip=lambda op: op.name in IGNORED,
        cannot="zero-noise folding cannot fold",
        remedy="use gates with shallower decompositions, or mitigation=None",
    )


def _placeholder_gate() -> type:
    import cirq

    class Slot(cirq.Gate):
        """Stands for gate ``index`` of a tape (inverted or not) while Mitiq folds."""

        def __init__(self, index: int, n_qubits: int, inverse: bool = False) -> None:
            self.index, self.n_qubits, self.inverse = index, n_qubits, inverse

        def _num_qubits_(self) -> int:
            return self.n_qubits

        def __pow__(self, power: Any) -> Any:
            return Slot(self.index, self.n_qubits, not self.inverse) if power == -1 else NotImplemented

        def _value_equality_values_(self) -> tuple:
            return (self.index, self.inverse)

        def __eq__(self, other: Any) -> bool:
            return isinstance(other, Slot) and (other.index, other.inverse) == (self.index, self.inverse)

        def __hash__(self) -> int:
            return hash((self.index, self.inverse))

    return Slot


@functools.lru_cache(maxsize=256)
def fold_pattern(
    structure: tuple[tuple[int, ...], ...], scale_factor: float, folding: str, seed: int | None
) -> tuple[tuple[int, bool], ...]:
    """Mitiq's folding of gates acting on ``structure`` (qubit positions per gate): the folded sequence
    as (gate index, inverted) pairs."""
    import cirq
    from mitiq.zne import scaling

    slot = _placeholder_gate()
    qubits = cirq.LineQubit.range(1 + max((q for gate in structure for q in gate), default=0))
    circuit = cirq.Circuit(slot(i, len(g)).on(*(qubits[q] for q in g)) for i, g in enumerate(structure))
    if folding == "global":
        folded = scaling.fold_global(circuit, scale_factor)
    else:
        folded = scaling.fold_gates_at_random(circuit, scale_factor, seed=seed)
    return tuple((op.gate.index, op.gate.inverse) for op in folded.all_operations())


def inverse(op: Any) -> Any:
    """The inverse of a gate, or a noise channel itself (folding must add noise, never undo it)."""
    import pennylane as qml

    with recording():
        return op if isinstance(op, qml.operation.Channel) else qml.adjoint(op)


@functools.cache
def fold_barrier_class() -> type:
    """``FoldBarrier``: a ``qml.Barrier`` (same name, so every device treats it as one) that marks the edge
    of a folded block; the Qiskit conversion turns it into a qiskit barrier, other barriers are dropped."""
    import pennylane as qml

    class FoldBarrier(qml.Barrier):
        """A barrier between folded blocks: no optimisation may merge or cancel gates across it."""

        def __init__(self, wires: Any = (), only_visual: bool = False, **_: Any) -> None:  # Barrier's signature
            super().__init__(wires=wires, only_visual=only_visual)
            self._name = "Barrier"

    return FoldBarrier


def is_fold_barrier(op: Any) -> bool:
    """Whether ``op`` is a ``FoldBarrier`` placed by ``fold_tape``."""
    return isinstance(op, fold_barrier_class())


def fold_tape(tape: Any, zne: Any, wires: Any, barriers: bool = False, gates: list[Any] | None = None) -> list[Any]:
    """One folded copy of ``tape`` per scale factor of ``zne`` (same measurements and shots); with
    ``barriers`` a ``FoldBarrier`` on ``wires`` between folded blocks. ``gates``: the tape's operations as the
    executor runs them, folded one by one (default: ``elementary_ops``); ignored where one acts off ``wires``."""
    import pennylane as qml

    position = {w: i for i, w in enumerate(wires)}
    if gates is None or any(w not in position for op in gates for w in op.wires):
        gates = elementary_ops(tape.operations)
    ops = [op for op in gates if op.name not in IGNORED]
    structure = tuple(tuple(position[w] for w in op.wires) or (0,) for op in ops)
    folded = []
    with recording():
        for scale in zne.scale_factors:
            pattern = fold_pattern(structure, scale, zne.folding, zne.seed)
            _check_reached(zne, scale, len(pattern), len(ops))
            if not any(inverted for _, inverted in pattern) and sorted(i for i, _ in pattern) == list(range(len(ops))):
                # nothing folded (scale factor 1): the tape itself, not Mitiq's reordering of its moments, so that
                # every executor runs exactly the unmitigated circuit
                folded.append(qml.tape.QuantumScript(tape.operations, tape.measurements, shots=tape.shots))
                continue
            sequence = []
            for k, (i, inverted) in enumerate(pattern):
                if barriers and k and inverted != pattern[k - 1][1]:  # G | G^dagger | G, U | U^dagger | U
                    sequence.append(fold_barrier_class()(wires=list(wires)))
                sequence.append(inverse(ops[i]) if inverted else ops[i])
            folded.append(qml.tape.QuantumScript(sequence, tape.measurements, shots=tape.shots))
    return folded


def _check_reached(zne: Any, scale: float, folded: int, gates: int) -> None:
    """Refuse a scale factor that folding whole gates of a ``gates``-gate circuit cannot approach (a short circuit
    and a factor that is not an odd integer): the extrapolation would take ``folded / gates`` for ``scale``."""
    reached = folded / gates if gates else scale
    if abs(reached - scale) > SCALE_TOLERANCE * scale:
        raise invalid(
            "scale_factors", zne.scale_factors,
            f"factors this circuit of {gates} gate{'s' if gates != 1 else ''} can be folded to: folding whole gates "
            f"reaches {reached:.4g} for {scale:g}, and the extrapolation would assume {scale:g}; odd integers such as "
            "(1, 3, 5) are reached exactly by any circuit",
        )  # fmt: skip
