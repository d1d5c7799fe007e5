"""Quantum layers and kernels; importing it teaches ``place``/``summary``/``deploy`` PennyLane's and Qiskit's
objects (``hybridai.quantum.adoption``)."""

from hybridai.quantum import adoption as _adoption  # noqa: F401  (registers its readers with hybridai.core.foreign)
from hybridai.quantum.kernels.matrices import psd_repair, target_alignment
from hybridai.quantum.kernels.quantum_kernel import IQPFeatureMap, QuantumKernel
from hybridai.quantum.layer import QuantumLayer
from hybridai.quantum.learnable_noise import LearnableNoise

_ESTIMATORS = ("QSVC", "QSVR", "QuantumKernelRidge")  # scikit-learn classes: imported on first use


def __getattr__(name: str):
    if name in _ESTIMATORS:
        from hybridai.quantum.kernels import estimators

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
