"""Loihi 2 (emulated): integer rules of its neuron models, batched in torch (CPU or CUDA), and the chip.

``sigma_delta``: the fixed-point sigma-delta neuron (``SigmaDeltaConfig``, ``run_sigma_delta``);
``graded_dense``: Dense synapses with graded messages (``graded_dense``, ``effective_weights``);
``resonate``: resonate-and-fire neurons (``ResonateFireConfig``, ``run_resonate_and_fire``);
``adaptive``: adaptive-threshold LIF neurons, Lava's ATRLIF (``AdaptiveLIFConfig``, ``run_adaptive_lif``);
``network``: a chain of graded Dense and sigma-delta layers on one clock (``run_graded_network``);
``plan``: a trained sigma-delta network compiled to those registers (``Loihi2Network``), run by the
``loihi2`` backend (``hybridai.deploy(model, backend="loihi2")``); ``training``: ``fake_quantize``.
"""

from hybridai.neuromorphic.loihi2.adaptive import AdaptiveLIFConfig, AdaptiveLIFRun, run_adaptive_lif
from hybridai.neuromorphic.loihi2.graded_dense import SIGN_MODES, effective_weights, graded_dense
from hybridai.neuromorphic.loihi2.network import Convolution, GradedLayer, GradedRun, run_graded_network
from hybridai.neuromorphic.loihi2.plan import Loihi2Network, compile_network
from hybridai.neuromorphic.loihi2.resonate import ResonateFireConfig, ResonateFireRun, run_resonate_and_fire
from hybridai.neuromorphic.loihi2.sigma_delta import ACTIVATIONS, SigmaDeltaConfig, SigmaDeltaRun, run_sigma_delta
from hybridai.neuromorphic.loihi2.training import FakeQuantized, fake_quantize

__all__ = [
    "ACTIVATIONS",
    "SIGN_MODES",
    "AdaptiveLIFConfig",
    "AdaptiveLIFRun",
    "Convolution",
    "FakeQuantized",
    "GradedLayer",
    "GradedRun",
    "Loihi2Network",
    "ResonateFireConfig",
    "ResonateFireRun",
    "SigmaDeltaConfig",
    "SigmaDeltaRun",
    "compile_network",
    "effective_weights",
    "fake_quantize",
    "graded_dense",
    "run_adaptive_lif",
    "run_graded_network",
    "run_resonate_and_fire",
    "run_sigma_delta",
]
