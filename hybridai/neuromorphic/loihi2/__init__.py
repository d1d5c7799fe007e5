"""Loihi 2 (emulated): integer rules of its neuron models, batched in torch (CPU or CUDA).

``sigma_delta``: the fixed-point sigma-delta neuron (``SigmaDeltaConfig``, ``run_sigma_delta``).
Graded Dense synapses, resonate-and-fire and adaptive-threshold neurons and a ``loihi2`` chip
backend are not built yet.
"""

from hybridai.neuromorphic.loihi2.sigma_delta import ACTIVATIONS, SigmaDeltaConfig, SigmaDeltaRun, run_sigma_delta

__all__ = ["ACTIVATIONS", "SigmaDeltaConfig", "SigmaDeltaRun", "run_sigma_delta"]
