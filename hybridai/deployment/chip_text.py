"""The cost of one segment as a reader sees it: a chip's activity per layer and its energy, a torch segment's MACs.

``chip_text`` prints what a chip segment did on a batch (samples, time steps, latency; per layer: neurons,
events per step in the chip's word for them (spikes, graded messages, non-zero activations), firing rate,
synaptic operations and neuron updates per step, nJ per sample and the synaptic operations saved against a
dense run) and the energy constants it was priced with, each with its source. ``mac_text`` prices a torch
segment's multiply-accumulates with a published fp32 figure.
"""

from __future__ import annotations

from hybridai.core.chip import ChipRun, LayerActivity
from hybridai.core.text_table import format_table
from hybridai.neuromorphic.energy import FP32_MAC, EnergyEstimate, mac_energy


def _saved(activity: LayerActivity) -> str:
    """The share of synaptic events a dense run of the layer (every input sent every step) would add."""
    if not activity.dense_synaptic_ops:
        return "-"
    return f"{1 - activity.synaptic_ops / activity.dense_synaptic_ops:.1%}"


def chip_text(name: str, backend: str, run: ChipRun, energy: EnergyEstimate | None, event_word: str) -> str:
    """A chip segment's activity table and energy estimate (module docstring); ``event_word``: what the chip calls
    its events."""
    steps = max(run.samples * run.time_steps, 1)
    per_layer = dict(energy.per_layer) if energy else {}
    dense = any(a.dense_synaptic_ops is not None for a in run.layers)
    rows = [
        [
            a.name,
            f"{a.neurons:,}",
            f"{a.spikes / steps:,.2f}",
            f"{a.spikes / max(a.neuron_updates, 1):.4f}",
            f"{a.synaptic_ops / steps:,.1f}",
            f"{a.neuron_updates / steps:,.0f}",
            f"{per_layer[a.name] / run.samples * 1e9:.3f}" if a.name in per_layer else "-",
            *([_saved(a)] if dense else []),
        ]
        for a in run.layers
    ]
    headers = ["layer", "neurons", f"{event_word}/step", "rate", "syn. ops/step", "updates/step", "nJ/sample"]
    return "\n".join(
        [
            f"{name} on {backend}: {run.samples} samples x {run.time_steps} time steps, latency "
            f"{run.latency_steps} time steps",
            format_table(headers + (["syn. ops saved vs dense"] if dense else []), rows),
            _energy_text(backend, energy),
        ]
    )


def _energy_text(backend: str, energy: EnergyEstimate | None) -> str:
    if energy is None:
        return (
            f"energy: not estimated: no public per-event figures for {backend!r}; pass measured constants "
            "with hybridai.deploy(..., energy={'synaptic_op': J, 'neuron_update_active': J, "
            "'neuron_update_inactive': J})"
        )
    model = energy.model
    constants = model.constants()
    sources = {c.source for _, c in constants}
    shared = len(sources) == 1
    rows = [[e, f"{c.joules * 1e12:g} pJ", c.figure, *([] if shared else [c.source])] for e, c in constants]
    headers = ["event", "energy", "figure", *([] if shared else ["source"])]
    note = f" ({model.note})" if model.note else ""
    return "\n".join(
        [
            f"energy estimate ({model.chip}{note}): {energy.per_sample * 1e9:.3f} nJ per sample, "
            f"{energy.total * 1e6:.4g} uJ in all",
            format_table(headers, rows),
            *([f"source: {sources.pop()}"] if shared else []),
        ]
    )


def mac_text(segments: list[tuple[str, int]], samples: int) -> str:
    """One line: the torch segments' MACs (``(name, MACs on the batch)``) per sample, priced at a published fp32
    multiply-accumulate."""
    each = [
        f"{name} {macs / max(samples, 1):,.0f} ({mac_energy(macs / max(samples, 1)) * 1e9:.3g} nJ)"
        for name, macs in segments
    ]
    return (
        f"MACs per sample in torch: {', '.join(each)}, at {FP32_MAC.joules * 1e12:g} pJ per {FP32_MAC.figure} "
        f"(source: {FP32_MAC.source})"
    )


__all__ = ["chip_text", "mac_text"]
