"""hybridai: classical, quantum and spiking layers in ONE PyTorch model.

The public API, re-exported. Importing hybridai imports torch only; each backend's
stack (PennyLane, Qiskit, Mitiq, nengo, akida) is imported when first used.
"""

from hybridai import backends, events, neuromorphic, spiking, training
from hybridai.core.errors import (
    BackendNotFoundError,
    BackendUnavailableError,
    ConfigError,
    HybridAIError,
    MissingExtraError,
    ShapeError,
)
from hybridai.core.module import HybridModule, place, summary
from hybridai.deployment import Deployment, DeploymentReport, deploy
from hybridai.quantum import LearnableNoise, QuantumKernel, QuantumLayer, mitigation, psd_repair, target_alignment
from hybridai.quantum.mitigation.zne import ZNE
from hybridai.spiking import (
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
from hybridai.training import load, profile, save

__version__ = "0.1.0"


def __getattr__(name: str):
    """scikit-learn estimators (QSVC, QSVR, QuantumKernelRidge) and the backend conformance suite
    (``hybridai.testing``) are imported on first use."""
    if name == "testing":
        import importlib

        return importlib.import_module(".testing", __name__)
    if name in ("QSVC", "QSVR", "QuantumKernelRidge"):
        from hybridai.quantum.kernels import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BackendNotFoundError",
    "BackendUnavailableError",
    "CUBA",
    "ConfigError",
    "DeltaEncoder",
    "Deployment",
    "DeploymentReport",
    "HybridAIError",
    "HybridModule",
    "LIF",
    "LatencyEncoder",
    "LearnableNoise",
    "MembraneDecoder",
    "MissingExtraError",
    "QSVC",
    "QSVR",
    "QuantumKernel",
    "QuantumKernelRidge",
    "QuantumLayer",
    "RateDecoder",
    "RateEncoder",
    "RepeatEncoder",
    "ShapeError",
    "SpikeCountDecoder",
    "TimeDistributed",
    "ZNE",
    "__version__",
    "backends",
    "deploy",
    "events",
    "load",
    "mitigation",
    "neuromorphic",
    "place",
    "profile",
    "psd_repair",
    "save",
    "spiking",
    "summary",
    "target_alignment",
    "training",
    "testing",
]
