"""Loihi (first generation): a bit-exact integer emulator of CUBA-LIF compartments and synapses.

The shape of every chip package: ``plan`` (registers from a trained LIF/CUBA network: ``plan.plan``
gives a ``LoihiPlan``), ``network`` (the runner: ``LoihiNetwork``), ``backend`` (``compile``, the verb,
and the ``loihi`` chip compiler). Concepts of their own: ``compartments`` (the neuron registers and their
update rules, both quirk sets), ``lanes`` (their time loop, in integer lanes), ``synapses`` (8-bit weight
mantissas, exponents, the one-step delay, ``run_network``), ``training`` (``fake_quantize``: train what the
chip computes). The integer helpers shared with Loihi 2 (``wrap``, ``decay``) live in
``hybridai.neuromorphic.fixed_point``.
``hybridai.neuromorphic.loihi.compile(model)`` returns the runnable network.
"""

from hybridai.neuromorphic.fixed_point import decay, wrap
from hybridai.neuromorphic.loihi.backend import compile  # noqa: A004  (the chip compiler's verb)
from hybridai.neuromorphic.loihi.compartments import (
    QUIRKS,
    RANGES,
    CompartmentConfig,
    Compartments,
    Trace,
    run_compartments,
)
from hybridai.neuromorphic.loihi.network import LoihiNetwork
from hybridai.neuromorphic.loihi.netx import export_netx
from hybridai.neuromorphic.loihi.plan import LoihiLayerPlan, LoihiPlan
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
    "LoihiPlan",
    "Trace",
    "check_weights",
    "compile",
    "decay",
    "export_netx",
    "fake_quantize",
    "run_compartments",
    "run_network",
    "synaptic_input",
    "weight_range",
    "wrap",
]
