"""A settled call's mitigation engine checked against what an executor's capabilities declare, before anything
runs (``QuantumExecutor.settle`` has checked its gradient method)."""

from __future__ import annotations

from hybridai.core.contracts import QuantumExecutor
from hybridai.core.errors import invalid
from hybridai.core.execution import ExecutionConfig


def check_config(executor: QuantumExecutor, config: ExecutionConfig) -> None:
    """A ConfigError naming ``mitigation`` when its engine is not among ``executor``'s
    ``capabilities.mitigation_engines`` (hybridai's own ZNE is applied around the executor, never inside it)."""
    engines = executor.capabilities.mitigation_engines
    if config.mitigation is not None and config.mitigation.engine not in engines:
        raise invalid(
            "mitigation", config.mitigation, f"None here (run it through hybridai.quantum.execution.run.execute, "
            f"which applies ZNE around {executor.name!r}), or an engine in {engines}",
        )  # fmt: skip
