"""Spiking layers (LIF, CUBA, SigmaDelta), surrogate gradients, encoders, decoders and adapters.

Spiking tensors are time-major ``[T, B, ...]``. Event-camera data (arrays, binning into time
steps, a synthetic camera, HDF5 storage) is in ``hybridai.events``; NIR export and import in
``hybridai.spiking.nir`` (``to_nir``, ``from_nir``); the one lowering of trained models that NIR
export and the chip compilers share in ``hybridai.spiking.graph``, with ``kind_of`` (what kind a layer is:
the names chips declare and ``hybridai.deploy`` cuts a model by). A new neuron model is one subclass of
``hybridai.spiking.neurons.SpikingNeuron`` with its own ``kind``. ``from_snntorch(net)`` turns a
model trained in snnTorch into the equivalent hybridai model (same spikes).
"""

from hybridai.spiking.encoding import (
    DeltaEncoder,
    LatencyEncoder,
    MembraneDecoder,
    RateDecoder,
    RateEncoder,
    RepeatEncoder,
    SpikeCountDecoder,
    TimeDistributed,
)
from hybridai.spiking.graph import kind_of
from hybridai.spiking.neurons import CUBA, LIF
from hybridai.spiking.sigma_delta import MessageRecord, SigmaDelta, record_messages
from hybridai.spiking.snntorch import from_snntorch
from hybridai.spiking.surrogate import ATan, FastSigmoid, Surrogate

__all__ = [
    "CUBA",
    "LIF",
    "ATan",
    "DeltaEncoder",
    "FastSigmoid",
    "LatencyEncoder",
    "MessageRecord",
    "MembraneDecoder",
    "RateDecoder",
    "RateEncoder",
    "RepeatEncoder",
    "SigmaDelta",
    "SpikeCountDecoder",
    "Surrogate",
    "TimeDistributed",
    "from_snntorch",
    "kind_of",
    "record_messages",
]
