"""A user's ``qiskit_aer.noise.NoiseModel`` checked as Aer checks it, once, before any job; and a warning when none of
its quantum errors lands on a transpiled circuit.

Aer refuses, when a job runs (``src/noise/quantum_error.hpp``, ``readout_error.hpp``; threshold 1e-10): a quantum
error's term probability outside [0, 1] or probabilities whose sum is more than 1e-10 away from 1 (Pauli errors
included), a Pauli-Lindblad rate below -1e-10, and a readout probability outside [0, 1] or a row of them more than
1e-10 away from 1. hybridai refuses those by name when the backend is built (never a job sent and retried). It also
refuses Kraus and superoperator terms that are not completely positive and trace preserving (at qiskit-aer's
``QuantumError.atol``/``rtol``, the tolerance its constructor applies to a channel): Aer would run them and return
states of trace != 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from hybridai.core.errors import ConfigError, invalid

AER_THRESHOLD = 1e-10  # qiskit-aer's QuantumError::threshold_ and ReadoutError::threshold_
NOT_GATES = frozenset({"measure", "reset", "barrier"})  # instructions whose errors are not a gate's


def check_noise_model(noise_model: Any) -> None:
    """A ConfigError naming ``noise_model``, the instruction, its qubits, the value and what Aer accepts, for the
    first error of the model that Aer would refuse (module docstring); nothing for a valid model."""
    from qiskit_aer.noise import NoiseModel

    if not isinstance(noise_model, NoiseModel):
        raise invalid(
            "noise_model", noise_model, "None or a qiskit_aer.noise.NoiseModel (NoiseModel.from_backend(...), say)"
        )
    for instruction, qubits, error in quantum_errors(noise_model):
        _check_quantum_error(instruction, qubits, error)
    for qubits, error in _readout_errors(noise_model):
        _check_readout_error(qubits, error)


def quantum_errors(model: Any) -> Iterator[tuple[str, tuple[int, ...] | None, Any]]:
    """``(instruction, qubits or None for all qubits, error)`` of every quantum error of ``model``."""
    for instruction, error in getattr(model, "_default_quantum_errors", {}).items():
        yield instruction, None, error
    for instruction, errors in getattr(model, "_local_quantum_errors", {}).items():
        for qubits, error in errors.items():
            yield instruction, tuple(qubits), error


def _readout_errors(model: Any) -> Iterator[tuple[tuple[int, ...] | None, Any]]:
    if getattr(model, "_default_readout_error", None) is not None:
        yield None, model._default_readout_error
    for qubits, error in getattr(model, "_local_readout_errors", {}).items():
        yield tuple(qubits), error


def _where(instruction: str, qubits: tuple[int, ...] | None) -> str:
    on = "every qubit" if qubits is None else f"qubits {list(qubits)}"
    return f"noise_model's error on {instruction!r} ({on})"


def _refuse(where: str, what: str, accepted: str) -> ConfigError:
    return ConfigError(f"{where} has {what}; accepted: {accepted} (Aer refuses it)")


def _check_probabilities(where: str, probabilities: Any, kind: str) -> None:
    p = np.asarray(probabilities, dtype=np.float64).ravel()
    accepted = f"{kind} in [0, 1] that sum to 1 (within {AER_THRESHOLD:g})"
    outside = p[(p < 0) | (p > 1) | ~np.isfinite(p)]
    if outside.size:
        raise _refuse(where, f"the {kind} {p.tolist()} ({outside.tolist()} outside [0, 1])", accepted)
    if abs(p.sum() - 1) > AER_THRESHOLD:
        raise _refuse(where, f"the {kind} {p.tolist()}, whose sum is {float(p.sum())!r}", accepted)


def _check_quantum_error(instruction: str, qubits: tuple[int, ...] | None, error: Any) -> None:
    from qiskit_aer.noise import PauliError, PauliLindbladError, QuantumError

    where = _where(instruction, qubits)
    if isinstance(error, PauliLindbladError):
        rates = np.asarray(error.rates, dtype=np.float64)
        negative = rates[(rates < -AER_THRESHOLD) | ~np.isfinite(rates)]
        if negative.size:
            raise _refuse(where, f"the Pauli-Lindblad rates {rates.tolist()} ({negative.tolist()} negative)",
                          f"rates >= 0 (at least -{AER_THRESHOLD:g})")  # fmt: skip
        return
    if isinstance(error, PauliError):
        _check_probabilities(where, error.probabilities, "Pauli probabilities")
        return
    if not isinstance(error, QuantumError):
        return  # refused where it is read (density: noise.Noise), run as it is by Aer
    _check_probabilities(where, error.probabilities, "term probabilities")
    for term in error.circuits:
        for inst in term.data:
            _check_channel(where, inst.operation)


def _check_channel(where: str, op: Any) -> None:
    """Kraus and superoperator instructions of an error term must be CPTP (Aer would run them unnormalised)."""
    from qiskit.quantum_info import Kraus, SuperOp
    from qiskit_aer.noise import QuantumError

    if op.name not in ("kraus", "superop"):
        return
    try:
        channel = Kraus(list(op.params)) if op.name == "kraus" else SuperOp(np.asarray(op.params[0]))
    except Exception as exc:
        raise _refuse(where, f"a {op.name} term that is not a channel ({type(exc).__name__}: {exc})",
                      "completely positive, trace-preserving channels") from None  # fmt: skip
    atol, rtol = QuantumError.atol, QuantumError.rtol
    if not channel.is_cptp(atol=atol, rtol=rtol):
        trace = _trace_map(channel)
        raise _refuse(
            where,
            f"a {op.name} term that is not completely positive and trace preserving (sum of K^dagger K = "
            f"{np.round(trace, 6).tolist()})",
            f"completely positive, trace-preserving channels (sum of K^dagger K = identity within atol={atol:g})",
        )


def _trace_map(channel: Any) -> np.ndarray:
    from qiskit.quantum_info import Kraus

    left, right = Kraus(channel)._data  # right: None for a channel of one Kraus set
    return np.asarray(sum(k.conj().T @ r for k, r in zip(left, left if right is None else right, strict=True)))


def _check_readout_error(qubits: tuple[int, ...] | None, error: Any) -> None:
    on = "every qubit" if qubits is None else f"qubits {list(qubits)}"
    for row in np.asarray(error.probabilities, dtype=np.float64):
        _check_probabilities(f"noise_model's readout error ({on})", row, "readout probabilities of each row")


def warn_if_no_error_lands(model: Any, circuit: Any, backend: str) -> None:
    """A UserWarning naming the gates when ``model`` has quantum errors on gates and none of them acts on an
    instruction of the transpiled ``circuit`` (keyed by label, else name, and qubits, as Aer keys them)."""
    if model is None:
        return
    noisy = sorted({name for name, _, _ in quantum_errors(model) if name not in NOT_GATES})
    if not noisy:
        return
    default = getattr(model, "_default_quantum_errors", {})
    local = getattr(model, "_local_quantum_errors", {})
    present: set[str] = set()
    for instruction in circuit.data:
        op = instruction.operation
        if op.name in NOT_GATES:
            continue
        key = getattr(op, "label", None) or op.name
        present.add(key)
        qubits = tuple(circuit.find_bit(q).index for q in instruction.qubits)
        if key in default or qubits in local.get(key, {}):
            return
    warnings.warn(
        f"{backend!r}: noise_model has quantum errors on {noisy}, and none of them acts on the transpiled circuit's "
        f"gates {sorted(present)}: it runs without gate noise. Accepted: errors on the gates the circuit transpiles "
        "to (the model's basis_gates; NoiseModel(basis_gates=[...]) names them)",
        UserWarning,
        stacklevel=2,
    )
