"""``hybridai.deploy``: a trained model on its hardware, one chip or one backend per domain, one result type.

``deploy(model, chip="loihi2", quantum="aer:fake_manila", classical="torch", mitigation=ZNE())`` cuts the
model into segments by domain, asking the chip which layers it takes (``hybridai.neuromorphic.segments``), makes
each segment ready on its backend (``placed``, ``build``) and returns a ``Deployment`` (``deployment``) whose
``report(x, labels)`` is a ``DeploymentReport`` (``report``): per segment its backend, its cost and its
agreement with the float model at its cut. ``deploy(model, "loihi")`` is ``deploy(model, chip="loihi")`` with
the whole model on the chip.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from hybridai.core import registry
from hybridai.core.contracts import Backend, ChipCompiler
from hybridai.core.errors import ConfigError, HybridAIError, invalid, suggest
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
    chip_options: Mapping[str, Any] | None = None,
    quantum: Any = None,
    quantum_options: Mapping[str, Any] | None = None,
    classical: str | Backend | None = None,
    mitigation: Any = None,
    shots: int | None = None,
    calibration: torch.Tensor | None = None,
    energy: Mapping[str, Any] | None = None,
    **options: Any,
) -> Deployment:
    """Deploy a trained model: each part on the hardware it belongs on. Returns a ``Deployment``.

    ``deploy(model, chip="loihi2", quantum="aer:fake_manila", classical="torch", shots=1000,
    mitigation=hybridai.ZNE(), calibration=x)``: the model (an ``nn.Sequential``; nested ones are flattened)
    is cut into contiguous segments by domain (``hybridai.neuromorphic.segments`` gives the rules). The chip
    says which layers it takes (``capabilities.layers``, as ``hybridai.spiking.kind_of`` names them): each
    spiking segment (every LIF, CUBA or SigmaDelta layer with its synapses, up to its decoder) is compiled
    for ``chip`` (``"torch[:device]"`` keeps it in torch), bounded by the layers the chip takes; a spiking
    layer the chip cannot compile is refused by name, with what it takes. A chip that takes frames
    (``akida``) gets the model's front end instead (its CNN on ``[B, C, H, W]`` frames).
    Each quantum segment's layers are copied onto ``quantum`` (a domain left out keeps each layer's own
    backend) with ``shots`` and ``mitigation`` (None keeps each layer's own; a module of the user's holding a
    quantum layer at any depth is a quantum segment; ``shots`` and ``mitigation`` without quantum layers are
    refused), each classical segment is copied onto ``classical`` (default ``"torch"``). The model itself is
    not changed. ``quantum`` takes what ``QuantumLayer(backend=...)`` takes: a name, a backend object, a
    PennyLane device (with its shots) or a Qiskit backend (``AerSimulator()`` with its noise model,
    ``FakeManilaV2()``); a ``qml.qnn.TorchLayer`` is quantum, and its copy is adopted as a ``QuantumLayer``
    (``hybridai.place`` says how) when ``quantum``, ``shots`` or ``mitigation`` asks something of it. Backend
    options go in ``chip_options`` (``{"quirks": "lava"}``) and ``quantum_options`` (``{"seed": 3}``; they
    override those a device implies), or pass configured backends (``hybridai.backends.get``).

    One chip: ``deploy(model, "loihi", quirks="lava")`` is ``deploy(model, chip="loihi",
    chip_options={"quirks": "lava"})`` with the whole model on the chip (``"loihi"`` when no chip is named;
    ``"loihi2"``, ``"akida"``, ``"nengo"``, a plugin chip): a layer outside the chip's segment is refused by
    name with what the chip takes (a chip that declares no layers gets the whole model, and its compiler says
    what it refuses); a model with quantum layers is pointed to the keyword form.

    ``calibration``: a batch in the model's input layout, for chips that need activation ranges (Akida); it
    is run through the float model to each chip segment's cut. Refused where nothing would use it: no segment on
    a chip, or a chip that quantizes from the model alone (``loihi2``; ``deployment.build.takes_calibration``).
    ``energy``: per-event joules for the chip (see ``hybridai.neuromorphic.energy.energy_model``; Loihi 1's
    published figures are used otherwise). Every
    segment that cannot run on its backend is named, with the reason, before anything runs.

    The ``Deployment``: ``run(x)`` (the model's output, segment by segment), ``segments`` (``(label,
    backend)`` pairs), ``placed`` (the ready segments), and for a deployment with one chip segment
    ``compiled`` (its ``CompiledNetwork``) and ``backend``. ``report(x, labels)`` gives a ``DeploymentReport``:
    per segment its backend, agreement with the float model at its cut (end to end and alone) and cost
    (the chip's events in its own word, spikes or graded messages or non-zero activations, synaptic
    operations, time steps and energy with the constants' sources; circuits, shots and primitive calls; MACs),
    the chip's activity per layer, the end-to-end agreement and, with ``labels``, both accuracies
    (``report.accuracy["float"]``, ``["deployed"]``).
    """
    _refuse_unknown(options)
    whole = all(value is None for value in (chip, quantum, classical, mitigation, shots))
    if whole:  # the one-chip form: the whole model on one chip, the keywords its options
        chip = _whole_model_chip(model, backend, options, chip_options, quantum_options)
    elif backend is not None or options:
        raise _two_forms(backend, options)
    return build(
        model, chip=chip, chip_options=chip_options, quantum=quantum, quantum_options=quantum_options,
        classical=classical, mitigation=mitigation, shots=shots, calibration=calibration, energy=energy, whole=whole,
    )  # fmt: skip


KEYWORDS = tuple(name for name, p in inspect.signature(deploy).parameters.items() if p.kind is p.KEYWORD_ONLY)
# keywords deploy does not take, with its own for the same thing (hybridai.place names the chip's domain spiking=)
OTHER_NAMES = {"spiking": "chip", "spiking_options": "chip_options"}


def _whole_model_chip(
    model: Any, backend: Any, options: Mapping[str, Any], chip_options: Any, quantum_options: Any
) -> Backend:
    """The chip of the one-chip form (``"loihi"`` when ``backend`` is None) configured with ``options``, or a
    refusal: options given as a dict, a model that is not a module, a model with quantum layers."""
    for name, value in (("chip_options", chip_options), ("quantum_options", quantum_options)):
        if value is not None:
            raise invalid(name, type(value).__name__, "None in the one-chip form; pass options as keywords")
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a trained torch.nn.Module (an nn.Sequential)")
    chip = registry.get("loihi" if backend is None else backend, ChipCompiler, **options)
    refuse_quantum_layers(model, chip.name, options)
    return chip


def _two_forms(backend: Any, options: Mapping[str, Any]) -> HybridAIError:
    """A positional backend or chip options as keywords beside the keyword form's backends: one form or the other."""
    if backend is not None:
        return invalid(
            "backend", getattr(backend, "name", backend),
            "None when chip=, quantum=, classical=, mitigation= or shots= is given: either one chip for the whole "
            "model (deploy(model, backend, **chip options)) or one backend per domain (chip=, quantum=, classical=)",
        )  # fmt: skip
    return invalid("options", sorted(options), "chip_options={...} or quantum_options={...} in the keyword form")


def _refuse_unknown(options: Mapping[str, Any]) -> None:
    """A keyword deploy does not take: another name for one of its own (``spiking=``) is refused naming its own, one
    close to one of its own (``quantom=``) as a typo, not a chip option, with the keywords (values unshown: one may
    be a token)."""
    for key, value in options.items():
        if key in OTHER_NAMES:
            shown = sorted(value) if isinstance(value, Mapping) else getattr(value, "name", value)
            raise invalid(key, shown, f"{OTHER_NAMES[key]}= in its place (deploy's keyword; {key}= is not one of them)")
        hint = suggest(key, KEYWORDS)
        if hint:
            raise ConfigError(
                f"{key}=... is not valid for deploy(); accepted: the keyword form's "
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
