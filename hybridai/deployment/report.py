"""What a deployment changed, segment by segment, and what each segment cost: one report for one chip or many.

``compare(reference, got)`` is the one measure of a cut: the largest absolute difference, the relative
error, for ``[B, classes]`` outputs how often the predicted class agrees, and for spike trains how often
each spike agrees. ``DeploymentReport`` holds the end-to-end agreement and accuracy (float model vs
deployment) and one ``SegmentReport`` per segment; ``str()`` prints them as tables, with each chip
segment's activity per layer and the energy constants with their sources (``chip_text``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from hybridai.core.chip import ChipRun
from hybridai.core.errors import ConfigError, invalid
from hybridai.core.text_table import format_table
from hybridai.deployment.chip_text import chip_text, mac_text
from hybridai.deployment.placed import SegmentCost
from hybridai.neuromorphic.energy import EnergyEstimate


def compare(reference: torch.Tensor, got: torch.Tensor, predictions: bool = False) -> dict[str, float]:
    """Agreement of a deployed tensor with the float model's at the same cut (the same shape: a deployment checks
    it). ``predictions``: the tensor is the model's output, so ``[B, classes]`` predicted classes are compared too;
    a spike train (time-major, 0/1 values) gets the share of equal spikes."""
    ref, out = reference.detach().double().cpu(), got.detach().double().cpu()
    result = {
        "max |difference|": float((out - ref).abs().max()) if ref.numel() else 0.0,
        "relative error": float((out - ref).norm() / ref.norm().clamp_min(1e-30)),
    }
    if predictions and ref.ndim == 2 and ref.shape[1] > 1:
        result["prediction agreement"] = float((out.argmax(1) == ref.argmax(1)).double().mean())
    elif ref.ndim > 2 and ref.numel() and set(ref.unique().tolist()) <= {0.0, 1.0}:
        result["spike agreement"] = float((out == ref).double().mean())
    return result


def check_labels(labels: Any, samples: int, classes: int, device: torch.device) -> torch.Tensor:
    """``labels`` as an int64 tensor ``[samples]`` of class indices in ``[0, classes)``, else a ConfigError naming
    them (a float dtype is taken when it holds whole numbers, as a label file saved from numpy may)."""
    accepted = f"one class index in [0, {classes - 1}] per sample: a tensor of shape ({samples},) holding integers"
    if not torch.is_tensor(labels):
        if not isinstance(labels, list | tuple | np.ndarray):
            raise invalid("labels", type(labels).__name__, accepted)
        values = np.asarray(labels, dtype=object)
        real = all(isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in values)
        if values.ndim != 1 or not real or not all(-(2**62) < v < 2**62 for v in values):  # NaN compares False
            raise invalid("labels", labels, accepted)
        labels = torch.tensor([int(v) if isinstance(v, numbers.Integral) else float(v) for v in values])
    if tuple(labels.shape) != (samples,):
        raise invalid("labels.shape", tuple(labels.shape), accepted)
    if labels.is_complex() or labels.dtype == torch.bool:
        raise invalid("labels.dtype", labels.dtype, accepted)
    if labels.is_floating_point() and not bool((labels == labels.round()).all()):  # NaN fails; inf fails the range
        raise invalid("labels", "a tensor with non-integer values", accepted)
    if samples and (float(labels.min()) < 0 or float(labels.max()) >= classes):
        raise invalid("labels", f"tensor with range [{float(labels.min()):g}, {float(labels.max()):g}]", accepted)
    return labels.to(device=device, dtype=torch.int64)


def accuracies(reference: torch.Tensor, got: torch.Tensor, labels: Any) -> dict[str, float]:
    """``{"float": a, "deployed": b}``: how often each output's predicted class is the label."""
    if reference.ndim != 2:
        raise invalid("labels", "given", f"None for a model whose output is {tuple(reference.shape)}, not [B, classes]")
    labels = check_labels(labels, reference.shape[0], reference.shape[1], reference.device)
    return {
        "float": float((reference.argmax(1) == labels).double().mean()),
        "deployed": float((got.to(reference.device).argmax(1) == labels).double().mean()),
    }


