"""What a neuromorphic backend hands back: a compiled network and the activity of one run.

Every neuromorphic backend (``loihi``, ``akida``, ``nengo``, plugins) compiles a trained model into
a ``CompiledNetwork`` whose ``run(x)`` returns a ``ChipRun``: the outputs in the float model's layout
and, per layer, the events the chip would process. ``hybridai.deploy`` turns these counts into
agreement, activity, latency and energy figures; the backends only count honestly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class LayerActivity:
    """Events of one chip layer summed over every sample and time step of a run.

    name: the layer's label (e.g. ``"1: LIF"``, the Sequential index and type).
    neurons: neurons (compartments, or output units of a non-spiking layer) in the layer.
    spikes: output events (spikes; non-zero activations on a non-spiking chip).
    synaptic_ops: synaptic events delivered into the layer: each input event times its fan-out.
    neuron_updates: neuron state updates (neurons x time steps x samples).
    active_updates: those of ``neuron_updates`` whose neuron had non-zero state or input.
    dense_synaptic_ops: the synaptic events of the same layer run densely, every input sent every step
        (None where the chip has no event-free dense mode to compare with).
    """

    name: str
    neurons: int
    spikes: int
    synaptic_ops: int
    neuron_updates: int
    active_updates: int
    dense_synaptic_ops: int | None = None


@dataclass(frozen=True)
class ChipRun:
    """One run of a compiled network on a batch.

    outputs: float tensor in the layout the float model returns for the same input.
    layers: activity per chip layer, in order.
    samples: samples in the batch.
    time_steps: time steps simulated per sample (1 for a non-spiking, frame-based chip).
    latency_steps: time steps from an input reaching the chip to its effect reaching the output
        (the pipeline delay: one step per layer on Loihi, 0 where layers act within a step).
    """

    outputs: torch.Tensor
    layers: tuple[LayerActivity, ...]
    samples: int
    time_steps: int
    latency_steps: int


class CompiledNetwork(ABC):
    """A model compiled to a chip's number formats; built by ``ChipCompiler.compile``."""

    backend: str = ""

    @abstractmethod
    def run(self, x: torch.Tensor) -> ChipRun:
        """Run a batch ``x`` (the float model's input layout) and count the chip's events."""

    def describe(self) -> list[dict[str, Any]]:
        """One dict per chip layer: its kind, size and the number formats it was quantized to."""
        return []
