"""Loihi 2 (emulated): integer rules of its neuron models, batched in torch (CPU or CUDA).

``sigma_delta``: the fixed-point sigma-delta neuron (``SigmaDeltaConfig``, ``run_sigma_delta``);
``graded_dense``: Dense synapses with graded messages (``graded_dense``, ``effective_weights``);
``resonate``: resonate-and-fire neurons (``ResonateFireConfig``, ``run_resonate_and_fire``).
Adaptive-threshold neurons and a ``loihi2`` chip backend are not built yet.
"""

from hybridai.neuromorphic.loihi2.graded_dense import SIGN_MODES, effective_weights, graded_dense
from hybridai.neuromorphic.loihi2.resonate import ResonateFireConfig, ResonateFireRun, run_resonate_and_fire
from hybridai.neuromorphic.loihi2.sigma_delta import ACTIVATIONS, SigmaDeltaConfig, SigmaDeltaRun, run_sigma_delta

__all__ = [
    "ACTIVATIONS",
    "SIGN_MODES",
    "ResonateFireConfig",
    "ResonateFireRun",
    "SigmaDeltaConfig",
    "SigmaDeltaRun",
    "effective_weights",
    "graded_dense",
    "run_resonate_and_fire",
    "run_sigma_delta",
]
