"""What quantum layers and kernels share: running their tapes on their backend and keeping what the
run cost (the backend keeps nothing per call)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from hybridai.core.execution import Execution, ExecutionConfig
from hybridai.core.module import HybridModule
from hybridai.quantum.execution import execute


class QuantumModule(HybridModule):
    """A HybridModule of the quantum domain; subclasses set ``n_qubits``, ``weight_shapes``, ``shots``,
    ``diff_method`` and ``mitigation`` and call ``run``."""

    domain = "quantum"
    default_backend = "statevector"
    last_execution: Execution | None = None

    @property
    def wires(self) -> list[int]:
        """The wires ``0 .. n_qubits-1``."""
        return list(range(self.n_qubits))

    def weight_tensors(self, dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
        """The trainable weights by name (``weight_shapes``), cast to ``dtype`` (autograd flows through the cast)."""
        return {n: getattr(self, n) if dtype is None else getattr(self, n).to(dtype) for n in self.weight_shapes}

    def run(self, tapes: list[Any]) -> list[Any]:
        """Results of ``tapes`` on this module's backend (in ONE backend call, mitigation included)."""
        config = ExecutionConfig(
            tuple(self.wires), self.shots, diff_method=self.diff_method, mitigation=self.mitigation
        )
        done = execute(self.resolved_backend, tapes, config)
        self.last_execution = dataclasses.replace(done, results=[])  # statistics only: no autograd graph kept
        return done.results

    @property
    def last_mitigation(self) -> Any:
        """The ``ZNEResult`` of the last run (noisy values per scale factor; a list for several tapes), if any."""
        return None if self.last_execution is None else self.last_execution.mitigation

    @property
    def execution_stats(self) -> dict[str, Any] | None:
        """Circuits, primitive calls, shots and seconds of the last run."""
        return None if self.last_execution is None else dataclasses.asdict(self.last_execution.stats)
