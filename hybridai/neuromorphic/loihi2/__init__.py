"""Loihi 2 (emulated): integer rules of its neuron models, batched in torch (CPU or CUDA), and the chip.

The shape of every chip package: ``plan`` (a trained sigma-delta network to Loihi 2 registers: ``plan.plan``
gives a ``Loihi2Plan``), ``network`` (the runner: ``Loihi2Network``), ``backend`` (``compile``, the verb, and
the ``loihi2`` chip compiler; ``hybridai.deploy(model, backend="loihi2")``). Concepts of their own:
``sigma_delta``: the fixed-point sigma-delta neuron (``SigmaDeltaConfig``, ``run_sigma_delta``);
``graded_dense``: Dense synapses with graded messages (``graded_dense``, ``effective_weights``);
``graded_chain``: a chain of graded Dense and sigma-delta layers on one clock (``run_graded_network``);
``resonate``: resonate-and-fire neurons (``ResonateFireConfig``, ``run_resonate_and_fire``);
``adaptive``: adaptive-threshold LIF neurons, Lava's ATRLIF (``AdaptiveLIFConfig``, ``run_adaptive_lif``);
``registers``: integer registers as Lava holds them; ``training``: ``fake_quantize``; ``netx``: ``export_netx``
writes the chip layers as a lava-dl netx file for Lava (and a board) and returns the messages Lava computes.
The integer helpers shared with Loihi 1 live in ``hybridai.neuromorphic.fixed_point``.
"""

from hybridai.neuromorphic.loihi2.adaptive import AdaptiveLIFConfig, AdaptiveLIFRun, run_adaptive_lif
from hybridai.neuromorphic.loihi2.backend import compile  # noqa: A004  (the chip compiler's verb)
from hybridai.neuromorphic.loihi2.graded_chain import Convolution, GradedLayer, GradedRun, run_graded_network
from hybridai.neuromorphic.loihi2.graded_dense import SIGN_MODES, effective_weights, graded_dense
from hybridai.neuromorphic.loihi2.network import Loihi2Network
from hybridai.neuromorphic.loihi2.netx import export_netx
from hybridai.neuromorphic.loihi2.plan import Loihi2Plan, StagePlan
from hybridai.neuromorphic.loihi2.resonate import ResonateFireConfig, ResonateFireRun, run_resonate_and_fire
from hybridai.neuromorphic.loihi2.sigma_delta import ACTIVATIONS, SigmaDeltaConfig, SigmaDeltaRun, run_sigma_delta
from hybridai.neuromorphic.loihi2.training import FakeQuantized, fake_quantize
from hybridai.neuromorphic.netx import NetxExport

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
    "Loihi2Plan",
    "NetxExport",
    "ResonateFireConfig",
    "ResonateFireRun",
    "SigmaDeltaConfig",
    "SigmaDeltaRun",
    "StagePlan",
    "compile",
    "effective_weights",
    "export_netx",
    "fake_quantize",
    "graded_dense",
    "run_adaptive_lif",
    "run_graded_network",
    "run_resonate_and_fire",
    "run_sigma_delta",
]
