"""``rebind="unsafe"``: a recorded circuit reused with new inputs and weights WITHOUT running ``qfunc`` again.

UNSAFE for a ``qfunc`` that reads a value or outside state: what it read is not read again. Per *structure
key* (every argument's shape, dtype, device and ``requires_grad``, grad mode, and the shots), the first two
recordings are compared; once they agree, later tapes are a template of the recording with the new tensors put in
place of the old (shallow copies of every operation: the template is never changed and shares no operation with
a tape, so threads may share it). A key is recorded on every call instead where re-binding could not reproduce
the circuit even for a ``qfunc`` that reads nothing:

* a parameter that is not one of the argument tensors itself (``inputs[:, 0]``, ``2 * weights``: only ``qfunc``
  recomputes it), a tensor hyperparameter, an observable with parameters;
* a value read seen while recording (``ValueReads``: ``bool``, ``item``, ``torch.equal``, ``str``, ...; a list
  that can never be complete: f-strings, value-dependent shapes and reads inside other functions slip through);
* two recordings that differ (operations, wires, hyperparameters, argument of every parameter, constants,
  measurements, what the caller keeps).

What is NOT caught, by design: a circuit that changes with a value or outside state (a global flag, a closure's
list, a random branch, ``module.training``) after its first two calls. Results then silently come from the
circuit recorded earlier. The default, ``rebind=True``, records on every call and has none of these limits.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Literal

import torch
from torch.overrides import TorchFunctionMode

CHECKS = 2  # recordings compared before a key is re-bound
_TENSOR_READS = "__bool__ item tolist numpy __int__ __float__ __index__ __array__ __contains__ __format__ __repr__"
_SHAPE_READS = "nonzero argwhere unique masked_select"  # results whose shape depends on values
_VALUE_READS = frozenset(
    f
    for f in (
        *(getattr(torch.Tensor, name, None) for name in f"{_TENSOR_READS} {_SHAPE_READS}".split()),
        *(getattr(torch, name, None) for name in f"equal allclose is_nonzero {_SHAPE_READS}".split()),
    )
    if f is not None
)


class ValueReads(TorchFunctionMode):
    """Notes whether any tensor's value was read into Python while active (``read``), as far as its list sees."""

    def __init__(self) -> None:
        super().__init__()
        self.read = False

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func in _VALUE_READS:
            self.read = True
        return func(*args, **(kwargs or {}))


def structure_key(arguments: dict[str, torch.Tensor], shots: Any) -> tuple:
    """What decides the recorded circuit besides values, as far as re-binding assumes: every argument's shape,
    dtype, device and ``requires_grad``, grad mode, and the shots."""
    tensors = tuple((k, tuple(t.shape), t.dtype, t.device, t.requires_grad) for k, t in arguments.items())
    return tensors, torch.is_grad_enabled(), repr(shots)


class Template:
    """A recorded tape whose argument parameters are placeholders (no tensor or graph of the recording is kept)
    and, per operation, the argument name of each parameter (None: a constant, kept)."""

    def __init__(self, operations: list[Any], measurements: list[Any], shots: Any, names: list[tuple], extra: Any):
        self.operations, self.measurements, self.shots = operations, measurements, shots
        self.names, self.extra = names, extra

    def signature(self) -> tuple:
        ops = tuple(
            (
                type(op).__name__,
                tuple(op.wires),
                repr(op.hyperparameters),
                names,
                repr([d for d, n in zip(op.data, names, strict=True) if n is None]),
            )
            for op, names in zip(self.operations, self.names, strict=True)
        )
        return ops, tuple(repr(m) for m in self.measurements), repr(self.extra)

    def bind(self, arguments: dict[str, torch.Tensor]) -> Any:
        import pennylane as qml

        operations = []
        for op, names in zip(self.operations, self.names, strict=True):
            op = copy.copy(op)  # every one new: no tape shares an operation with the template
            if any(names):
                op.data = tuple(d if n is None else arguments[n] for d, n in zip(op.data, names, strict=True))
            operations.append(op)
        return qml.tape.QuantumScript(operations, self.measurements, shots=self.shots)


_PLACEHOLDER = torch.empty(0)


def template(tape: Any, arguments: dict[str, torch.Tensor], extra: Any) -> Template | None:
    """The template of ``tape`` if it can be re-bound (module docstring), else None."""
    by_id = {id(t): name for name, t in arguments.items()}
    operations, names = [], []
    for op in tape.operations:
        if any(torch.is_tensor(v) for v in op.hyperparameters.values()) or getattr(op, "_pauli_rep", None) is not None:
            return None
        found = tuple(by_id.get(id(d)) for d in op.data)
        if any(n is None and torch.is_tensor(d) for d, n in zip(op.data, found, strict=True)):
            return None  # a tensor computed from the arguments (or captured): only qfunc recomputes it
        op.batch_size  # noqa: B018 - computed once here (same shapes: valid for every copy)
        op = copy.copy(op)  # the template keeps none of the recorded tape's operations
        if any(found):
            op.data = tuple(d if n is None else _PLACEHOLDER for d, n in zip(op.data, found, strict=True))
        operations.append(op)
        names.append(found)
    if any(mp.obs is not None and mp.obs.data for mp in tape.measurements):
        return None
    return Template(operations, list(tape.measurements), tape.shots, names, extra)


def unsafe_recorded(
    seen: dict,
    lock: Any,
    arguments: dict[str, torch.Tensor],
    shots: Any,
    record: Callable[[], tuple[Any, Any]],
    check: Callable[[Any], None],
) -> tuple[Any, Any]:
    """``(tape, extra)``: bound from the template of the structure key of ``arguments`` and ``shots`` once it has
    passed its checks (``seen``: key -> [template or None (never), recordings compared], read and written under
    ``lock``), else ``record()`` (then ``check(tape)``), watched for value reads and observed."""
    key = structure_key(arguments, shots)
    with lock:
        entry = seen.get(key)
        template_: Template | Literal[False] | None  # False: never recorded; None: never bound from a template
        template_, checked = entry if entry is not None else (False, 0)
    if template_ and checked >= CHECKS:
        return template_.bind(arguments), template_.extra
    watch = template_ is not None
    reads = ValueReads()
    if watch:
        with reads:
            tape, extra = record()
    else:
        tape, extra = record()  # recorded every call from now on: nothing left to check
    check(tape)
    if watch:
        _observe(seen, lock, key, tape, arguments, reads.read, extra)
    return tape, extra


def _observe(seen: dict, lock: Any, key: tuple, tape: Any, arguments: dict, read: bool, extra: Any) -> None:
    """Record what one recording of ``key`` showed (``read``: qfunc read a value; ``extra``: what else the
    caller keeps of the recording, compared too)."""
    new = None if read else template(tape, arguments, extra)
    with lock:
        entry = seen.setdefault(key, [new, 0])
        if entry[0] is None:
            return
        if new is None or new.signature() != entry[0].signature():
            entry[0] = None  # not the same circuit twice: recorded every call from now on
            return
        entry[1] += 1
