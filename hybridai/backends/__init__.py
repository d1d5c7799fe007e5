"""Backend registry and the Backend contract. See ``registry`` and ``base``."""

from . import (  # noqa: F401  (built-ins register themselves)
    akida_backend,
    loihi_backend,
    nengo_backend,
    pennylane_backend,
    qiskit_backends,
    statevector,
    torch_backend,
)
from .base import (
    DOMAINS,
    Availability,
    Backend,
    Capabilities,
    ClassicalBackend,
    NeuromorphicBackend,
    QuantumBackend,
)
from .registry import ENTRY_POINT_GROUP, BackendInfo, available, families, get, register, reload

__all__ = [
    "DOMAINS",
    "ENTRY_POINT_GROUP",
    "Availability",
    "Backend",
    "BackendInfo",
    "Capabilities",
    "ClassicalBackend",
    "NeuromorphicBackend",
    "QuantumBackend",
    "available",
    "families",
    "get",
    "register",
    "reload",
]
