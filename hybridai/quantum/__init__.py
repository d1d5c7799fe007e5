"""Quantum layers and kernels."""

from .layer import QuantumLayer

__all__ = ["QuantumLayer"]
