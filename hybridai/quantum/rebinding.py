"""Re-binding: a recorded circuit reused with new inputs and weights instead of recording it again.

Recording a circuit (running the user's ``qfunc`` under PennyLane's queue) costs more than simulating a small
one. A ``Rebinding`` keeps, per *structure key* (the shape, dtype and device of the inputs and of every
weight, and the shots), a template of the recorded tape and builds the next tapes from it by putting the new
tensors in place of the old (shallow copies of every operation: the template is never changed and shares no
operation with a tape, so threads may share it). It re-binds only what it can prove is the same circuit;
everything else is recorded every call:

* every parameter of every operation is one of the argument tensors itself (``AngleEmbedding(inputs)``,
  ``BasicEntanglerLayers(weights)``): a parameter computed from them (``inputs[:, 0]``, ``2 * weights``) is
  recomputed only by running ``qfunc``, so such a circuit is recorded every call;
* no hyperparameter is a tensor, no observable has parameters;
* ``qfunc`` read no tensor's value while recording (``bool``, ``item``, ``tolist``, ``numpy``, ``int``,
  ``float``, ``index``: a branch on values could give another circuit for other values);
* two recordings with the same key (the first calls) gave the same circuit: same operations, wires,
  hyperparameters, argument of every parameter, measurements and shape of the result (a ``qfunc`` that
  changes with outside state, a counter or a random choice, is caught when it changes between them).

A different input shape (batch size, width), dtype or device is a new key: recorded again. What is not
caught: a ``qfunc`` whose circuit changes with outside state after its first two calls; give such a layer
``rebind=False``.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from hybridai.core.errors import invalid

CHECKS = 2  # recordings compared before a key is re-bound
_VALUE_READS = frozenset(
    getattr(torch.Tensor, name)
    for name in ("__bool__", "item", "tolist", "numpy", "__int__", "__float__", "__index__", "__array__")
    if hasattr(torch.Tensor, name)
)


class ValueReads(TorchFunctionMode):
    """Notes whether any tensor's value was read into Python while active (``read``)."""

    def __init__(self) -> None:
        super().__init__()
        self.read = False

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func in _VALUE_READS:
            self.read = True
        return func(*args, **(kwargs or {}))


def structure_key(arguments: dict[str, torch.Tensor], shots: Any) -> tuple:
    """What decides the recorded circuit besides values: every argument's shape, dtype and device, the shots."""
    return (tuple((k, tuple(t.shape), t.dtype, t.device) for k, t in arguments.items()), repr(shots))


class _Template:
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


def _template(tape: Any, arguments: dict[str, torch.Tensor], extra: Any) -> _Template | None:
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
    return _Template(operations, list(tape.measurements), tape.shots, names, extra)


_PLACEHOLDER = torch.empty(0)


class Rebinding:
    """Per layer: the templates by structure key, shared by every thread that calls the layer (read and
    written under a lock; a template is never changed once stored)."""

    def __init__(self, enabled: bool = True) -> None:
        if not isinstance(enabled, bool):
            raise invalid("rebind", enabled, "True or False")
        self.enabled = enabled  # False: record on every call
        self._lock = threading.Lock()
        self._seen: dict[tuple, list] = {}  # key -> [template or None (never), recordings compared]

    def __reduce__(self) -> tuple:
        return (Rebinding, (self.enabled,))  # a copy (deepcopy, torch.save) starts empty: templates are a cache

    def recorded(
        self, arguments: dict[str, torch.Tensor], shots: Any, record: Callable[[], tuple[Any, Any]]
    ) -> tuple[Any, Any]:
        """``(tape, extra)`` for ``arguments`` (every tensor the circuit takes, by name) and ``shots``: bound from
        the template of their structure key once it has passed its checks, else what ``record()`` returns (it
        records the circuit with these very tensors), watched for value reads and observed. Not ``enabled``, or a
        key found not re-bindable: ``record()`` alone."""
        key = structure_key(arguments, shots) if self.enabled else None
        if key is not None:
            with self._lock:
                template, checked = self._seen.get(key, (False, 0))  # False: never recorded
            if template is None:
                key = None  # recorded every call from now on: nothing left to check
            elif template and checked >= CHECKS:
                return template.bind(arguments), template.extra
        reads = ValueReads()
        with reads if key is not None else contextlib.nullcontext():
            tape, extra = record()
        if key is not None:
            self.observe(key, tape, arguments, reads.read, extra)
        return tape, extra

    def observe(self, key: tuple, tape: Any, arguments: dict[str, torch.Tensor], read: bool, extra: Any) -> None:
        """Record what one recording of ``key`` showed (``read``: qfunc read a value; ``extra``: what else the
        caller keeps of the recording, compared too)."""
        template = None if read else _template(tape, arguments, extra)
        with self._lock:
            entry = self._seen.setdefault(key, [template, 0])
            if entry[0] is None:
                return
            if template is None or template.signature() != entry[0].signature():
                entry[0] = None  # not the same circuit twice: recorded every call from now on
                return
            entry[1] += 1
