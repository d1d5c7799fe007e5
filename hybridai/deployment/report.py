"""What a hybrid deployment changed, segment by segment, and what each segment cost.

``compare(reference, got)`` measures one cut: the largest absolute difference, the relative error
and, for ``[B, classes]`` outputs, how often the predicted class agrees. ``HybridReport`` holds the
end-to-end accuracy (float model vs deployment) and one ``SegmentReport`` per segment; ``str()``
prints them as tables, with the energy constants of chip segments and their sources.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hybridai.core.text_table import format_table
from hybridai.deployment.placed import SegmentCost


def compare(reference: torch.Tensor, got: torch.Tensor, predictions: bool = False) -> dict[str, float]:
    """Agreement of a deployed tensor with the float model's at the same cut; ``predictions``: the tensor is
    the model's ``[B, classes]`` output, so the predicted classes are compared too."""
    ref, out = reference.detach().double().cpu(), got.detach().double().cpu()
    if ref.shape != out.shape:
        return {"shape mismatch": float("nan")}
    result = {
        "max |difference|": float((out - ref).abs().max()) if ref.numel() else 0.0,
        "relative error": float((out - ref).norm() / ref.norm().clamp_min(1e-30)),
    }
    if predictions and ref.ndim == 2 and ref.shape[1] > 1:
        result["prediction agreement"] = float((out.argmax(1) == ref.argmax(1)).double().mean())
    return result


@dataclass(frozen=True)
class SegmentReport:
    """One segment: its backend, its agreement with the float model at its output cut, and its cost.

    agreement: the deployment run end to end (errors of earlier segments included). alone: the segment
    run on the float model's input at its cut (its own error only); None for the first segment, where
    both are the same.
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
class HybridReport:
    """End-to-end accuracy (``{"float": a, "deployed": b}`` with labels, else None) and the segments."""

    segments: tuple[SegmentReport, ...]
    accuracy: dict[str, float] | None
    samples: int

    def __str__(self) -> str:
        rows = []
        for s in self.segments:
            alone = "-" if s.alone is None else f"{s.alone['relative error']:.3g}"
            argmax = s.agreement.get("prediction agreement")
            rows.append(
                [
                    s.name,
                    s.backend,
                    f"{s.agreement['relative error']:.3g}" if "relative error" in s.agreement else "shape mismatch",
                    alone,
                    "-" if argmax is None else f"{argmax:.3f}",
                    f"{s.seconds:.3f}",
                    s.cost.describe(),
                ]
            )
        headers = ["segment", "backend", "rel. error", "rel. error alone", "prediction agr.", "seconds", "cost"]
        parts = [f"hybrid deployment on {self.samples} samples", format_table(headers, rows)]
        if self.accuracy is not None:
            parts.append(
                f"accuracy: float model {self.accuracy['float']:.4f}, deployed {self.accuracy['deployed']:.4f}"
            )
        parts += [_energy_text(s) for s in self.segments if s.cost.energy is not None]
        return "\n".join(parts)


def _energy_text(segment: SegmentReport) -> str:
    energy = segment.cost.energy
    assert energy is not None
    model = energy.model
    sources = sorted({c.source for _, c in model.constants()})
    constants = ", ".join(f"{e} {c.joules * 1e12:g} pJ" for e, c in model.constants())
    return (
        f"energy of {segment.name} ({model.chip}): {energy.per_sample * 1e9:.3f} nJ/sample from {constants}; "
        f"source: {'; '.join(sources)}"
    )


__all__ = ["HybridReport", "SegmentReport", "compare"]
