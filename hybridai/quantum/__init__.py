"""Quantum layers and kernels; importing it teaches ``place``/``summary``/``deploy`` PennyLane's and Qiskit's
objects (``hybridai.quantum.foreign``)."""

from hybridai.quantum import foreign as _foreign  # noqa: F401  (registers its readers with hybridai.core.foreign)
from hybridai.quantum.kernel import IQPFeatureMap, QuantumKernel
from hybridai.quantum.kernel_matrices import psd_repair, target_alignment
from hybridai.quantum.layer import QuantumLayer
from hybridai.quantum.learnable_noise import LearnableNoise

_ESTIMATORS = ("QSVC", "QSVR", "QuantumKernelRidge")  # scikit-learn classes: imported on first use


def __getattr__(name: str):
    if name in _ESTIMATORS:
        from hybridai.quantum import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "IQPFeatureMap",
    "LearnableNoise",
    "QSVC",
    "QSVR",
    "QuantumKernel",
    "QuantumKernelRidge",
    "QuantumLayer",
    "psd_repair",
    "target_alignment",
]
