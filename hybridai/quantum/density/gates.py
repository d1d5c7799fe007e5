"""Qiskit instructions of a transpiled circuit as Pauli transfer matrices: constant, or one angle expanded.

A gate whose parameters are numbers is a constant PTM (from Qiskit's ``Operator``, so every unitary gate Qiskit
knows works). A gate with one angle that depends on the circuit's ``Parameter``s (``rz(theta[0] + pi/2)`` after
transpilation; ``rx``, ``ry``, ``rzz``, ``p``, ``cp``, ``crz``, ... without a device) becomes an
``Expansion`` in that angle, evaluated in torch for a batch (``hybridai.quantum.qiskit_frontend.expressions`` compiles
the angle). Both are cached for Qiskit's standard gates. Anything else is refused by name: resets,
initialisations, delays, classically controlled or non-unitary instructions, gates with several free angles.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from hybridai.core.errors import UnsupportedOperationError
from hybridai.quantum.density.channels import Expansion, expand, ptm_of_unitary
from hybridai.quantum.qiskit_frontend.expressions import Angle, angle

ADVICE = "or backend='aer', which runs any Qiskit circuit"
NOT_SIMULATED = ("reset", "initialize", "delay", "measure", "store", "if_else", "for_loop", "while_loop",
                 "switch_case", "box", "kraus", "superop", "quantum_channel")  # fmt: skip


def _refuse(name: str, qubits: tuple[int, ...], why: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"the density backend cannot simulate {name!r} on qubits {list(qubits)} ({why}); accepted: unitary gates "
        f"(constant, or with one angle of the circuit's parameters) and barriers, {ADVICE}"
    )


def _is_standard(op: Any) -> bool:
    """A gate of Qiskit's standard library (its class, ``base_class``, builds the same gate from its parameters)."""
    module = getattr(getattr(op, "base_class", type(op)), "__module__", None) or ""
    return module.startswith("qiskit.circuit.library.standard_gates")


def _free(value: Any) -> bool:
    from qiskit.circuit import ParameterExpression

    return isinstance(value, ParameterExpression) and bool(value.parameters)


def _number(value: Any) -> Any:
    """A bound ``ParameterExpression`` as a number (gates take numbers); anything else as it is."""
    from qiskit.circuit import ParameterExpression

    if isinstance(value, ParameterExpression):
        number = complex(value)
        return number.real if number.imag == 0 else number
    return value


def _unitary(op: Any, params: list[Any], name: str, qubits: tuple[int, ...]) -> np.ndarray:
    from qiskit.quantum_info import Operator

    gate = op.copy()
    if params != list(op.params):
        gate.params = params
    try:
        return np.asarray(Operator(gate).data, dtype=np.complex128)
    except Exception as exc:
        raise _refuse(name, qubits, f"no unitary matrix: {type(exc).__name__}: {exc}") from None


@functools.lru_cache(maxsize=1024)
def _standard_constant(cls: type, name: str, params: tuple, num_qubits: int) -> np.ndarray:
    from qiskit.quantum_info import Operator

    gate = cls(*params) if params else cls()
    matrix = ptm_of_unitary(np.asarray(Operator(gate).data, dtype=np.complex128))
    matrix.setflags(write=False)
    return matrix


def constant_ptm(op: Any, qubits: tuple[int, ...]) -> np.ndarray:
    """The PTM of a gate whose parameters are all numbers (big-endian over ``reversed(qubits)``)."""
    params = [_number(p) for p in op.params]
    if _is_standard(op) and all(isinstance(p, float | int) for p in params):
        try:
            return _standard_constant(op.base_class, op.name, tuple(params), op.num_qubits)
        except TypeError:  # a standard gate whose constructor takes other arguments: built from the op itself
            pass
    return ptm_of_unitary(_unitary(op, params, op.name, qubits))


@functools.lru_cache(maxsize=256)
def _standard_expansion(cls: type, name: str, index: int, others: tuple) -> Expansion | None:
    def at(value: float) -> np.ndarray:
        params = list(others)
        params.insert(index, value)
        from qiskit.quantum_info import Operator

        return ptm_of_unitary(np.asarray(Operator(cls(*params)).data, dtype=np.complex128))

    return expand(at)


def affine(value: Any) -> tuple[int, float, float] | None:
    """``(i, a, b)`` when the angle ``value`` is ``a * theta[i] + b`` of one element of a ``ParameterVector`` (what
    transpilation makes of a converted gate: ``theta[3]``, ``theta[3] + pi/2``, ``-theta[3]``); None otherwise."""
    parameters = list(value.parameters)
    if len(parameters) != 1 or not hasattr(parameters[0], "index"):
        return None
    (parameter,) = parameters
    try:
        a = value.gradient(parameter)
        b = value.assign(parameter, 0)
        if getattr(a, "parameters", None) or getattr(b, "parameters", None):
            return None
        a, b = complex(a), complex(b)
    except Exception:  # functions qiskit cannot differentiate: evaluated as expressions
        return None
    if a.imag or b.imag:
        return None
    for v in (0.37, -1.21):  # the form is kept where it equals Qiskit's own binding (expressions' docstring)
        want = complex(value.bind({parameter: v}))
        if want.imag or abs(a.real * v + b.real - want.real) > 1e-9 * max(1.0, abs(want.real)):
            return None
    return parameter.index, a.real, b.real


def parametric(
    op: Any, qubits: tuple[int, ...], where: str
) -> tuple[Angle, Expansion, tuple[int, float, float] | None] | None:
    """``(angle, expansion, affine form of the angle or None)`` of a gate with one free angle; None for a constant
    gate; refused otherwise."""
    free = [i for i, p in enumerate(op.params) if _free(p)]
    if not free:
        return None
    if len(free) > 1:
        raise _refuse(op.name, qubits, f"{len(free)} angles depend on the circuit's parameters")
    (index,) = free
    others = tuple(_number(p) for i, p in enumerate(op.params) if i != index)
    expansion = None
    if _is_standard(op) and all(isinstance(p, float | int) for p in others):
        try:
            expansion = _standard_expansion(op.base_class, op.name, index, others)
        except TypeError:
            expansion = None
    if expansion is None:

        def at(value: float) -> np.ndarray:
            params = [_number(p) for p in op.params]
            params[index] = value
            return ptm_of_unitary(_unitary(op, params, op.name, qubits))

        expansion = expand(at)
    if expansion is None:
        raise _refuse(op.name, qubits, "its matrix is not a rotation in its angle (frequencies 1/2 and 1)")
    return angle(op.params[index], where), expansion, affine(op.params[index])


def check_simulated(op: Any, qubits: tuple[int, ...], clbits: int) -> None:
    """Refuse an instruction the density backend does not simulate (module docstring)."""
    if op.name in NOT_SIMULATED or clbits or getattr(op, "condition", None) is not None:
        why = "not a unitary gate" if not clbits else "it writes classical bits"
        raise _refuse(op.name, qubits, why)
