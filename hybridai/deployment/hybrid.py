"""A hybrid model deployed across chip, QPU and CPU: each segment on its own backend.

``deploy_hybrid(model, spiking="loihi", quantum="aer:fake_manila", classical="torch", ...)`` cuts the
model into segments by domain (``segments``), makes every segment ready for its backend before
anything runs (chip compilation, quantum re-targeting, device moves; every segment that cannot be
deployed is named with its reason in one error), and returns a ``HybridDeployment``: ``run(x)`` runs
the segments in order, ``report(x, labels)`` compares them with the float model cut by cut.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from hybridai.core import registry
from hybridai.core.contracts import Backend, ChipCompiler, Placement, QuantumExecutor
from hybridai.core.errors import ConfigError, HybridAIError, check_shots, invalid
from hybridai.core.foreign import read_layer
from hybridai.deployment.placed import PlacedSegment, place_segment, to_module
from hybridai.deployment.report import HybridReport, SegmentReport, compare
from hybridai.deployment.segments import Segment, cut
from hybridai.neuromorphic.deploy import check_labels
from hybridai.neuromorphic.energy import energy_model
from hybridai.quantum.framework_objects import backend_spec
from hybridai.spiking.layout import check_samples_layout


def deploy_hybrid(
    model: nn.Module,
    *,
    spiking: str | Backend | None = None,
    quantum: Any = None,
    classical: str | Backend | None = None,
    mitigation: Any = None,
    shots: int | None = None,
    calibration: torch.Tensor | None = None,
    energy: Mapping[str, Any] | None = None,
    spiking_options: Mapping[str, Any] | None = None,
    quantum_options: Mapping[str, Any] | None = None,
) -> HybridDeployment:
    """Deploy each segment of ``model`` on the backend of its domain (``hybridai.deploy`` documents it)."""
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a trained torch.nn.Module (an nn.Sequential of layers)")
    shots = check_shots(shots)
    segments = cut(model)
    present = {s.domain for s in segments}
    for name, value in (("shots", shots), ("mitigation", mitigation)):
        if value is not None and "quantum" not in present:  # refused as quantum= is: nothing would take it
            raise invalid(name, value, "None: the model has no quantum layers (shots= and mitigation= apply to them)")
    backends = {
        "spiking": _backend("spiking", spiking, spiking_options, present),
        "quantum": _backend("quantum", quantum, quantum_options, present),
        "classical": _backend("classical", classical, None, present),
    }
    chip = backends["spiking"]
    chip_energy = energy_model(chip.family, energy) if isinstance(chip, ChipCompiler) else None
    if energy is not None and not isinstance(chip, ChipCompiler):
        raise invalid("energy", "a dict", "None when no spiking segment runs on a chip (spiking='loihi', ...)")
    cuts = None  # the float model's tensors at the chip segments' cuts, run as far as the last chip segment
    if calibration is not None and isinstance(chip, ChipCompiler):
        last_chip = max(i for i, s in enumerate(segments) if s.domain == "spiking")
        cuts = _float_cuts(model, segments[:last_chip], calibration)
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
                )
            )
        except HybridAIError as exc:
            failures.append((segment, backend, exc))
    if failures:
        raise _refusal(failures)
    return HybridDeployment(model, placed)


def _backend(domain: str, name: Any, options: Mapping[str, Any] | None, present: set[str]) -> Backend | None:
    """The backend for ``domain`` (None: the layers keep their own; torch for spiking/classical); ``quantum=``
    takes what ``QuantumLayer(backend=...)`` takes (a PennyLane device, a Qiskit backend: ``backend_spec``)."""
    if options is not None and not isinstance(options, Mapping):
        raise invalid(f"{domain}_options", type(options).__name__, "a dict of backend options")
    if name is None:
        if options:
            raise invalid(f"{domain}_options", sorted(options), f"None unless {domain}= names a backend")
        return None if domain == "quantum" else registry.get("torch", Placement, domain=domain)
    if domain == "quantum":
        spec, implied = backend_spec(name, None, argument="quantum")  # its options give way to quantum_options
        backend = registry.get(spec, QuantumExecutor, domain="quantum", **{**implied, **dict(options or {})})
    else:
        backend = registry.get(name, **dict(options or {}))
        if domain == "classical" and not isinstance(backend, Placement):
            raise invalid("classical", backend.name, "a placement backend for classical layers, e.g. 'torch:cuda'")
        if not (isinstance(backend, ChipCompiler) or domain in backend.domains):
            raise invalid(
                domain, backend.name, "a chip ('loihi', 'loihi2', 'akida', 'nengo', a plugin chip) or 'torch[:device]'"
            )
    if domain not in present:
        raise invalid(domain, backend.name, f"None: the model has no {domain} layers")
    return backend


def _refusal(failures: list[tuple[Segment, Backend | None, HybridAIError]]) -> HybridAIError:
    lines = [f"{s.label} on {b.name if b else 'its own backend'!r}: {exc}" for s, b, exc in failures]
    kinds = {type(exc) for _, _, exc in failures}
    cls = kinds.pop() if len(kinds) == 1 else ConfigError
    noun = "segment" if len(failures) == 1 else f"{len(failures)} segments"
    return cls(f"cannot deploy {noun}, nothing was run: " + "; ".join(lines))


def _float_cuts(model: nn.Module, segments: list[Segment], x: torch.Tensor) -> list[torch.Tensor]:
    """The float model's tensor entering each segment for input ``x`` (eval mode, no gradients)."""
    if not torch.is_tensor(x):
        raise invalid("calibration", type(x).__name__, "a torch.Tensor in the model's input layout")
    cuts, was_training = [], model.training
    model.eval()
    try:
        with torch.no_grad():
            for segment in segments:
                cuts.append(x)
                for _, layer in segment.layers:
                    x = layer(to_module(layer, x))
    finally:
        model.train(was_training)
    return cuts + [x]


