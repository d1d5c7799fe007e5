"""What a quantum executor's ``execute`` returned, checked against the contract before anything uses it.

A plugin that returns ``None``, a bare list, too few results or results of another shape
would otherwise fail far away (a ``TypeError`` in ``dataclasses.replace``) or, worse, be reshaped into a wrong
answer (a ``[B + 1]`` column read as ``[B]``). ``check_execution`` refuses it with a ``BackendExecutionError``
naming the backend, what it returned and what ``hybridai.core.execution.Execution`` requires: one result per tape
in PennyLane's layout (a tuple of one entry per measurement when there are several, a leading batch dimension for
broadcast tapes), numeric and finite (checked on the CPU: a GPU's results are not waited for), and
``ExecutionStats``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hybridai.core.errors import BackendExecutionError
from hybridai.core.execution import Execution, ExecutionStats
from hybridai.core.redaction import redact

CONTRACT = (
    "hybridai.core.execution.Execution(results=[one per tape: a tensor for one measurement, a tuple of one per "
    "measurement for several, batch dimension first for broadcast tapes], stats=ExecutionStats(...))"
)
SHAPED = ("ExpectationMP", "VarianceMP", "ProbabilityMP")  # measurements whose result shape is fixed by the tape


def check_execution(executor: Any, tapes: list[Any], run: Any, wires: tuple) -> Execution:
    """``run`` if it is what ``executor.execute(tapes, ...)`` must return (module docstring), else a
    ``BackendExecutionError`` naming the backend and what it returned. ``wires``: the register executed on.
    hybridai's own executors (held to the contract by their tests and the conformance suite) are not checked
    again on every call: the check costs about 75 us, some 5% of a small training step."""
    if type(executor).__module__.startswith("hybridai."):
        return run
    if not isinstance(run, Execution):
        raise _broken(executor, f"{type(run).__name__} {_short(run)}")
    results = run.results
    if not isinstance(results, list | tuple) or len(results) != len(tapes):
        got = f"{len(results)} results" if isinstance(results, list | tuple) else type(results).__name__
        raise _broken(executor, f"Execution.results of {got} for {len(tapes)} tape(s)")
    if not isinstance(run.stats, ExecutionStats):
        raise _broken(executor, f"Execution.stats of type {type(run.stats).__name__}")
    for i, (tape, result) in enumerate(zip(tapes, results, strict=True)):
        _check_result(executor, i, tape, result, len(wires))
    return run


def _check_result(executor: Any, i: int, tape: Any, result: Any, n_wires: int) -> None:
    measurements = tape.measurements
    several = len(measurements) > 1
    if several and not (isinstance(result, tuple | list) and len(result) == len(measurements)):
        got = f"{len(result)} entries" if isinstance(result, tuple | list) else type(result).__name__
        raise _broken(executor, f"for tape {i} ({len(measurements)} measurements) a result of {got}")
    if not several and isinstance(result, tuple | list):
        raise _broken(executor, f"for tape {i} (one measurement) a {type(result).__name__} of {len(result)}")
    for j, (mp, part) in enumerate(zip(measurements, result if several else (result,), strict=True)):
        try:
            value = torch.as_tensor(part.detach() if torch.is_tensor(part) else part)
        except (TypeError, ValueError, RuntimeError):
            value = None
        if value is None or value.dtype == torch.bool:
            raise _broken(executor, f"for tape {i}, measurement {j}: {type(part).__name__} {_short(part)}")
        expected = _shape(mp, tape, n_wires)
        if expected is not None and tuple(value.shape) != expected:
            raise _broken(executor, f"for tape {i}, {type(mp).__name__} {j}: shape {tuple(value.shape)}, "
                          f"where the tape needs {expected}")  # fmt: skip
        if value.device.type == "cpu" and not bool(torch.isfinite(value).all()):  # on a GPU: no sync per call
            raise _broken(executor, f"for tape {i}, measurement {j}: non-finite values {_short(part)}")


def _shape(mp: Any, tape: Any, n_wires: int) -> tuple[int, ...] | None:
    """The shape of ``mp``'s result on ``tape`` (batch dimension first), or None where it is not fixed here."""
    if type(mp).__name__ not in SHAPED or (tape.shots and tape.shots.has_partitioned_shots):
        return None
    try:
        shape = tuple(mp.shape(None, n_wires))
    except Exception:  # a measurement PennyLane cannot size without a device: not checked
        return None
    return shape if tape.batch_size is None else (tape.batch_size, *shape)


def _broken(executor: Any, what: str) -> BackendExecutionError:
    name = getattr(executor, "name", type(executor).__name__)
    return BackendExecutionError(f"backend {name!r} returned {what} from execute(); accepted: {CONTRACT} (a bug in "
                                 "the backend)")  # fmt: skip


def _short(value: Any) -> str:
    text = repr(value) if not torch.is_tensor(value) else f"of shape {tuple(value.shape)}"
    text = np.array2string(value, threshold=6) if isinstance(value, np.ndarray) else text
    text = redact(text)  # a plugin's object may show what it holds
    return text if len(text) <= 80 else text[:77] + "..."
