"""Neuromorphic deployment: a trained spiking (or quantized) model on Loihi, Akida or nengo.

``activity`` holds the contract every neuromorphic backend keeps (``CompiledNetwork``,
``ChipRun``, ``LayerActivity``).
"""

from .activity import ChipRun, CompiledNetwork, LayerActivity

__all__ = ["ChipRun", "CompiledNetwork", "LayerActivity"]
