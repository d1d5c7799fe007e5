"""hybridai: classical, quantum and spiking layers in ONE PyTorch model.

The public API, re-exported. Importing hybridai imports torch only; each backend's
stack (PennyLane, Qiskit, Mitiq, nengo, akida) is imported when first used.
"""

from . import backends
from .errors import (
    BackendNotFoundError,
    BackendUnavailableError,
    ConfigError,
    HybridAIError,
    MissingExtraError,
    ShapeError,
)
from .module import HybridModule, place, summary
from .quantum import QuantumLayer

__version__ = "0.1.0"

__all__ = [
    "BackendNotFoundError",
    "BackendUnavailableError",
    "ConfigError",
    "HybridAIError",
    "HybridModule",
    "MissingExtraError",
    "QuantumLayer",
    "ShapeError",
    "__version__",
    "backends",
    "place",
    "summary",
]
