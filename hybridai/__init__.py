"""hybridai: classical, quantum and spiking layers in ONE PyTorch model.

The public API, re-exported. Importing hybridai imports torch only; each backend's
stack (PennyLane, Qiskit, Mitiq, nengo, akida) is imported when first used.
"""

from . import backends, events, spiking
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
from .spiking import (
    CUBA,
    LIF,
    DeltaEncoder,
    LatencyEncoder,
    MembraneDecoder,
    RateDecoder,
    RateEncoder,
    RepeatEncoder,
    SpikeCountDecoder,
    TimeDistributed,
)

__version__ = "0.1.0"

__all__ = [
    "BackendNotFoundError",
    "BackendUnavailableError",
    "CUBA",
    "ConfigError",
    "DeltaEncoder",
    "HybridAIError",
    "HybridModule",
    "LIF",
    "LatencyEncoder",
    "MembraneDecoder",
    "MissingExtraError",
    "QuantumLayer",
    "RateDecoder",
    "RateEncoder",
    "RepeatEncoder",
    "ShapeError",
    "SpikeCountDecoder",
    "TimeDistributed",
    "__version__",
    "backends",
    "events",
    "place",
    "spiking",
    "summary",
]
