"""Spiking layers (LIF, CUBA), encoders, decoders, adapters, event-camera data and NIR.

Spiking tensors are time-major ``[T, B, ...]``. Event-camera tools are in ``hybridai.events``;
NIR export and import in ``hybridai.spiking.nir`` (``to_nir``, ``from_nir``).
"""

from .encoding import (
    DeltaEncoder,
    LatencyEncoder,
    MembraneDecoder,
    RateDecoder,
    RateEncoder,
    RepeatEncoder,
    SpikeCountDecoder,
    TimeDistributed,
)
from .neurons import CUBA, LIF
from .surrogate import ATan, FastSigmoid, Surrogate

__all__ = [
    "CUBA",
    "LIF",
    "ATan",
    "DeltaEncoder",
    "FastSigmoid",
    "LatencyEncoder",
    "MembraneDecoder",
    "RateDecoder",
    "RateEncoder",
    "RepeatEncoder",
    "SpikeCountDecoder",
    "Surrogate",
    "TimeDistributed",
]
