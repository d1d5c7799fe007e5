"""Qiskit ``QuantumCircuit`` -> PennyLane operations (the way in; ``conversion`` is the way out).

``read_circuit(circuit)`` reads a parametrised circuit ONCE into a list of ``PLGate``s: PennyLane operation
names, wires and ``Angle``s (``hybridai.quantum.qiskit_frontend.expressions``). ``apply(gates, values)`` builds their
PennyLane operations for ``{parameter name: tensor}`` inside a recording (a ``QuantumLayer`` records its
``qfunc`` so), so every backend runs the circuit as it runs any PennyLane quantum function.

- Qiskit qubit q is PennyLane wire q (and qubit 0 is the rightmost letter of a Qiskit Pauli label).
- Qiskit's standard gates map to the PennyLane gates of the same matrix (``GATES``); other gates (library
  blocks such as ``ZZFeatureMap``, ``r``, ``cu``, ``rzx``, custom gates) go through their Qiskit ``definition``,
  recursively; a gate without a definition becomes a ``QubitUnitary`` when its matrix is known (no unbound
  parameter).
- Global phases (the circuit's, its definitions', ``GlobalPhaseGate``) are dropped: expectation values and
  fidelities |<phi(x)|phi(y)>|^2 do not see them; a statevector (``qml.state()``) can differ by a phase.
- Barriers and identities are skipped. Measurements, resets, delays, classical control flow and any
  instruction on classical bits are refused with a ``ConfigError`` naming the instruction: a layer measures
  its ``observables``, and a reset or a mid-circuit measurement is not a unitary PennyLane gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hybridai.core.errors import ConfigError
from hybridai.quantum.qiskit_frontend.expressions import Angle, angle

# Qiskit standard gate name -> PennyLane operation (the same matrix, wires in Qiskit's qubit order)
GATES = {
    "h": "Hadamard", "x": "PauliX", "y": "PauliY", "z": "PauliZ", "s": "S", "sdg": "Adjoint(S)", "t": "T",
    "tdg": "Adjoint(T)", "sx": "SX", "sxdg": "Adjoint(SX)", "cx": "CNOT", "cy": "CY", "cz": "CZ", "ch": "CH",
    "swap": "SWAP", "iswap": "ISWAP", "ecr": "ECR", "ccx": "Toffoli", "ccz": "CCZ", "cswap": "CSWAP",
    "rx": "RX", "ry": "RY", "rz": "RZ", "p": "PhaseShift", "u1": "PhaseShift", "u": "U3", "u3": "U3", "u2": "U2",
    "crx": "CRX", "cry": "CRY", "crz": "CRZ", "cp": "ControlledPhaseShift", "cu1": "ControlledPhaseShift",
    "rxx": "IsingXX", "ryy": "IsingYY", "rzz": "IsingZZ",
}  # fmt: skip
SKIPPED = frozenset({"barrier", "id", "global_phase"})
REFUSED = {
    "measure": "a layer measures its observables= (a kernel its fidelities); remove the measurements",
    "reset": "a reset is not a unitary gate",
    "delay": "a delay's idle noise cannot be written as a PennyLane gate; remove it",
    "initialize": "it resets the qubits; use StatePreparation (a gate) instead",
}
MAX_DEFINITION_DEPTH = 20


@dataclass(frozen=True)
class PLGate:
    """One PennyLane operation of a read circuit: ``name`` (``"Adjoint(S)"``: the adjoint of ``S``), its wires,
    and its angles (or, for ``QubitUnitary``, its constant matrix)."""

    name: str
    wires: tuple[int, ...]
    angles: tuple[Angle, ...] = ()
    matrix: Any = None


def read_circuit(circuit: Any) -> list[PLGate]:
    """The gates of ``circuit`` as ``PLGate``s (module docstring); a ConfigError names what cannot be read."""
    gates: list[PLGate] = []
    wires = tuple(range(circuit.num_qubits))
    if circuit.num_vars or getattr(circuit, "num_stretches", 0):
        raise ConfigError("the circuit has classical variables; accepted: circuits of quantum gates only")
    _read(circuit, wires, gates, 0)
    known = {p.name for p in circuit.parameters}
    stray = sorted({name for gate in gates for a in gate.angles for name in a.names} - known)
    if stray:  # a definition's own parameters, which the circuit does not expose
        raise ConfigError(f"the circuit's gates use the parameters {stray}, which are not among circuit.parameters")
    return gates


def _read(circuit: Any, wires: tuple[int, ...], gates: list[PLGate], depth: int) -> None:
    """Append the gates of ``circuit`` whose qubit k is wire ``wires[k]``."""
    for instruction in circuit.data:
        op = instruction.operation
        qubits = tuple(wires[circuit.find_bit(q).index] for q in instruction.qubits)
        where = f"instruction {op.name!r} on qubits {list(qubits)}"
        _refuse(op, instruction, where)
        if op.name in SKIPPED:
            continue
        if op.name in GATES and instruction.is_standard_gate():
            angles = tuple(angle(p, where) for p in op.params)
            gates.append(PLGate(GATES[op.name], qubits, angles))
            continue
        definition = _definition(op, where)
        if definition is not None:
            if depth >= MAX_DEFINITION_DEPTH:
                raise ConfigError(f"{where} is not defined within {MAX_DEFINITION_DEPTH} levels of standard gates")
            _read(definition, qubits, gates, depth + 1)
        else:
            gates.append(PLGate("QubitUnitary", tuple(reversed(qubits)), matrix=_matrix(op, where)))


def _refuse(op: Any, instruction: Any, where: str) -> None:
    """A ConfigError for an instruction a PennyLane circuit of gates cannot hold."""
    from qiskit.circuit import ControlFlowOp

    if op.name in REFUSED:
        raise ConfigError(f"the circuit has the {where}; {REFUSED[op.name]}")
    if isinstance(op, ControlFlowOp):
        raise ConfigError(f"the circuit has the {where}: classical control flow cannot be converted; accepted: gates")
    if instruction.clbits or getattr(op, "num_clbits", 0):
        raise ConfigError(f"the circuit has the {where} on classical bits; accepted: gates on qubits only")


def _definition(op: Any, where: str) -> Any:
    """``op``'s Qiskit definition (a circuit), or None; a ConfigError where building it fails."""
    try:
        return op.definition
    except Exception as exc:  # a definition that needs bound parameters (HamiltonianGate's time, say)
        raise ConfigError(f"the {where} has no definition Qiskit can build here ({exc}); bind its parameters") from exc