class HybridDeployment:
    """A model whose segments run on their backends: ``run(x)``, ``report(x, labels)``, ``segments``."""

    def __init__(self, model: nn.Module, placed: list[PlacedSegment]) -> None:
        self.model = model
        self.placed = placed

    @property
    def segments(self) -> list[tuple[str, str]]:
        """``(segment, backend)`` names, in order."""
        return [(p.name, _backend_name(p)) for p in self.placed]

    def run(self, x: torch.Tensor) -> torch.Tensor:
        """The deployed model's output for ``x``: each segment's output handed to the next."""
        for segment in self.placed:
            x, _ = segment.run(x)
        return x

    def report(self, x: torch.Tensor, labels: Any = None) -> HybridReport:
        """Float model and deployment on ``x``: end-to-end accuracy (with ``labels``), agreement per segment
        at its cut (end to end, and alone on the float model's input there), and cost per segment. A model that
        starts spiking takes ``x`` time-major ``[T, B, ...]``; a batch-first ``x`` that ``labels`` reveal is refused."""
        if self.placed and self.placed[0].segment.domain == "spiking":
            check_samples_layout(x, labels)
        cuts = _float_cuts(self.model, [p.segment for p in self.placed], x)
        reports, deployed = [], x
        last = len(self.placed) - 1
        for i, segment in enumerate(self.placed):
            deployed, cost = segment.run(deployed)
            alone = compare(cuts[i + 1], segment.run(cuts[i])[0], i == last) if i else None
            reports.append(
                SegmentReport(
                    name=segment.name,
                    domain=segment.segment.domain,
                    backend=_backend_name(segment),
                    agreement=compare(cuts[i + 1], deployed, i == last),
                    alone=alone,
                    cost=cost,
                )
            )
        accuracy = None
        reference, got = cuts[-1], deployed.to(cuts[-1].device)
        if labels is not None:
            if reference.ndim != 2:
                raise invalid("labels", "given", f"None for a model whose output is {tuple(reference.shape)}")
            labels = check_labels(labels, reference.shape[0], reference.shape[1], reference.device)
            accuracy = {
                "float": float((reference.argmax(1) == labels).double().mean()),
                "deployed": float((got.argmax(1) == labels).double().mean()),
            }
        samples = int(reference.shape[0]) if reference.ndim else 1
        return HybridReport(tuple(reports), accuracy, samples)


def _backend_name(segment: PlacedSegment) -> str:
    """The backend's name (the layers' own when the domain kept them, a TorchLayer's device), ``+ ZNE`` when
    mitigated."""
    layers = segment.quantum_layers
    kept = [read_layer(m) for m in segment.runner.modules()] if segment.runner is not None else []
    own = {layer.backend for layer in layers} | {foreign.backend for foreign in kept if foreign is not None}
    names = [segment.backend.name] if segment.backend is not None else sorted(own)
    mitigated = any(layer.mitigation is not None for layer in layers)
    return ", ".join(names or ["torch"]) + (" + ZNE" if mitigated else "")


__all__ = ["HybridDeployment", "deploy_hybrid"]
