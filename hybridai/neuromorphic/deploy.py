"""``hybridai.deploy``: a trained model on a neuromorphic backend, with an honest report.

The backend compiles the model to its chip's number formats (``ChipCompiler.compile``);
``Deployment.report(x, labels)`` runs the float model and the chip on the same batch and says
what changed: agreement of predictions and outputs, accuracy of both, spikes and synaptic
operations per layer, neuron updates, latency in time steps and an energy estimate whose
constants are printed with their sources.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from hybridai.core import registry
from hybridai.core.chip import ChipRun, CompiledNetwork, LayerActivity
from hybridai.core.contracts import ChipCompiler
from hybridai.core.errors import ShapeError, invalid
from hybridai.core.module import domain_of
from hybridai.core.text_table import format_table
from hybridai.neuromorphic.energy import EnergyEstimate, EnergyModel, energy_model, estimate
from hybridai.spiking.layout import check_samples_layout
from hybridai.spiking.neurons import CUBA, LIF
from hybridai.spiking.sigma_delta import SigmaDelta

SPIKING = (LIF, CUBA, SigmaDelta)  # layers that read time-major [T, B, ...] input


def deploy_chip(
    model: nn.Module,
    backend: str = "loihi",
    *,
    calibration: torch.Tensor | None = None,
    energy: Mapping[str, Any] | None = None,
    **options: Any,
) -> Deployment:
    """Compile the whole ``model`` for a neuromorphic ``backend`` (``"loihi"``, ``"akida"``, ``"nengo"``, a plugin).

    ``calibration``: a batch in the model's input layout, for chips that need activation ranges
    (Akida). ``energy``: per-event joules (see ``energy.energy_model``) for chips without public
    figures, or to replace Loihi's published ones. ``options`` go to the backend (``quirks="lava"``).
    """
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a trained torch.nn.Module (an nn.Sequential)")
    chip = registry.get(backend, ChipCompiler, **options)
    _refuse_quantum_layers(model, chip.name, options)
    compiled = chip.compile(model, calibration=calibration)
    return Deployment(model, chip, compiled, energy_model(chip.family, energy))


def _refuse_quantum_layers(model: nn.Module, chip: str, options: Mapping[str, Any]) -> None:
    """A chip runs a spiking model; one with quantum layers is deployed one backend per domain: say so, naming them."""
    quantum = [
        f"{name or 'model'} ({type(m).__name__})" for name, m in model.named_modules() if domain_of(m) == "quantum"
    ]
    if quantum:
        shown = ", ".join(quantum[:3]) + (", ..." if len(quantum) > 3 else "")
        named = ", ".join(f"{k!r}: ..." for k in sorted(options))  # values unshown: one may be a token
        chip_options = f", spiking_options={{{named}}}" if options else ""
        raise invalid(
            "backend", chip,
            f"a chip for a model without quantum layers (this one has {shown}); deploy a hybrid model one backend per "
            f"domain: hybridai.deploy(model, spiking={chip!r}{chip_options}, quantum='statevector', classical='torch') "
            "(quantum= any quantum backend)",
        )  # fmt: skip


class Deployment:
    """A model compiled for a chip: ``run(x)`` gives the chip's outputs, ``report(x, labels)`` the comparison."""

    def __init__(
        self, model: nn.Module, backend: ChipCompiler, compiled: CompiledNetwork, energy: EnergyModel | None
    ) -> None:
        self.model = model
        self.backend = backend
        self.compiled = compiled
        self.energy = energy

    def run(self, x: torch.Tensor) -> torch.Tensor:
        """The chip's outputs for ``x``, in the float model's output layout."""
        return self.compiled.run(x).outputs

    def report(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> DeploymentReport:
        """Run float model and chip on ``x`` ``[T, B, ...]`` and compare; ``labels`` ``[B]`` adds both accuracies
        (and tells a batch-first ``x`` apart, which is refused, never read as B time steps)."""
        if any(isinstance(m, SPIKING) for m in self.model.modules()):  # frames for Akida are [B, ...] by nature
            check_samples_layout(x, labels)
        chip_run = self.compiled.run(x)
        training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                reference = self.model(_in_model_dtype(self.model, x))
        finally:
            self.model.train(training)
        if not torch.is_tensor(reference):
            raise invalid("model output", type(reference).__name__, "a single tensor")
        got = chip_run.outputs.to(reference.device, reference.dtype)
        if got.shape != reference.shape:
            raise ShapeError(
                f"the {self.backend.name!r} deployment returned outputs of shape {tuple(got.shape)} but the float "
                f"model returns {tuple(reference.shape)}; accepted: the same layout (a bug in the backend)"
            )
        return DeploymentReport(
            backend=self.backend.name,
            run=chip_run,
            agreement=_agreement(reference, got, labels),
            energy=estimate(chip_run, self.energy) if self.energy is not None else None,
        )


def _saved(activity: LayerActivity) -> str:
    """The share of synaptic events a dense run of the layer (every input sent every step) would add."""
    if not activity.dense_synaptic_ops:
        return "-"
    return f"{1 - activity.synaptic_ops / activity.dense_synaptic_ops:.1%}"


def _in_model_dtype(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``x`` in the float model's dtype: a chip takes spike counts of any integer or float dtype, the float model
    the dtype of its parameters (counts are whole numbers, exact in any float dtype that holds them)."""
    param = next(model.parameters(), None)
    if param is None or not param.is_floating_point() or x.dtype == param.dtype or x.is_complex():
        return x
    return x.to(param.dtype)


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


def _agreement(reference: torch.Tensor, got: torch.Tensor, labels: torch.Tensor | None) -> dict[str, float]:
    ref, out = reference.double(), got.double()
    result = {
        "output max |difference|": float((out - ref).abs().max()),
        "output relative error": float((out - ref).norm() / ref.norm().clamp_min(1e-30)),
    }
    if labels is not None and ref.ndim != 2:
        raise invalid("labels", "a tensor", f"None for a model whose output is {tuple(ref.shape)}, not [B, classes]")
    if ref.ndim == 2:  # [B, classes]: predictions
        predicted, expected = out.argmax(1), ref.argmax(1)
        result["prediction agreement"] = float((predicted == expected).double().mean())
        if labels is not None:
            labels = check_labels(labels, ref.shape[0], ref.shape[1], ref.device)
            result["accuracy, float model"] = float((expected == labels).double().mean())
            result["accuracy, chip"] = float((predicted == labels).double().mean())
    elif set(ref.unique().tolist()) <= {0.0, 1.0}:  # spikes [T, B, ...]
        result["spike agreement"] = float((out == ref).double().mean())
    return result


@dataclass(frozen=True)
class DeploymentReport:
    """What changed on the chip: agreement, activity per layer, latency, energy (``str()`` prints it all)."""

    backend: str
    run: ChipRun
    agreement: dict[str, float]
    energy: EnergyEstimate | None

    @property
    def spikes(self) -> int:
        return sum(layer.spikes for layer in self.run.layers)

    @property
    def synaptic_ops(self) -> int:
        return sum(layer.synaptic_ops for layer in self.run.layers)

    def __str__(self) -> str:
        run = self.run
        head = [
            ["backend", self.backend],
            ["samples x time steps", f"{run.samples} x {run.time_steps}"],
            ["latency", f"{run.latency_steps} time steps"],
            *[[k, f"{v:.4g}"] for k, v in self.agreement.items()],
        ]
        steps = max(run.samples * run.time_steps, 1)
        energy = dict(self.energy.per_layer) if self.energy else {}
        dense = any(a.dense_synaptic_ops is not None for a in run.layers)
        rows = [
            [
                a.name,
                f"{a.neurons:,}",
                f"{a.spikes / steps:,.2f}",
                f"{a.spikes / max(a.neuron_updates, 1):.4f}",
                f"{a.synaptic_ops / steps:,.1f}",
                f"{a.neuron_updates / steps:,.0f}",
                f"{energy[a.name] / run.samples * 1e9:.3f}" if a.name in energy else "-",
                *([_saved(a)] if dense else []),
            ]
            for a in run.layers
        ]
        parts = [
            format_table(["deployment", ""], head),
            "",
            format_table(
                ["layer", "neurons", "spikes/step", "rate", "syn. ops/step", "updates/step", "nJ/sample"]
                + (["syn. ops saved vs dense"] if dense else []),
                rows,
            ),
            "",
            self._energy_text(),
        ]
        return "\n".join(parts)

    def _energy_text(self) -> str:
        if self.energy is None:
            return (
                f"energy: not estimated: no public per-event figures for {self.backend!r}; pass measured constants "
                "with hybridai.deploy(..., energy={'synaptic_op': J, 'neuron_update_active': J, "
                "'neuron_update_inactive': J})"
            )
        model = self.energy.model
        constants = model.constants()
        sources = {c.source for _, c in constants}
        shared = len(sources) == 1
        rows = [[e, f"{c.joules * 1e12:g} pJ", c.figure, *([] if shared else [c.source])] for e, c in constants]
        headers = ["event", "energy", "figure", *([] if shared else ["source"])]
        note = f" ({model.note})" if model.note else ""
        return "\n".join(
            [
                f"energy estimate ({model.chip}{note}): {self.energy.per_sample * 1e9:.3f} nJ per sample, "
                f"{self.energy.total * 1e6:.4g} uJ in all",
                format_table(headers, rows),
                *([f"source: {sources.pop()}"] if shared else []),
            ]
        )
