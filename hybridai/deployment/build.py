"""Building a ``Deployment``: backends resolved, the model cut (asking the chip), every segment made ready.

``build(model, chip=..., quantum=..., classical=..., ...)`` resolves one backend per domain, cuts the model
into segments (``segments.cut`` with the chip's capabilities), makes every segment ready for its backend
before anything runs (chip compilation, quantum re-targeting, device moves; every segment that cannot be
deployed is named with its reason in one error) and returns the ``Deployment``. ``whole=True`` is the
one-chip form: the whole model must be one chip segment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from hybridai.core import registry
from hybridai.core.contracts import Backend, ChipCompiler, Placement, QuantumExecutor
from hybridai.core.errors import ConfigError, HybridAIError, check_shots, described, invalid
from hybridai.core.module import domain_of
from hybridai.deployment.deployment import Deployment, float_cuts
from hybridai.deployment.placed import place_segment
from hybridai.neuromorphic.energy import energy_model
from hybridai.neuromorphic.segments import Segment, chip_families, cut, flatten, layer_name
from hybridai.quantum.framework_objects import backend_spec
from hybridai.spiking.graph import SPIKING

ARGUMENTS = {"spiking": "chip"}  # deploy's keyword for a domain's backend, where it is not the domain's name


def build(
    model: nn.Module,
    *,
    chip: str | Backend | None = None,
    quantum: Any = None,
    classical: str | Backend | None = None,
    mitigation: Any = None,
    shots: int | None = None,
    calibration: torch.Tensor | None = None,
    energy: Mapping[str, Any] | None = None,
    chip_options: Mapping[str, Any] | None = None,
    quantum_options: Mapping[str, Any] | None = None,
    whole: bool = False,
) -> Deployment:
    """Deploy each segment of ``model`` on the backend of its domain (``hybridai.deploy`` documents it)."""
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a trained torch.nn.Module (an nn.Sequential of layers)")
    shots = check_shots(shots)
    spiking = _backend("spiking", chip, chip_options)
    segments = _cut(model, spiking, whole)
    present = {s.domain for s in segments}
    for name, value in (("shots", shots), ("mitigation", mitigation)):
        if value is not None and "quantum" not in present:  # refused as quantum= is: nothing would take it
            raise invalid(name, value, "None: the model has no quantum layers (shots= and mitigation= apply to them)")
    backends = {
        "spiking": spiking,
        "quantum": _backend("quantum", quantum, quantum_options),
        "classical": _backend("classical", classical, None),
    }
    for domain, given in (("spiking", chip), ("quantum", quantum), ("classical", classical)):
        if given is not None and domain not in present:
            argument = ARGUMENTS.get(domain, domain)
            what = f"spiking layers (kinds {', '.join(SPIKING)})" if domain == "spiking" else f"{domain} layers"
            raise invalid(argument, getattr(backends[domain], "name", given), f"None: the model has no {what}")
    chip_compiler = spiking if isinstance(spiking, ChipCompiler) else None
    on_chip = chip_compiler is not None
    if energy is not None and not on_chip:
        raise invalid("energy", "a dict", "None when no spiking segment runs on a chip (chip='loihi', ...)")
    chip_energy = energy_model(chip_compiler.family, energy) if chip_compiler else None
    if calibration is not None and not (chip_compiler and chip_compiler.capabilities.takes_calibration):
        why = (
            f"chip {chip_compiler.name!r} quantizes from the model alone"
            if chip_compiler
            else "no segment runs on a chip"
        )
        raise invalid("calibration", described(calibration), f"None: {why}")
    cuts = None  # the float model's tensors at the chip segments' cuts, run as far as the last chip segment
    if calibration is not None and on_chip:
        last_chip = max(i for i, s in enumerate(segments) if s.domain == "spiking")
        cuts = float_cuts(model, segments[:last_chip], calibration, "calibration")
    placed, failures = [], []
    for i, segment in enumerate(segments):
        backend = backends[segment.domain]
        try:
            placed.append(
                place_segment(
                    segment,
                    backend,
                    calibration=cuts[i] if cuts is not None and i < len(cuts) else None,
                    shots=shots,
                    mitigation=mitigation,
                    energy=chip_energy,
                    requested=quantum if segment.domain == "quantum" else None,
                    whole=model if len(segments) == 1 else None,
                )
            )
        except HybridAIError as exc:
            if whole:  # one segment, the whole model: the chip's own error, as it gave it
                raise
            failures.append((segment, backend, exc))
    if failures:
        raise _refusal(failures)
    return Deployment(model, placed)


def takes_calibration(chip: str | Backend | None, options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``chip`` (a name with its ``options``, a backend, or None for none) quantizes with a calibration
    batch, so that ``deploy(..., chip=chip, calibration=x)`` takes one; True when the name or the options are not
    valid, for ``deploy`` to refuse those by name."""
    if options is not None and not isinstance(options, Mapping):
        raise invalid("options", type(options).__name__, "a dict of the chip's options, or None")
    if chip is None:
        return False
    try:
        backend = registry.get(chip, **dict(options or {}))
    except HybridAIError:
        return True
    return isinstance(backend, ChipCompiler) and backend.capabilities.takes_calibration


