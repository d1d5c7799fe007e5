"""What a configured backend can honestly do: one typed record per contract.

Capabilities are descriptions, read by layers, ``summary`` and the conformance suite; ``extra``
holds free-form facts for people (never a control channel that hybridai reads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class QuantumCapabilities:
    """A quantum executor's capabilities.

    differentiable: gradients reach every torch parameter of the tapes (autograd or a shift rule).
    exact: results are exact (no sampling, no noise) up to floating point.
    shots: results can be sampled with a finite number of shots.
    noise: the executor models noise (a noisy simulator or real hardware).
    max_qubits: size limit, ``None`` when only memory limits it.
    diff_methods: gradient methods ``ExecutionConfig.diff_method`` accepts.
    devices: torch devices the executor computes on.
    dtype: the complex dtype of exact simulation ("complex128" or "complex64"); results come back
        in the matching real dtype.
    mitigation_engines: ZNE engines the executor runs itself (e.g. ``("ibm",)``); any other
        mitigation is applied around it by ``hybridai.quantum.execution.run``.
    folds_need_barriers: the executor's optimiser cancels and merges gates but respects barriers (the Qiskit
        executors): zero-noise folding puts a barrier between folded blocks and sends ``keep_gates=False``, so
        folded tapes are optimised as any other. False: folds are sent with ``keep_gates=True``.
    runs_channels: PennyLane noise channels in a tape are noise the executor simulates (``density``), so an
        executor that is ``exact`` without them still has noise for zero-noise extrapolation to remove.
    """

    differentiable: bool = False
    exact: bool = True
    shots: bool = False
    noise: bool = False
    max_qubits: int | None = None
    diff_methods: tuple[str, ...] = ("best",)
    devices: tuple[str, ...] = ("cpu",)
    dtype: str = "complex128"
    mitigation_engines: tuple[str, ...] = ()
    folds_need_barriers: bool = False
    runs_channels: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class PlacementCapabilities:
    """A placement's capabilities: how faithfully and where the placed torch modules run.

    differentiable: gradients of placed modules are true derivatives.
    exact: placed modules compute what they compute on the CPU (no quantisation or noise).
    devices: torch devices the placed modules compute on.
    """

    differentiable: bool = True
    exact: bool = True
    devices: tuple[str, ...] = ("cpu",)
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class ChipCapabilities:
    """A chip compiler's capabilities.

    bit_exact: the compiled network reproduces the chip's integer arithmetic exactly.
    hardware: names of attached physical devices (empty: emulated in software).
    max_neurons: size limit, ``None`` when only memory limits it.
    devices: torch devices an emulator computes on.
    layers: the layer kinds the chip compiles, as ``hybridai.spiking.kind_of`` names them (the kinds in
        ``hybridai.spiking.graph.KINDS``: ``"dense"``, ``"conv"``, ``"lif"``, ``"decoder"``, ...);
        ``hybridai.deploy`` cuts a model by them. Empty: not declared (a plugin's choice): the
        spiking region around the model's spiking layers goes to the chip whole, and ``compile`` says what it
        refuses.
    frames: the chip takes frames ``[B, ...]`` (Akida), not time-major ``[T, B, ...]`` input: its segment is
        the model's front end, the layers from the input that it takes.
    takes: what it compiles, in words (the model shape and conditions such as ``reset='zero'``), for refusals.
    event_word: what the chip calls the events its neurons send (``"spikes"``, ``"graded messages"``,
        ``"non-zero activations"``), as deployment reports count them.
    takes_calibration: ``compile`` uses a calibration batch (activation or input ranges; it may still make one
        optional). False: the chip quantizes from the model alone, its ``compile`` refuses a calibration batch
        and ``hybridai.deploy`` refuses ``calibration=`` for it.
    """

    bit_exact: bool = False
    hardware: tuple[str, ...] = ()
    max_neurons: int | None = None
    devices: tuple[str, ...] = ("cpu",)
    layers: tuple[str, ...] = ()
    frames: bool = False
    takes: str = ""
    event_word: str = "spikes"
    takes_calibration: bool = True
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


# the record of any contract
Capabilities = QuantumCapabilities | PlacementCapabilities | ChipCapabilities
