"""The backend registry and the three backend contracts (public face of ``hybridai.core``).

``get("family:target", **options)``, ``available()``, ``families()``, ``register``; contracts
``QuantumExecutor``, ``Placement``, ``ChipCompiler`` with their typed capabilities. Built-in and
plugin families both arrive through the ``hybridai.backends`` entry-point group.
"""

from hybridai.core.capabilities import ChipCapabilities, PlacementCapabilities, QuantumCapabilities
from hybridai.core.contracts import (
    DOMAINS,
    Availability,
    Backend,
    ChipCompiler,
    Placement,
    QuantumExecutor,
)
from hybridai.core.execution import Execution, ExecutionConfig, ExecutionStats
from hybridai.core.registry import (
    ENTRY_POINT_GROUP,
    BackendInfo,
    available,
    backend_class,
    families,
    get,
    parse_name,
    register,
    reload,
)

__all__ = [
    "DOMAINS",
    "ENTRY_POINT_GROUP",
    "Availability",
    "Backend",
    "BackendInfo",
    "ChipCapabilities",
    "ChipCompiler",
    "Execution",
    "ExecutionConfig",
    "ExecutionStats",
    "Placement",
    "PlacementCapabilities",
    "QuantumCapabilities",
    "QuantumExecutor",
    "available",
    "backend_class",
    "families",
    "get",
    "parse_name",
    "register",
    "reload",
]