@dataclass(frozen=True)
class SegmentReport:
    """One segment: its backend, its agreement with the float model at its output cut, and its cost.

    agreement: the deployment run end to end (errors of earlier segments included). alone: the segment
    run on the float model's input at its cut (its own error only); None for the first segment, where
    both are the same. cost: what the end-to-end run of the segment cost (``SegmentCost``: the chip's
    activity and energy, the circuits and shots, or the MACs).
    """

    name: str
    domain: str
    backend: str
    agreement: dict[str, float]
    alone: dict[str, float] | None
    cost: SegmentCost

    @property
    def seconds(self) -> float:
        return self.cost.seconds


@dataclass(frozen=True)
class DeploymentReport:
    """The float model and the deployment on one batch (``str()`` prints it all).

    segments: one ``SegmentReport`` per segment, in order. accuracy: ``{"float": a, "deployed": b}`` with labels,
    else None. samples: samples in the batch. agreement: the deployment's output against the float model's
    (``compare``), with ``"accuracy, float model"`` and ``"accuracy, deployed"`` when labels were given.
    ``run``, ``energy``, ``spikes`` and ``synaptic_ops`` read the deployment's chip segment (one-chip reports).
    """

    segments: tuple[SegmentReport, ...]
    accuracy: dict[str, float] | None
    samples: int
    agreement: dict[str, float]

    @property
    def chip(self) -> SegmentReport:
        """The report of the deployment's one chip segment (a ConfigError when it has none or several)."""
        chips = [s for s in self.segments if s.cost.chip is not None]
        if len(chips) != 1:
            raise ConfigError(
                f"report.chip (run, energy, spikes, synaptic_ops) is not valid for a deployment with {len(chips)} chip "
                "segments; accepted: a deployment with one chip segment; read report.segments[i].cost instead"
            )
        return chips[0]

    @property
    def run(self) -> ChipRun:
        """The chip segment's activity: outputs, events per layer, time steps and latency."""
        run = self.chip.cost.chip
        assert run is not None
        return run

    @property
    def energy(self) -> EnergyEstimate | None:
        """The chip segment's energy estimate (None where the chip has no published figures and none were given)."""
        return self.chip.cost.energy

    @property
    def spikes(self) -> int:
        return sum(layer.spikes for layer in self.run.layers)

    @property
    def synaptic_ops(self) -> int:
        return sum(layer.synaptic_ops for layer in self.run.layers)

    def __str__(self) -> str:
        rows = []
        for s in self.segments:
            argmax = s.agreement.get("prediction agreement")
            rows.append(
                [
                    s.name,
                    s.backend,
                    f"{s.agreement['relative error']:.3g}",
                    "-" if s.alone is None else f"{s.alone['relative error']:.3g}",
                    "-" if argmax is None else f"{argmax:.3f}",
                    f"{s.seconds:.3f}",
                    s.cost.describe(),
                ]
            )
        headers = ["segment", "backend", "rel. error", "rel. error alone", "prediction agr.", "seconds", "cost"]
        end_to_end = [[k, f"{v:.4g}"] for k, v in self.agreement.items()]
        parts = [
            f"deployment on {self.samples} samples",
            format_table(headers, rows),
            "",
            format_table(["end to end, against the float model", ""], end_to_end),
        ]
        for s in self.segments:
            if s.cost.chip is not None:
                parts += ["", chip_text(s.name, s.backend, s.cost.chip, s.cost.energy, s.cost.event_word)]
        macs = [(s.name, s.cost.macs) for s in self.segments if s.cost.macs]
        if macs:
            parts += ["", mac_text(macs, self.samples)]
        return "\n".join(parts)


__all__ = ["DeploymentReport", "SegmentReport", "accuracies", "check_labels", "compare"]
