"""One lock around PennyLane's operation queue, for every thread of the process.

PennyLane records operations in ONE process-wide stack of queues (``qml.QueuingManager``'s
class-level ``_active_contexts``, not thread-local). Entering a recording (``AnnotatedQueue``) takes
PennyLane's own re-entrant lock, but building an operation does not: an operation built in one thread
(a decomposition, an inverse, a measurement) while another thread records a tape lands in that other
tape, and ``QueuingManager.stop_recording()`` in one thread empties the stack under another thread's
recording, whose operations are then lost.

hybridai therefore records tapes (``qml.tape.make_qscript``), builds operations (decompositions,
inverses, measurements, folds) and runs PennyLane's transforms and devices only inside ``recording()``:
PennyLane's own recording lock (``AnnotatedQueue._lock``; one lock, so no lock-order deadlock with
PennyLane code that records) held for the whole block, with any recording already active in this thread
set aside, so nothing hybridai builds leaks into a tape the caller is recording and nothing recorded
inside leaks out. Statevector evolution, Qiskit jobs and Aer simulation run outside the lock: only the
short PennyLane-object work is serialised.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

_FALLBACK = threading.RLock()


def lock() -> Any:
    """PennyLane's recording lock (re-entrant), or hybridai's own where a PennyLane version has none. Code
    that holds another lock as well takes this one first (one order everywhere: no deadlock)."""
    from pennylane.queuing import AnnotatedQueue

    lock = getattr(AnnotatedQueue, "_lock", None)
    return lock if lock is not None and hasattr(lock, "acquire") else _FALLBACK


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """Hold the PennyLane recording lock, with recording of any outer tape stopped (re-entrant)."""
    import pennylane as qml

    with lock(), qml.QueuingManager.stop_recording():
        yield


def record(function: Callable[..., Any], *args: Any, shots: Any = None, **kwargs: Any) -> Any:
    """The tape ``function(*args, **kwargs)`` records (``qml.tape.make_qscript``), under ``recording()``."""
    import pennylane as qml

    with recording():
        return qml.tape.make_qscript(function, shots=shots)(*args, **kwargs)
