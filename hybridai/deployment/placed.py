"""One segment of a hybrid model made ready for its backend, and what one run of it cost.

``place_segment`` turns a ``Segment`` into a ``PlacedSegment``: a spiking segment compiled for its chip
(``ChipCompiler.compile``) or copied onto a torch device (``Placement``), a quantum segment's layers
copied and re-targeted (backend, shots, mitigation; a ``qml.qnn.TorchLayer`` adopted as a ``QuantumLayer``
first), a classical segment copied onto its device.
The user's model is never changed.

A module used twice stays one module within a segment (one copy for both positions: ``copy.deepcopy`` keeps
sharing, and re-targeting replaces a shared layer by one layer). Used by two segments, each segment holds its own
copy, made from the same weights at deploy time: inference copies, exact for inference (a deployment runs under
``torch.no_grad`` and never trains). A chip compiles every position it is given, a module used twice into
registers twice, from the same weights. ``PlacedSegment.run(x)`` returns the segment's output and its
``SegmentCost`` in the segment's own units.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from hybridai.core.chip import ChipRun, CompiledNetwork
from hybridai.core.contracts import Backend, ChipCompiler, Placement
from hybridai.core.errors import ShapeError, invalid
from hybridai.core.execution import ExecutionStats
from hybridai.core.module import retarget
from hybridai.neuromorphic.energy import EnergyEstimate, EnergyModel, estimate
from hybridai.neuromorphic.macs import dense_macs
from hybridai.neuromorphic.segments import Segment
from hybridai.quantum.execution.run import check_mitigation
from hybridai.quantum.module import QuantumModule
from hybridai.spiking.encoding import TimeDistributed
from hybridai.spiking.graph import SPIKING, kind_of


@dataclass(frozen=True)
class SegmentCost:
    """What one run of a segment cost, in its domain's units.

    seconds: wall time of the run. chip: the chip's activity (events, synaptic operations, neuron
    updates, time steps) and ``energy`` its estimate, for a chip segment; ``event_word``: what the chip calls
    its events (``ChipCapabilities.event_word``). quantum: circuits, primitive calls and shots, for a quantum
    segment. macs: multiply-accumulates of the ``nn.Linear``/``nn.Conv2d`` layers, for a segment run in torch.
    """

    seconds: float
    chip: ChipRun | None = None
    energy: EnergyEstimate | None = None
    quantum: ExecutionStats | None = None
    macs: int | None = None
    event_word: str = "spikes"

    def describe(self) -> str:
        """One line: the counts that matter for this segment."""
        parts = []
        if self.chip is not None:
            run = self.chip
            spikes = sum(layer.spikes for layer in run.layers)
            ops = sum(layer.synaptic_ops for layer in run.layers)
            parts += [f"{spikes:,} {self.event_word}", f"{ops:,} synaptic ops", f"{run.time_steps} time steps/sample"]
            if self.energy is not None:
                parts.append(f"{self.energy.per_sample * 1e9:.3g} nJ/sample")
        if self.quantum is not None:
            q = self.quantum
            parts += [
                f"{q.circuits:,} circuits",
                f"{q.shots:,} shots",
                f"{q.calls} primitive call{'s' if q.calls != 1 else ''}",
            ]
        if self.macs is not None:
            parts.append(f"{self.macs:,} MACs")
        return ", ".join(parts)


@dataclass
class PlacedSegment:
    """A segment ready to run: ``backend`` runs ``runner`` (a torch module) or ``compiled`` (a chip network)."""

    segment: Segment
    backend: Backend | None
    reference: nn.Module  # the user's layers, in float (an nn.Sequential, or the whole model): the reference
    runner: nn.Module | None = None
    compiled: CompiledNetwork | None = None
    energy: EnergyModel | None = None
    event_word: str = "spikes"  # the chip's word for its events (ChipCapabilities.event_word)
    quantum_layers: list[QuantumModule] = field(default_factory=list)
    # quantum layers keep their last run's statistics: one run at a time, so that each run reports its own
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return self.segment.label

    def run(self, x: torch.Tensor) -> tuple[torch.Tensor, SegmentCost]:
        """The segment's output for ``x`` (moved to its device and dtype) and what it cost."""
        start = time.perf_counter()
        if self.compiled is not None:
            chip_run = self.compiled.run(x)
            seconds = time.perf_counter() - start
            energy = estimate(chip_run, self.energy) if self.energy is not None else None
            return chip_run.outputs, SegmentCost(seconds, chip=chip_run, energy=energy, event_word=self.event_word)
        assert self.runner is not None
        if self.quantum_layers:
            with self._lock, torch.no_grad():
                start = time.perf_counter()
                out = self.runner(to_module(self.runner, x))
                stats = [layer.last_execution.stats for layer in self.quantum_layers if layer.last_execution]
            return out, SegmentCost(time.perf_counter() - start, quantum=sum(stats, ExecutionStats()))
        with torch.no_grad():
            out = self.runner(to_module(self.runner, x))
        return out, SegmentCost(time.perf_counter() - start, macs=_macs(self.runner, x))


