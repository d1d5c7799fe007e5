"""Neuromorphic deployment: a trained spiking (or quantized) model on Loihi, Akida or nengo.

``hybridai.deploy(model, backend=...)`` compiles a whole model for a chip and reports what changed
(``deploy.deploy_chip``); ``activity`` holds the contract every neuromorphic backend keeps
(``CompiledNetwork``, ``ChipRun``, ``LayerActivity``); ``energy`` prices counted events with
constants that carry their sources; ``dense_macs`` counts a conventional model's multiply-accumulates.
Per chip: ``loihi`` (bit-exact Loihi 1 emulator, ``loihi.quantize``, ``loihi.fake_quantize`` for training
what the chip computes), ``akida`` (BrainChip's engine) and ``nengo`` (a ``nengo.Network``).
"""

from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.neuromorphic import akida, energy, loihi
from hybridai.neuromorphic.akida.engine import AkidaNetwork
from hybridai.neuromorphic.deploy import Deployment, DeploymentReport, deploy_chip
from hybridai.neuromorphic.loihi.plan import LoihiNetwork
from hybridai.neuromorphic.macs import dense_macs
from hybridai.neuromorphic.nengo.network import NengoNetwork, to_network

__all__ = [
    "AkidaNetwork",
    "ChipRun",
    "CompiledNetwork",
    "Deployment",
    "DeploymentReport",
    "LayerActivity",
    "LoihiNetwork",
    "NengoNetwork",
    "akida",
    "dense_macs",
    "deploy_chip",
    "energy",
    "loihi",
    "to_network",
]
