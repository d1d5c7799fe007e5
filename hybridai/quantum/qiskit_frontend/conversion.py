"""PennyLane tape -> ``qiskit.QuantumCircuit`` with ``Parameter``s, and observables ->
``SparsePauliOp`` (our own gate map; pennylane-qiskit cannot be installed beside current qiskit).

Wire position q of the backend's wires is qiskit qubit q; since qiskit labels qubit 0 by the
rightmost Pauli letter, PennyLane's wire 0 is the rightmost letter. Every gate parameter
becomes one qiskit ``Parameter``; parametric gates are only those with the two-term shift rule
(shift pi/2, factor 1/2), so parameter-shift gradients are exact. Other operations are
decomposed with PennyLane's own decompositions. Back from the circuit: ``tape_results`` lays the raw
expectations of the observables out as PennyLane returns the tape's measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from hybridai.core.errors import UnsupportedOperationError
from hybridai.quantum.circuits.decomposition import controlled_rotations, pauli_measure_route, walk
from hybridai.quantum.circuits.hermiticity import check_hermitian
from hybridai.quantum.circuits.recording import recording
from hybridai.quantum.mitigation.folding import is_fold_barrier
from hybridai.quantum.qiskit_frontend.channels import spec_of

FIXED = {
    "Hadamard": "h", "PauliX": "x", "PauliY": "y", "PauliZ": "z", "S": "s", "T": "t", "SX": "sx",
    "Adjoint(S)": "sdg", "Adjoint(T)": "tdg", "Adjoint(SX)": "sxdg", "CNOT": "cx", "CZ": "cz", "CY": "cy",
    "SWAP": "swap", "Toffoli": "ccx", "CSWAP": "cswap", "ISWAP": "iswap", "ECR": "ecr", "CH": "ch",
}  # fmt: skip
PARAMETRIC = {"RX": "rx", "RY": "ry", "RZ": "rz", "PhaseShift": "p", "U1": "p",
              "IsingXX": "rxx", "IsingYY": "ryy", "IsingZZ": "rzz"}  # fmt: skip
SKIPPED = {"Identity", "Barrier", "Snapshot", "GlobalPhase"}  # no effect on expectations or probabilities
SUGGESTION = "use backend='statevector' or a PennyLane device"
MID_CIRCUIT = ("MidMeasureMP", "Conditional", "PauliMeasure")  # qml.measure, qml.cond: no statevector either


@dataclass
class Converted:
    """A tape as a parametrised circuit plus the raw observables whose expectations it needs."""

    circuit: Any  # qiskit.QuantumCircuit with ParameterVector "theta"
    params: list[Any]  # per circuit parameter: a torch tensor (scalar or [B])
    observables: list[Any]  # SparsePauliOp per raw column
    post: list[tuple[str, Any]]  # per measurement: ("expval", i) | ("var", (i, j)) | ("probs", slice)
    key: tuple = field(default=())
    channels: list[Any] = field(default_factory=list)  # per channel placeholder (label CHANNEL_LABEL + index): its spec


CHANNEL_LABEL = "hybridai channel "  # a PennyLane channel's place in the circuit: a labelled, empty "kraus"
CHANNEL_ADVICE = (
    "PennyLane noise channels run on backend='density' (constant, trainable or per-sample rates, differentiable) or "
    "'pennylane:default.mixed'"
)


def gate_key(gates: list[Gate]) -> tuple:
    """The gates as an exact, hashable key (constant matrices by their bytes)."""
    return tuple((g, q, a if isinstance(a, int | None) or g == "channel" else np.asarray(a).tobytes())
                 for g, q, a in gates)  # fmt: skip


def _pauli_op(terms: list[tuple[float, dict[int, str]]], n: int) -> Any:
    from qiskit.quantum_info import SparsePauliOp

    labels = []
    for coeff, word in terms:
        chars = ["I"] * n
        for q, letter in word.items():
            chars[n - 1 - q] = letter
        labels.append(("".join(chars), coeff))
    return SparsePauliOp.from_list(labels or [("I" * n, 0.0)]).simplify()


def pauli_terms(obs: Any, position: dict) -> list[tuple[float, dict[int, str]]]:
    import pennylane as qml

    check_hermitian(obs, "a Qiskit backend")  # the real parts of complex coefficients alone would be another observable
    rep = obs.pauli_rep
    if rep is None:
        try:
            with recording():
                rep = qml.pauli_decompose(qml.matrix(obs, wire_order=obs.wires), wire_order=obs.wires).pauli_rep
        except Exception as exc:
            raise UnsupportedOperationError(f"observable {obs} has no Pauli decomposition; {SUGGESTION}") from exc
    terms = []
    for word, coeff in rep.items():
        if isinstance(coeff, torch.Tensor) and coeff.requires_grad:
            raise UnsupportedOperationError(
                f"trainable observable coefficients ({obs}) on a Qiskit backend; {SUGGESTION}"
            )
        terms.append((float(np.real(coeff)), {position[w]: letter for w, letter in word.items()}))
    return terms


Gate = tuple[str, tuple[int, ...], Any]  # (qiskit name, qubits, parameter index | unitary matrix | None)


def convert(tape: Any, wires: list) -> Converted:
    """Convert a (possibly broadcast) tape on ``wires`` into a ``Converted`` circuit."""
    position = {w: i for i, w in enumerate(wires)}
    gates, params = qiskit_gates(tape.operations, position, wires)
    observables, post = _observables(tape.measurements, position, wires)
    exact = tuple(
        (tuple(o.paulis.to_labels()), np.asarray(o.coeffs, dtype=np.complex128).tobytes()) for o in observables
    )
    key = (len(wires), gate_key(gates), exact)  # observables by their exact coefficients, never as printed
    channels = [a for g, _, a in gates if g == "channel"]
    return Converted(_circuit(gates, len(params), len(wires)), params, observables, post, key, channels)


def qiskit_gates(operations: Any, position: dict, wires: list) -> tuple[list[Gate], list[Any]]:
    """Qiskit gates for PennyLane ``operations`` (decomposed where needed, ``hybridai.quantum.circuits.decomposition``)
    and one torch parameter per parametric gate."""
    import pennylane as qml

    gates: list[Gate] = []
    params: list[Any] = []

    def take(op: Any) -> bool:
        name = op.name
        if is_fold_barrier(op):  # between folded blocks (ZNE): kept, so that transpilation cannot cancel folds
            gates.append(("barrier", tuple(range(len(wires))), None))
            return True
        if name in SKIPPED:
            return True
        if name == "PauliMeasure":
            raise UnsupportedOperationError(f"the Qiskit conversion cannot express {pauli_measure_route(op)}")
        if name.startswith(MID_CIRCUIT):
            raise UnsupportedOperationError(
                f"the Qiskit conversion cannot express {name} on wires {list(op.wires)} (a mid-circuit measurement, "
                "qml.measure or qml.cond); use backend='pennylane:default.qubit', which defers it to a wire of its own"
            )
        try:
            qubits = tuple(position[w] for w in op.wires)
        except KeyError as exc:
            raise UnsupportedOperationError(f"{name} acts on wire {exc.args[0]!r}, not among {wires}") from None
        if isinstance(op, qml.operation.Channel):
            spec, rates = spec_of(op, len(params))
            gates.append(("channel", qubits, spec))
            params.extend(rates)
        elif name in FIXED:
            gates.append((FIXED[name], qubits, None))
        elif name in PARAMETRIC:
            gates.append((PARAMETRIC[name], qubits, len(params)))
            p = op.parameters[0]  # constants keep float64 (never the default dtype)
            params.append(p if torch.is_tensor(p) else torch.tensor(float(p), dtype=torch.float64))
        elif name == "QubitUnitary" and not (torch.is_tensor(op.parameters[0]) and op.parameters[0].requires_grad):
            matrix = np.asarray(op.matrix() if not torch.is_tensor(op.parameters[0]) else op.parameters[0].detach())
            if matrix.ndim != 2:
                raise UnsupportedOperationError(f"a broadcast QubitUnitary on a Qiskit backend; {SUGGESTION}")
            gates.append(("unitary", qubits, matrix))
        else:
            return False
        return True

    walk(controlled_rotations(operations), take, cannot="the Qiskit conversion cannot express", remedy=SUGGESTION)
    return gates, params


def _circuit(gates: list[Gate], n_params: int, n: int) -> Any:
    """A ``QuantumCircuit`` on ``n`` qubits with the ``ParameterVector`` "theta" of ``n_params`` entries."""
    from qiskit import QuantumCircuit
    from qiskit.circuit import Instruction, ParameterVector
    from qiskit.circuit.library import UnitaryGate

    theta = ParameterVector("theta", n_params)
    circuit = QuantumCircuit(n)
    channels = 0
    for name, qubits, arg in gates:
        if name == "channel":  # a place holder that no transpiler pass moves gates across (not a unitary gate)
            circuit.append(Instruction("kraus", len(qubits), 0, [], label=f"{CHANNEL_LABEL}{channels}"), list(qubits))
            channels += 1
        elif name == "unitary":
            circuit.append(UnitaryGate(arg), list(reversed(qubits)))
        elif name == "barrier":
            circuit.barrier(*qubits)
        elif arg is None:
            getattr(circuit, name)(*qubits)
        else:
            getattr(circuit, name)(theta[arg], *qubits)
    return circuit


def _observables(measurements: Any, position: dict, wires: list) -> tuple[list[Any], list[tuple[str, Any]]]:
    """The raw observables (``SparsePauliOp``) the ``measurements`` need, and how each measurement is
    rebuilt from their expectations: ``("expval", i)``, ``("var", (i, j))`` or ``("probs", slice)``."""
    n = len(wires)
    observables: list[Any] = []
    post: list[tuple[str, Any]] = []
    for mp in measurements:
        kind = type(mp).__name__
        if kind in ("ExpectationMP", "VarianceMP"):
            op = _pauli_op(pauli_terms(mp.obs, position), n)
            observables.append(op)
            if kind == "ExpectationMP":
                post.append(("expval", len(observables) - 1))
            else:
                observables.append(op.compose(op).simplify())
                post.append(("var", (len(observables) - 2, len(observables) - 1)))
        elif kind == "ProbabilityMP" and mp.obs is None:
            start = len(observables)
            observables.extend(_projectors([position[w] for w in (mp.wires or wires)], n))
            post.append(("probs", slice(start, len(observables))))
        else:
            raise UnsupportedOperationError(
                f"{kind}{'' if mp.obs is None else ' of ' + str(mp.obs)} on a Qiskit backend; accepted: expval, var, "
                f"probs without an observable; {SUGGESTION}"
            )
    return observables, post


def _projectors(measured: list[int], n: int) -> list[Any]:
    """|b><b| on the ``measured`` qubits as Pauli sums, one per outcome b (first qubit most significant)."""
    out = []
    for outcome in range(2 ** len(measured)):
        bits = [(outcome >> (len(measured) - 1 - j)) & 1 for j in range(len(measured))]
        op = _pauli_op([(1.0, {})], n)
        for q, bit in zip(measured, bits, strict=True):
            op = op.compose(_pauli_op([(0.5, {}), (0.5 if bit == 0 else -0.5, {q: "Z"})], n))
        out.append(op.simplify())
    return out


def tape_results(tape: Any, converted: Converted, raw: Any) -> Any:
    """A tape's results (PennyLane's layout) from its raw expectation columns ``[B, R]`` (``converted.post``)."""
    results = []
    for kind, where in converted.post:
        if kind == "var":
            value = raw[:, where[1]] - raw[:, where[0]] ** 2
        else:
            value = raw[:, where]
        results.append(value if tape.batch_size is not None else value.squeeze(0))
    return tuple(results) if len(results) > 1 else results[0]