def to_module(module: nn.Module, x: torch.Tensor, argument: str = "x") -> torch.Tensor:
    """``x`` on the device and in the floating dtype of ``module``'s first parameter (as is without one): the one
    dtype mover of a deployment (a chip takes spike counts of any dtype; the float model its parameters')."""
    if not torch.is_tensor(x):
        raise invalid(argument, type(x).__name__, "a torch.Tensor in the model's input layout", ShapeError)
    param = next(module.parameters(), None)
    if param is None or x.is_complex():
        return x
    dtype = param.dtype if param.is_floating_point() else x.dtype
    return x.to(device=param.device, dtype=dtype if x.is_floating_point() or dtype != x.dtype else x.dtype)


def _macs(module: nn.Module, x: torch.Tensor) -> int | None:
    """Multiply-accumulates of ``module`` on the batch ``x`` ``[B, ...]``; None where ``x`` is time-major (a
    spiking layer, a decoder or a ``TimeDistributed`` layer reads it): a chip counts that work per step, in events."""
    if not any(isinstance(m, nn.Linear | nn.Conv2d) for m in module.modules()):
        return 0
    time_major = (*SPIKING, "decoder")
    if x.ndim < 2 or any(kind_of(m) in time_major or isinstance(m, TimeDistributed) for m in module.modules()):
        return None
    return dense_macs(module, tuple(x.shape[1:])) * x.shape[0]


def _sequential(segment: Segment) -> nn.Sequential:
    """The segment's own layers, keyed by their model indices so that errors name ``model[3]``."""
    return nn.Sequential(OrderedDict((index.replace(".", "_"), m) for index, m in segment.layers))


def place_segment(
    segment: Segment,
    backend: Backend | None,
    *,
    calibration: torch.Tensor | None,
    shots: int | None,
    mitigation: Any,
    energy: EnergyModel | None,
    requested: Any = None,
    whole: nn.Module | None = None,
) -> PlacedSegment:
    """``segment`` made ready for ``backend``; a HybridAIError (from the backend) when it cannot run there.
    ``requested``: the ``quantum=`` value ``backend`` was made from (a PennyLane device's wires are checked
    against each layer's qubits). ``whole``: the user's model when the segment is all of it (compiled as it is,
    so that a chip names its layers as the model does)."""
    reference = whole if whole is not None else _sequential(segment)
    if isinstance(backend, ChipCompiler):
        compiled = backend.compile(reference, calibration=calibration)
        word = backend.capabilities.event_word
        return PlacedSegment(segment, backend, reference, compiled=compiled, energy=energy, event_word=word)
    runner = copy.deepcopy(reference).eval()
    if segment.domain == "quantum":
        runner = _retarget_quantum(runner, backend, requested, shots, mitigation)
    elif isinstance(backend, Placement):
        runner = backend.place(runner)
    quantum = [m for m in runner.modules() if isinstance(m, QuantumModule)]
    return PlacedSegment(segment, backend, reference, runner=runner, quantum_layers=quantum)


def _retarget_quantum(
    runner: nn.Module, backend: Backend | None, requested: Any, shots: int | None, mitigation: Any
) -> nn.Module:
    """The quantum segment's layers (copies), at any depth (a QuantumLayer inside a user's block too), on
    ``backend`` (None: each its own) with ``shots`` and ``mitigation`` (None: each its own), as ``hybridai.place``
    re-targets them (``retarget``). A TorchLayer is adopted as a ``QuantumLayer`` first when something is asked
    of it (a backend, shots or mitigation); else it runs as it is, on its own device."""
    if backend is not None or shots is not None or mitigation is not None:
        runner = retarget(runner, "quantum", backend, requested)  # a device's wires checked against each layer
    for layer in (m for m in runner.modules() if isinstance(m, QuantumModule)):
        if shots is not None:
            layer.shots = shots
        # mitigation=None keeps each layer's own (a ZNE the user gave a layer is never dropped), checked anew
        # against the layer's new backend
        layer.mitigation = check_mitigation(
            layer.resolved_backend, layer.mitigation if mitigation is None else mitigation
        )
    return runner


__all__ = ["PlacedSegment", "SegmentCost", "place_segment", "to_module"]
