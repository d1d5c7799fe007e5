"""``hybridai.deploy``: a trained model on its hardware, one chip or one backend per domain.

Two forms:

- ``deploy(model, "loihi")``: a whole spiking (or quantized) model on ONE chip
  (``hybridai.neuromorphic.deploy``; ``Deployment``, ``DeploymentReport``);
- ``deploy(model, spiking="loihi", quantum="ibm:fake_manila", classical="torch", mitigation=ZNE())``:
  a hybrid model cut into segments by domain (``segments``), each on its backend (``placed``), with a
  report per segment (``report``; ``HybridDeployment``, ``HybridReport``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from hybridai.core.contracts import Backend
from hybridai.core.errors import ConfigError, invalid, suggest
from hybridai.deployment.hybrid import HybridDeployment, deploy_hybrid
from hybridai.deployment.placed import SegmentCost
from hybridai.deployment.report import HybridReport, SegmentReport
from hybridai.deployment.segments import Segment, cut
from hybridai.neuromorphic.deploy import Deployment, deploy_chip


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
) -> Deployment | HybridDeployment:
    """Deploy a trained model: on one chip (``backend``), or each domain on its own backend.

    One chip: ``deploy(model, "loihi", quirks="lava")`` compiles the whole model for ``backend``
    (``"loihi"`` when nothing else is given; ``"akida"``, ``"nengo"``, a plugin chip) with ``options``.

    Hybrid: ``deploy(model, chip="loihi", quantum="aer:fake_manila", classical="torch", shots=1000,
    mitigation=hybridai.ZNE(), calibration=x)``. The model (an ``nn.Sequential``) is cut into contiguous
    segments by domain (``hybridai.deployment.segments`` gives the rules): each spiking segment is
    compiled for the chip named by ``chip`` (``spiking`` is its alias; or copied onto ``"torch[:device]"``), each
    quantum segment's layers are copied onto ``quantum`` (a domain left out keeps each layer's own backend) with
    ``shots`` and ``mitigation`` (None keeps each layer's own; a module of the user's holding a quantum layer at any
    depth is a quantum segment:
    its quantum layers move; ``shots`` and ``mitigation`` without quantum layers are refused), each classical segment
    is copied onto ``classical`` (default
    ``"torch"``). The model itself is not changed. ``quantum`` takes what ``QuantumLayer(backend=...)`` takes:
    a name, a backend object, a PennyLane device (with its shots) or a Qiskit backend (``AerSimulator()`` with
    its noise model, ``FakeManilaV2()``); a ``qml.qnn.TorchLayer`` is quantum, and its copy is adopted as a
    ``QuantumLayer`` (``hybridai.place`` says how) when ``quantum``, ``shots`` or ``mitigation`` asks something
    of it. Backend options go in ``spiking_options`` and ``quantum_options`` (``{"seed": 3}``; they override
    those a device implies), or pass configured backends (``hybridai.backends.get``).

    ``calibration``: a batch in the model's input layout, for chips that need activation ranges
    (Akida); in the hybrid form it is run through the float model to each chip segment's cut.
    ``energy``: per-event joules for the chip (see ``hybridai.neuromorphic.energy.energy_model``).
    Every segment that cannot run on its backend is named, with the reason, before anything runs.
    """
    _refuse_misspelt(options)
    spiking = _chip(chip, spiking)
    hybrid = {"spiking": spiking, "quantum": quantum, "classical": classical}
    if all(v is None for v in hybrid.values()) and mitigation is None and shots is None:
        for name, value in (("spiking_options", spiking_options), ("quantum_options", quantum_options)):
            if value is not None:
                raise invalid(name, type(value).__name__, "None in the one-chip form; pass options as keywords")
        return deploy_chip(model, "loihi" if backend is None else backend, calibration=calibration, energy=energy,
                           **options)  # fmt: skip
    if backend is not None:
        given = sorted(k for k, v in hybrid.items() if v is not None) or ["mitigation/shots"]
        raise invalid(
            "backend", getattr(backend, "name", backend),
            f"None when {'/'.join(given)} is given: either one chip for the whole model (backend=) or one "
            "backend per domain (spiking=, quantum=, classical=)",
        )  # fmt: skip
    if options:
        raise invalid("options", sorted(options), "spiking_options={...} or quantum_options={...} in the hybrid form")
    return deploy_hybrid(
        model,
        spiking=spiking,
        quantum=quantum,
        classical=classical,
        mitigation=mitigation,
        shots=shots,
        calibration=calibration,
        energy=energy,
        spiking_options=spiking_options,
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
    "HybridDeployment",
    "HybridReport",
    "Segment",
    "SegmentCost",
    "SegmentReport",
    "cut",
    "deploy",
]