def _cut(model: nn.Module, chip: Backend | None, whole: bool) -> list[Segment]:
    """The segments; in the one-chip form (``whole``) the whole model as ONE chip segment, or a refusal naming the
    layers outside it and what the chip takes."""
    if not isinstance(chip, ChipCompiler):
        return cut(model)
    caps = chip.capabilities
    if whole and not caps.layers:  # a chip that declares nothing gets the whole model; its compile refuses
        return [Segment("spiking", tuple(flatten(model)))]
    segments = cut(model, caps, chip=chip.name)
    if whole and (len(segments) > 1 or segments[0].domain != "spiking"):
        outside = [layer_name(i, m) for s in segments if s.domain != "spiking" for i, m in s.layers]
        inside = [s.label for s in segments if s.domain == "spiking"]
        shown = ", ".join(outside[:6]) + (", ..." if len(outside) > 6 else "")
        raise ConfigError(
            f"backend={chip.name!r} is not valid for this model: {shown} "
            f"{'is' if len(outside) == 1 else 'are'} outside the chip's segment"
            f"{' ' + ', '.join(inside) if inside else ''}; accepted: a model {chip.name!r} takes whole: "
            f"{caps.takes or ', '.join(caps.layers)}; or one backend per domain: hybridai.deploy(model, "
            f"chip={chip.name!r}, classical='torch')"
        )
    return segments


def _backend(domain: str, name: Any, options: Mapping[str, Any] | None) -> Backend | None:
    """The backend for ``domain`` (None: the layers keep their own; torch for spiking/classical); ``quantum=``
    takes what ``QuantumLayer(backend=...)`` takes (a PennyLane device, a Qiskit backend: ``backend_spec``)."""
    keyword = ARGUMENTS.get(domain, domain)
    argument = f"{keyword}_options"
    if options is not None and not isinstance(options, Mapping):
        raise invalid(argument, type(options).__name__, "a dict of backend options")
    if name is None:
        if options:
            raise invalid(argument, sorted(options), f"None unless {keyword}= names a backend")
        return None if domain == "quantum" else registry.get("torch", Placement, domain=domain)
    if domain == "quantum":
        spec, implied = backend_spec(name, None, argument="quantum")  # its options give way to quantum_options
        return registry.get(spec, QuantumExecutor, domain="quantum", **{**implied, **dict(options or {})})
    backend = registry.get(name, **dict(options or {}))
    if domain == "classical" and not isinstance(backend, Placement):
        raise invalid("classical", backend.name, "a placement backend for classical layers, e.g. 'torch:cuda'")
    if not (isinstance(backend, ChipCompiler) or domain in backend.domains):
        raise invalid(keyword, backend.name, f"a chip (one of {chip_families()}) or 'torch[:device]'")
    return backend


def _refusal(failures: list[tuple[Segment, Backend | None, HybridAIError]]) -> HybridAIError:
    lines = [f"{s.label} on {b.name if b else 'its own backend'!r}: {exc}" for s, b, exc in failures]
    kinds = {type(exc) for _, _, exc in failures}
    cls = kinds.pop() if len(kinds) == 1 else ConfigError
    noun = "segment" if len(failures) == 1 else f"{len(failures)} segments"
    return cls(f"cannot deploy {noun}, nothing was run: " + "; ".join(lines))


def refuse_quantum_layers(model: Any, chip: str, options: Mapping[str, Any]) -> None:
    """The one-chip form runs a model without quantum layers; one with them is deployed one backend per domain:
    say so, naming them."""
    if not isinstance(model, nn.Module):
        return
    quantum = [
        f"{name or 'model'} ({type(m).__name__})" for name, m in model.named_modules() if domain_of(m) == "quantum"
    ]
    if quantum:
        shown = ", ".join(quantum[:3]) + (", ..." if len(quantum) > 3 else "")
        named = ", ".join(f"{k!r}: ..." for k in sorted(options))  # values unshown: one may be a token
        chip_options = f", chip_options={{{named}}}" if options else ""
        raise invalid(
            "backend", chip,
            f"a chip for a model without quantum layers (this one has {shown}); deploy a hybrid model one backend per "
            f"domain: hybridai.deploy(model, chip={chip!r}{chip_options}, quantum='statevector', classical='torch') "
            "(quantum= any quantum backend)",
        )  # fmt: skip


__all__ = ["build", "refuse_quantum_layers"]
