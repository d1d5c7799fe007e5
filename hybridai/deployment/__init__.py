"""``hybridai.deploy``: a trained model on its hardware, one chip or one backend per domain, one result type.

``deploy(model, chip="loihi2", quantum="aer:fake_manila", classical="torch", mitigation=ZNE())`` cuts the
model into segments by domain, asking the chip which layers it takes (``hybridai.neuromorphic.segments``), makes
each segment ready on its backend (``placed``, ``build``) and returns a ``Deployment`` (``deployment``) whose
``report(x, labels)`` is a ``DeploymentReport`` (``report``): per segment its backend, its cost and its
agreement with the float model at its cut. ``deploy(model, "loihi")`` is the same path with one segment:
the whole model on one chip.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from hybridai.core import registry
from hybridai.core.contracts import Backend, ChipCompiler
from hybridai.core.errors import ConfigError, invalid, suggest
from hybridai.deployment.build import build, refuse_quantum_layers
from hybridai.deployment.deployment import Deployment
from hybridai.deployment.placed import SegmentCost
from hybridai.deployment.report import DeploymentReport, SegmentReport, compare
from hybridai.neuromorphic.segments import Segment, cut


def deploy(
    model: nn.Module,
    backend: str | Backend | None = None,
    *,
    chip: str | Backend | None = None,
    spiking: str | Backend | None = None,
    quantum: Any = None,
    classical: str | Backend | None = None,
    mitigation: Any = None,
    shots: int | None = None,
    calibration: torch.Tensor | None = None,
    energy: Mapping[str, Any] | None = None,
    spiking_options: Mapping[str, Any] | None = None,
    quantum_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> Deployment:
    """Deploy a trained model: each part on the hardware it belongs on. Returns a ``Deployment``.

    ``deploy(model, chip="loihi2", quantum="aer:fake_manila", classical="torch", shots=1000,
    mitigation=hybridai.ZNE(), calibration=x)``: the model (an ``nn.Sequential``; nested ones are flattened)
    is cut into contiguous segments by domain (``hybridai.neuromorphic.segments`` gives the rules). The chip
    says which layers it takes (``capabilities.layers``, as ``hybridai.spiking.kind_of`` names them): each
    spiking segment (every LIF, CUBA or SigmaDelta layer with its synapses, up to its decoder) is compiled
    for ``chip`` (``spiking=`` is its alias; ``"torch[:device]"`` keeps it in torch), bounded by the layers
    the chip takes; a spiking layer the chip cannot compile is refused by name, with what it takes. A chip
    that takes frames (``akida``) gets the model's front end instead (its CNN on ``[B, C, H, W]`` frames).
    Each quantum segment's layers are copied onto ``quantum`` (a domain left out keeps each layer's own
    backend) with ``shots`` and ``mitigation`` (None keeps each layer's own; a module of the user's holding a
    quantum layer at any depth is a quantum segment; ``shots`` and ``mitigation`` without quantum layers are
    refused), each classical segment is copied onto ``classical`` (default ``"torch"``). The model itself is
    not changed. ``quantum`` takes what ``QuantumLayer(backend=...)`` takes: a name, a backend object, a
    PennyLane device (with its shots) or a Qiskit backend (``AerSimulator()`` with its noise model,
    ``FakeManilaV2()``); a ``qml.qnn.TorchLayer`` is quantum, and its copy is adopted as a ``QuantumLayer``
    (``hybridai.place`` says how) when ``quantum``, ``shots`` or ``mitigation`` asks something of it. Backend
    options go in ``spiking_options`` (the chip's) and ``quantum_options`` (``{"seed": 3}``; they override
    those a device implies), or pass configured backends (``hybridai.backends.get``).

    One chip: ``deploy(model, "loihi", quirks="lava")`` is the same deployment with one segment: the whole
    model on the chip ``backend`` (``"loihi"`` when nothing else is given; ``"loihi2"``, ``"akida"``,
    ``"nengo"``, a plugin chip), ``options`` being the chip's options. A layer outside the chip's segment is
    refused by name with what the chip takes (a chip that declares no layers gets the whole model, and its
    compiler says what it refuses); a model with quantum layers is pointed to the form above.

    ``calibration``: a batch in the model's input layout, for chips that need activation ranges (Akida); it
    is run through the float model to each chip segment's cut. ``energy``: per-event joules for the chip (see
    ``hybridai.neuromorphic.energy.energy_model``; Loihi 1's published figures are used otherwise). Every
    segment that cannot run on its backend is named, with the reason, before anything runs.

    The ``Deployment``: ``run(x)`` (the model's output, segment by segment), ``segments`` (``(label,
    backend)`` pairs), ``placed`` (the ready segments), and for a deployment with one chip segment
    ``compiled`` (its ``CompiledNetwork``) and ``backend``. ``report(x, labels)`` gives a ``DeploymentReport``:
    per segment its backend, agreement with the float model at its cut (end to end and alone) and cost
    (spikes or messages, synaptic operations, time steps and energy with the constants' sources; circuits,
    shots and primitive calls; MACs), the chip's activity per layer, the end-to-end agreement and, with
    ``labels``, both accuracies (``report.accuracy["float"]``, ``["deployed"]``).
    """
    _refuse_misspelt(options)
    given = _chip(chip, spiking)
    hybrid = {"chip": given, "quantum": quantum, "classical": classical}
    if all(v is None for v in hybrid.values()) and mitigation is None and shots is None:
        for name, value in (("spiking_options", spiking_options), ("quantum_options", quantum_options)):
            if value is not None:
                raise invalid(name, type(value).__name__, "None in the one-chip form; pass options as keywords")
        if not isinstance(model, nn.Module):
            raise invalid("model", type(model).__name__, "a trained torch.nn.Module (an nn.Sequential)")
        on_chip = registry.get("loihi" if backend is None else backend, ChipCompiler, **options)
        refuse_quantum_layers(model, on_chip.name, options)
        return build(model, chip=on_chip, calibration=calibration, energy=energy, whole=True)
    if backend is not None:
        named = sorted(k for k, v in hybrid.items() if v is not None) or ["mitigation/shots"]
        raise invalid(
            "backend", getattr(backend, "name", backend),
            f"None when {'/'.join(named)} is given: either one chip for the whole model (backend=) or one "
            "backend per domain (chip=, quantum=, classical=)",
        )  # fmt: skip
    if options:
        raise invalid("options", sorted(options), "spiking_options={...} or quantum_options={...} in the hybrid form")
    return build(
        model,
        chip=given,
        quantum=quantum,
        classical=classical,
        mitigation=mitigation,
        shots=shots,
        calibration=calibration,
        energy=energy,
        chip_options=spiking_options,
        quantum_options=quantum_options,
    )


KEYWORDS = ("chip", "spiking", "quantum", "classical", "mitigation", "shots", "calibration", "energy",
            "spiking_options", "quantum_options")  # fmt: skip


def _chip(chip: Any, spiking: Any) -> Any:
    """The neuromorphic chip of the hybrid form: ``chip=``, or ``spiking=`` (its alias); both only when they agree."""
    if chip is None:
        return spiking
    if spiking is not None and spiking != chip:
        shown = getattr(spiking, "name", spiking)
        raise invalid("spiking", shown, f"None or {getattr(chip, 'name', chip)!r} when chip= is given (its alias)")
    return chip


def _refuse_misspelt(options: Mapping[str, Any]) -> None:
    """A keyword close to one of ``deploy``'s own (``quantom=``) is a typo, not a chip option: named, with both forms'
    keywords (its value unshown: it may be a token)."""
    for key in options:
        hint = suggest(key, KEYWORDS)
        if hint:
            raise ConfigError(
                f"{key}=... is not valid for deploy(); accepted: the hybrid form's "
                f"{', '.join(k + '=' for k in KEYWORDS)}, or the one-chip form deploy(model, backend, calibration=, "
                f"energy=, **chip options) (quirks=, device=, ... as the chip takes them).{hint}"
            )


__all__ = [
    "Deployment",
    "DeploymentReport",
    "Segment",
    "SegmentCost",
    "SegmentReport",
    "compare",
    "cut",
    "deploy",
]
