"""Neuromorphic deployment: a trained spiking (or quantized) model on Loihi, Akida or nengo.

``hybridai.deploy(model, backend=...)`` compiles a model for a chip and reports what changed
(``deploy``); ``activity`` holds the contract every neuromorphic backend keeps
(``CompiledNetwork``, ``ChipRun``, ``LayerActivity``); ``energy`` prices counted events with
constants that carry their sources; ``dense_macs`` counts a conventional model's multiply-accumulates.
Per chip: ``loihi`` (bit-exact Loihi 1 emulator, ``loihi.quantize``, ``loihi.fake_quantize`` for training
what the chip computes), ``akida`` (BrainChip's engine) and ``nengo`` (a ``nengo.Network``).
"""

from . import akida, energy, loihi
from .activity import ChipRun, CompiledNetwork, LayerActivity
from .akida import AkidaNetwork
from .deploy import Deployment, DeploymentReport, deploy
from .macs import dense_macs
from .nengo import NengoNetwork, to_network

__all__ = [
    "AkidaNetwork",
    "ChipRun",
    "CompiledNetwork",
    "Deployment",
    "DeploymentReport",
    "LayerActivity",
    "NengoNetwork",
    "akida",
    "dense_macs",
    "deploy",
    "energy",
    "loihi",
    "to_network",
]
