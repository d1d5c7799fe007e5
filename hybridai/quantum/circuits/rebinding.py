"""Re-binding: what one recording of a circuit may spare the next, per ``rebind=`` of layers and kernels.

Recording a circuit (running the user's ``qfunc`` under PennyLane's queue) costs about as much as simulating a
small one. Three modes:

* ``rebind=True`` (default; sound): ``qfunc`` is recorded on EVERY call, so whatever it reads (values through
  any torch function, shapes, outside state, grad mode) is read again, and the tape executed is this call's own
  recording. What is reused is only what follows from the recording's *structure* (``tape_structure``: every
  operation's class, wires, hyperparameters and parameter shapes, every measurement's class and wires): the
  checks of the tape (wires, measurements) and PennyLane's broadcast sizes of its operations, looked up by the
  structure of this very recording. The executor's plan is cached by the executor, per structure of the steps it
  converts this recording into (``statevector.plan``). Results equal ``rebind=False`` on every call.
* ``rebind=False``: recorded on every call, nothing reused.
* ``rebind="unsafe"``: ``qfunc`` is NOT run again once two recordings of the same argument shapes agree; new
  tensors are put into the recorded circuit (``unsafe_rebinding``). UNSAFE for a ``qfunc`` that reads a value or
  outside state: what it read then is what every later call gets. For a ``qfunc`` that reads neither, it spares
  the recording itself: 0.15-0.2 ms of a 1.1-1.4 ms training step of ``benchmarks/quantum_overhead.py`` (2 and 4
  qubits, one CPU thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

from hybridai.core.errors import invalid
from hybridai.quantum.circuits.tape_structure import broadcast, set_broadcast, structure
from hybridai.quantum.circuits.unsafe_rebinding import unsafe_recorded

MODES = (True, False, "unsafe")
ACCEPTED = (
    "True (record every call, reuse what the recorded structure decides), False (record every call, reuse "
    "nothing) or 'unsafe' (skip recording once two recordings agree: wrong for a circuit that reads values or "
    "outside state)"
)
STRUCTURES_KEPT = 64  # structures remembered per layer (a circuit whose shapes depend on values: many)


def check_mode(rebind: Any) -> bool | str:
    """``rebind`` if it is one of ``MODES``, else a ConfigError naming it."""
    if rebind is True or rebind is False or (isinstance(rebind, str) and rebind == "unsafe"):
        return rebind
    raise invalid("rebind", rebind, ACCEPTED)


class Rebinding:
    """Per layer: what its recordings showed, by structure (``rebind=True``) or by structure key
    (``"unsafe"``), shared by every thread that calls the layer (read and written under a lock; nothing stored
    is changed later, and no tape shares an operation with another)."""

    def __init__(self, mode: bool | str = True) -> None:
        self.mode = check_mode(mode)
        self._lock = threading.Lock()
        self._seen: dict[tuple, Any] = {}

    def __reduce__(self) -> tuple:
        return (Rebinding, (self.mode,))  # a copy (deepcopy, torch.save) starts empty: a cache

    def recorded(
        self,
        arguments: dict[str, torch.Tensor],
        shots: Any,
        record: Callable[[], tuple[Any, Any]],
        check: Callable[[Any], None],
    ) -> tuple[Any, Any]:
        """``(tape, extra)`` for ``arguments`` (every tensor the circuit takes, by name) and ``shots``: what
        ``record()`` returns (it records the circuit with these very tensors; ``extra``: what else the caller
        keeps of the recording), ``check(tape)`` raising for a tape the caller refuses; in the unsafe mode, a
        tape re-bound from an earlier recording instead."""
        if self.mode == "unsafe":
            return unsafe_recorded(self._seen, self._lock, arguments, shots, record, check)
        tape, extra = record()
        key = structure(tape) if self.mode else None
        if key is None:
            check(tape)
            return tape, extra
        with self._lock:
            sizes = self._seen.get(key)
        if sizes is not None:
            set_broadcast(tape, sizes)  # checked before, when first recorded with this structure
            return tape, extra
        check(tape)
        sizes = broadcast(tape)
        if sizes is not None:
            with self._lock:
                self._seen[key] = sizes
                while len(self._seen) > STRUCTURES_KEPT:
                    del self._seen[next(iter(self._seen))]
        return tape, extra
