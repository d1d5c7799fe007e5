"""Neuromorphic deployment: a trained spiking (or quantized) model on Loihi, Loihi 2, Akida or nengo.

``hybridai.deploy`` (``hybridai.deployment``) puts a model, or its chip segment, on a chip and reports what
changed; ``hybridai.core.chip`` holds the contract every neuromorphic backend keeps
(``CompiledNetwork``, ``ChipRun``, ``LayerActivity``); ``energy`` prices counted events with
constants that carry their sources; ``dense_macs`` counts a conventional model's multiply-accumulates;
``fixed_point`` holds the integer rules the emulators share (so that no chip package imports another).
Per chip, one shape: ``loihi`` (bit-exact Loihi 1 emulator), ``loihi2`` (Loihi 2's fixed-point rules),
``akida`` (BrainChip's engine) and ``nengo`` (a ``nengo.Network``) each have ``plan`` (trained model ->
the chip's registers or formats), ``network`` (the runner, a ``CompiledNetwork``) and ``backend`` (the chip
compiler and its verb ``compile``, re-exported: ``loihi.compile(model)``); ``loihi.fake_quantize`` and
``loihi2.fake_quantize`` train what the chip computes.
"""

from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.neuromorphic import akida, energy, loihi, loihi2, nengo
from hybridai.neuromorphic.akida.network import AkidaNetwork
from hybridai.neuromorphic.loihi.network import LoihiNetwork
from hybridai.neuromorphic.loihi2.network import Loihi2Network
from hybridai.neuromorphic.macs import dense_macs
from hybridai.neuromorphic.nengo.network import NengoNetwork

__all__ = [
    "AkidaNetwork",
    "ChipRun",
    "CompiledNetwork",
    "LayerActivity",
    "Loihi2Network",
    "LoihiNetwork",
    "NengoNetwork",
    "akida",
    "dense_macs",
    "energy",
    "loihi",
    "loihi2",
    "nengo",
]
