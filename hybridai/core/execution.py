"""One quantum execution: the per-call configuration going in, results and statistics coming out.

Backends are shared by many layers and threads, so everything that belongs to one call travels
with it: shots, seed, gradient method and mitigation in ``ExecutionConfig``; circuit and call
counts, time and mitigation data in the returned ``Execution``, kept by the layer that asked.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

from hybridai.core.errors import check_seed, check_shots, invalid


class Mitigation(Protocol):
    """Error mitigation as executors and ``ExecutionConfig`` see it (``hybridai.ZNE`` is one).

    engine: who runs it: ``"mitiq"`` (``hybridai.quantum.execution.run`` folds and extrapolates around any
        executor) or an engine an executor runs itself (``QuantumCapabilities.mitigation_engines``, e.g. ``"ibm"``).
    scale_factors: the noise scale factors the mitigated values are extrapolated from.
    """

    @property
    def engine(self) -> str: ...

    @property
    def scale_factors(self) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class ExecutionConfig:
    """Per-call settings of ``QuantumExecutor.execute``, settled by ``QuantumExecutor.settle`` before it runs.

    wires: the register the tapes act on (wire labels, in order: position q is qubit q).
    shots: an int in [1, 2**31 - 1], or ``None``: the tapes' shots, else the executor's default (exact, or its
        configured shots). Settled: the shots every tape runs with (``None``: exact).
    seed: ``None`` for fresh randomness, or an int in [0, 2**32 - 1]: the same seed gives the same samples.
        ``None`` settles to the executor's default seed.
    diff_method: a gradient method from the executor's ``capabilities.diff_methods``; ``"best"`` settles to the
        method the executor names for the call (``QuantumExecutor.best_method``).
    mitigation: ``hybridai.ZNE(...)`` (a ``Mitigation``) or ``None``.
    keep_gates: the tapes were folded on purpose, with nothing marking the folds: the executor must not
        cancel or merge gates (Qiskit executors transpile at optimisation level 0). An executor whose
        optimiser respects barriers declares ``capabilities.folds_need_barriers`` (the Qiskit executors do):
        zero-noise extrapolation then puts a barrier between folded blocks and sends ``keep_gates=False``,
        and the executor optimises folded tapes as any other.
    """

    wires: tuple[Any, ...] = ()
    shots: int | None = None
    seed: int | None = None
    diff_method: str = "best"
    mitigation: Mitigation | None = None
    keep_gates: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.wires, str | int) or not hasattr(self.wires, "__iter__"):
            raise invalid("wires", self.wires, "a sequence of wire labels, e.g. (0, 1, 2)")
        object.__setattr__(self, "wires", tuple(self.wires))  # range(3), qml.Wires, lists: one hashable form
        check_shots(self.shots)
        check_seed(self.seed)
        if not isinstance(self.diff_method, str):
            raise invalid("diff_method", self.diff_method, "a gradient method name such as 'best'")

    def replace(self, **changes: Any) -> ExecutionConfig:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ExecutionStats:
    """What one execution cost: circuits run (parameter sets bound), primitive calls, shots, seconds
    spent waiting for the executions."""

    circuits: int = 0
    calls: int = 0
    shots: int = 0
    seconds: float = 0.0

    def __add__(self, other: ExecutionStats) -> ExecutionStats:
        return ExecutionStats(
            self.circuits + other.circuits,
            self.calls + other.calls,
            self.shots + other.shots,
            self.seconds + other.seconds,
        )


@dataclass(frozen=True)
class Execution:
    """Results of ``execute``: one per tape (PennyLane's layout: a tensor for one measurement, a tuple
    for several; a leading batch dimension for broadcast tapes), the cost, and mitigation data
    (when zero-noise extrapolation ran: a ``ZNEResult``, or a list of one per tape for several tapes)."""

    results: list[Any]
    stats: ExecutionStats = field(default_factory=ExecutionStats)
    mitigation: Any = None
