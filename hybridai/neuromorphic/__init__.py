"""Neuromorphic deployment: a trained spiking (or quantized) model on Loihi, Akida or nengo.

``hybridai.deploy(model, backend=...)`` compiles a model for a chip and reports what changed
(``deploy``); ``activity`` holds the contract every neuromorphic backend keeps
(``CompiledNetwork``, ``ChipRun``, ``LayerActivity``); ``energy`` prices counted events with
constants that carry their sources. Per chip: ``nengo`` (a ``nengo.Network``).
"""

from . import energy
from .activity import ChipRun, CompiledNetwork, LayerActivity
from .deploy import Deployment, DeploymentReport, deploy
from .nengo import NengoNetwork, to_network

__all__ = [
    "ChipRun",
    "CompiledNetwork",
    "Deployment",
    "DeploymentReport",
    "LayerActivity",
    "NengoNetwork",
    "deploy",
    "energy",
    "to_network",
]
