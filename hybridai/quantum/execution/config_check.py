"""A call's gradient method and mitigation engine checked against what an executor's capabilities declare, before
anything runs."""

from __future__ import annotations

from hybridai.core.contracts import QuantumExecutor
from hybridai.core.errors import invalid
from hybridai.core.execution import ExecutionConfig


def check_config(executor: QuantumExecutor, config: ExecutionConfig) -> None:
    """A ConfigError naming ``diff_method`` or ``mitigation`` when ``executor`` cannot do what ``config`` asks: a
    gradient method outside ``capabilities.diff_methods``, or a mitigation whose engine is not among
    ``capabilities.mitigation_engines`` (hybridai's own ZNE is applied around the executor, never inside it)."""
    caps = executor.capabilities
    if config.diff_method not in caps.diff_methods:
        raise invalid("diff_method", config.diff_method, f"one of {caps.diff_methods} on {executor.name!r}")
    engines = caps.mitigation_engines
    if config.mitigation is not None and config.mitigation.engine not in engines:
        raise invalid(
            "mitigation", config.mitigation, f"None here (run it through hybridai.quantum.execution.run.execute, "
            f"which applies ZNE around {executor.name!r}), or an engine in {engines}",
        )  # fmt: skip
