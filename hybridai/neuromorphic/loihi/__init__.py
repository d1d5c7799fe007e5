"""Loihi (first generation): a bit-exact integer emulator of CUBA-LIF compartments and synapses.

``compartments`` (the neuron registers and their update rules, both quirk sets), ``synapses``
(8-bit weight mantissas, exponents, the one-step delay, ``run_network``), ``plan`` (registers
from a trained LIF/CUBA network: ``quantize``), ``training`` (``fake_quantize``: train what the
chip computes), ``backend`` (the ``loihi`` chip compiler).
"""

from hybridai.neuromorphic.loihi.compartments import (
    QUIRKS,
    RANGES,
    CompartmentConfig,
    Compartments,
    Trace,
    decay,
    run_compartments,
    wrap,
)
from hybridai.neuromorphic.loihi.plan import LoihiLayerPlan, LoihiNetwork, quantize
from hybridai.neuromorphic.loihi.synapses import (
    LayerRun,
    LoihiLayer,
    check_weights,
    run_network,
    synaptic_input,
    weight_range,
)
from hybridai.neuromorphic.loihi.training import FakeQuantized, fake_quantize

__all__ = [
    "QUIRKS",
    "RANGES",
    "CompartmentConfig",
    "Compartments",
    "FakeQuantized",
    "LayerRun",
    "LoihiLayer",
    "LoihiLayerPlan",
    "LoihiNetwork",
    "Trace",
    "check_weights",
    "decay",
    "fake_quantize",
    "quantize",
    "run_compartments",
    "run_network",
    "synaptic_input",
    "weight_range",
    "wrap",
]
