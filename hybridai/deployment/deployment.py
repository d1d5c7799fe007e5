"""A deployed model: its segments, each on its backend, run end to end and compared with the float model.

``Deployment`` is the one result of ``hybridai.deploy``, for one chip or one backend per domain:
``run(x)`` runs the segments in order, ``report(x, labels)`` compares them with the float model cut by cut
(``DeploymentReport``), ``segments`` names them with their backends. A deployment with one chip segment
also gives ``compiled`` (the chip's ``CompiledNetwork``: ``trace``, ``messages``, ...) and ``backend``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hybridai.core.contracts import ChipCompiler
from hybridai.core.errors import ConfigError, ShapeError
from hybridai.core.foreign import read_layer
from hybridai.deployment.placed import PlacedSegment, SegmentCost, to_module
from hybridai.deployment.report import DeploymentReport, SegmentReport, accuracies, compare
from hybridai.neuromorphic.segments import Segment
from hybridai.spiking.graph import is_spiking
from hybridai.spiking.layout import check_samples_layout


def float_cuts(model: nn.Module, segments: list[Segment], x: Any, argument: str = "x") -> list[torch.Tensor]:
    """The float model's tensor entering each of ``segments`` for input ``x``, and the one leaving the last
    (eval mode, no gradients)."""
    cuts, was_training = [], model.training
    model.eval()
    try:
        with torch.no_grad():
            for segment in segments:
                cuts.append(x)
                for _, layer in segment.layers:
                    x = layer(to_module(layer, x, argument))
    finally:
        model.train(was_training)
    return cuts + [x]


class Deployment:
    """A model whose segments run on their backends: ``run(x)``, ``report(x, labels)``, ``segments``.

    placed: the segments made ready (``PlacedSegment``: the backend, the compiled network or the torch copy).
    """

    def __init__(self, model: nn.Module, placed: list[PlacedSegment]) -> None:
        self.model = model
        self.placed = placed

    @property
    def segments(self) -> list[tuple[str, str]]:
        """``(segment, backend)`` names, in order: ``[("spiking [0-4]", "loihi2"), ("quantum [7]", ...)]``."""
        return [(p.name, backend_name(p)) for p in self.placed]

    @property
    def chip(self) -> PlacedSegment:
        """The deployment's one chip segment (a ConfigError when it has none or several)."""
        chips = [p for p in self.placed if p.compiled is not None]
        if len(chips) != 1:
            raise ConfigError(
                f"deployment.compiled and deployment.backend are not valid for a deployment with {len(chips)} chip "
                "segments; accepted: a deployment with one chip segment; read deployment.placed[i] instead"
            )
        return chips[0]

    @property
    def compiled(self) -> Any:
        """The chip segment's ``CompiledNetwork`` (``run``, ``describe``; ``trace``, ``messages`` on some chips)."""
        return self.chip.compiled

    @property
    def backend(self) -> ChipCompiler:
        """The chip segment's backend (the configured ``ChipCompiler``)."""
        backend = self.chip.backend
        assert isinstance(backend, ChipCompiler)
        return backend

    def run(self, x: torch.Tensor) -> torch.Tensor:
        """The deployed model's output for ``x``: each segment's output handed to the next."""
        for segment in self.placed:
            x, _ = segment.run(x)
        return x

    def report(self, x: torch.Tensor, labels: Any = None) -> DeploymentReport:
        """Float model and deployment on ``x``: agreement per segment at its cut (end to end, and alone on the
        float model's input there), cost per segment, and end-to-end agreement and accuracy (with ``labels``
        ``[B]``). A model that starts with a spiking segment takes ``x`` time-major ``[T, B, ...]``; a batch-first
        ``x`` that ``labels`` reveal is refused, never read as B time steps."""
        first = self.placed[0].segment.layers if self.placed else ()
        time_major = any(is_spiking(m) for _, layer in first for m in layer.modules())
        if time_major:
            check_samples_layout(x, labels)
        outputs, costs = [x], []
        for segment in self.placed:  # the deployment first: a backend names what it refuses in x
            out, cost = segment.run(outputs[-1])
            outputs.append(out)
            costs.append(cost)
        cuts = float_cuts(self.model, [p.segment for p in self.placed], x)
        last = len(self.placed) - 1
        reports = [
            self._segment_report(i, segment, cuts, outputs[i + 1], costs[i], i == last)
            for i, segment in enumerate(self.placed)
        ]
        reference, got = cuts[-1], outputs[-1]
        agreement = dict(compare(reference, got, predictions=True))
        accuracy = None
        if labels is not None:
            accuracy = accuracies(reference, got, labels)
            agreement |= {"accuracy, float model": accuracy["float"], "accuracy, deployed": accuracy["deployed"]}
        samples = x.shape[1] if time_major else x.shape[0]
        return DeploymentReport(tuple(reports), accuracy, int(samples), agreement)

    def _segment_report(
        self, i: int, segment: PlacedSegment, cuts: list[torch.Tensor], out: torch.Tensor, cost: SegmentCost, last: bool
    ) -> SegmentReport:
        reference = cuts[i + 1]
        if tuple(out.shape) != tuple(reference.shape):
            raise ShapeError(
                f"segment {segment.name} on {backend_name(segment)!r} returned outputs of shape {tuple(out.shape)} "
                f"but the float model gives {tuple(reference.shape)} there; accepted: the same layout (a bug in the "
                "backend)"
            )
        alone = compare(reference, segment.run(cuts[i])[0], last) if i else None
        return SegmentReport(
            name=segment.name,
            domain=segment.segment.domain,
            backend=backend_name(segment),
            agreement=compare(reference, out, last),
            alone=alone,
            cost=cost,
        )


def backend_name(segment: PlacedSegment) -> str:
    """The backend's name (the layers' own when the domain kept them, a TorchLayer's device), ``+ ZNE`` when
    mitigated."""
    layers = segment.quantum_layers
    kept = [read_layer(m) for m in segment.runner.modules()] if segment.runner is not None else []
    own = {layer.backend for layer in layers} | {foreign.backend for foreign in kept if foreign is not None}
    names = [segment.backend.name] if segment.backend is not None else sorted(own)
    mitigated = any(layer.mitigation is not None for layer in layers)
    return ", ".join(names or ["torch"]) + (" + ZNE" if mitigated else "")


__all__ = ["Deployment", "backend_name", "float_cuts"]