def _matrix(op: Any, where: str) -> Any:
    import numpy as np

    try:
        return np.asarray(op.to_matrix(), dtype=np.complex128)
    except Exception:
        raise ConfigError(
            f"the circuit has the {where}, which has neither a definition nor a matrix; accepted: gates with one"
        ) from None


def apply(gates: list[PLGate], values: dict[str, Any]) -> None:
    """Build (queue) the PennyLane operations of ``gates`` for ``values`` ``{parameter name: tensor}``; call it
    inside a recording (a qfunc that a QuantumLayer or QuantumKernel records, or ``quantum.recording``)."""
    import pennylane as qml

    for gate in gates:
        if gate.matrix is not None:
            qml.QubitUnitary(gate.matrix, wires=list(gate.wires))
        elif gate.name.startswith("Adjoint("):
            qml.adjoint(getattr(qml, gate.name[8:-1])(wires=list(gate.wires)))
        else:
            getattr(qml, gate.name)(*_alike([a(values) for a in gate.angles]), wires=list(gate.wires))


def _alike(angles: list[Any]) -> list[Any]:
    """A gate's angles all tensors where one is: PennyLane's matrices (U3's, U2's) multiply NumPy arrays made from
    Python floats with the tensors, which torch refuses (``cu``'s definition holds ``u(-theta/2, 0, ...)``). The
    constants take the tensors' dtype and device (a float64 layer keeps float64 constants)."""
    import torch

    like = next((a for a in angles if torch.is_tensor(a)), None)
    if like is None or all(torch.is_tensor(a) for a in angles):
        return angles
    dtype = like.dtype if like.is_floating_point() else torch.float64
    return [a if torch.is_tensor(a) else torch.tensor(a, dtype=dtype, device=like.device) for a in angles]
