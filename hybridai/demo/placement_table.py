"""The demo's accuracy table: one row per placement of the model (and per baseline), its legend, the chip's cost.

A row's numbers come from a ``DeploymentReport`` (``deployment.report(x, labels)``): the test accuracy, how often
the deployed model predicts the float model's class, the circuit's relative error alone, and the wall
seconds of its chip, quantum and classical segments. The float model and the baselines carry their
training seconds instead.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

from hybridai.core.text_table import format_table

RUNNERS = {"loihi2": "hybridai's bit-exact Loihi 2 emulator", "loihi": "hybridai's bit-exact Loihi emulator",
           "akida": "BrainChip's Akida engine in software", "nengo": "nengo's simulator"}  # fmt: skip
KINDS = ("chip", "quantum", "classical")
WIDTH = 110  # characters per line of the legend


@dataclass(frozen=True)
class Placement:
    """One row of the table. ``seconds``: wall seconds per kind of segment (``KINDS``) of a deployed row;
    ``training``: training seconds of the float model or a baseline; ``report``: the deployment's report."""

    name: str
    accuracy: float
    agreement: float | None = None
    circuit_error: float | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    training: float | None = None
    report: Any = None


def deployed_row(name: str, report: Any) -> Placement:
    """A row from a deployment's report: seconds summed per kind (a segment with a chip run is the chip's)."""
    seconds = dict.fromkeys(KINDS, 0.0)
    errors = []
    for segment in report.segments:
        kind = "chip" if segment.cost.chip is not None else "quantum" if segment.domain == "quantum" else "classical"
        seconds[kind] += segment.seconds
        if segment.domain == "quantum":  # the circuit's own error: run alone on the float model's input
            errors.append((segment.alone or segment.agreement).get("relative error", math.nan))
    agreement = report.segments[-1].agreement.get("prediction agreement", math.nan)
    error = max(errors) if errors else None
    return Placement(name, report.accuracy["deployed"], agreement, error, seconds, report=report)


def chip_segment(report: Any) -> Any:
    """The report's segment that ran on the chip (the first with a chip run)."""
    return next(s for s in report.segments if s.cost.chip is not None)


def placement_table(rows: list[Placement], chip: str) -> str:
    """The rows as a text table (``-`` where a column does not apply)."""

    def number(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    headers = ["placement", "test accuracy", "agreement with float", "circuit rel. error", f"chip s ({chip})",
               "quantum s", "classical s", "training s"]  # fmt: skip
    table = [
        [row.name, f"{row.accuracy:.3f}", number(row.agreement, 3), number(row.circuit_error, 3),
         *(number(row.seconds.get(kind), 3) for kind in KINDS), number(row.training, 1)]
        for row in rows
    ]  # fmt: skip
    return format_table(headers, table)


def legend(chip: str, tests: int, classes: int, epochs: int, train: int, n_qubits: int, front: str) -> str:
    """What each column of ``placement_table`` means, for ``tests`` test and ``train`` training recordings."""
    entries = {
        "test accuracy": f"share of the {tests} test recordings classified right (chance {1 / classes:.2f}).",
        "agreement with float": "share of the test recordings on which the deployed model predicts the class the "
        "float model (all torch) predicts.",
        "circuit rel. error": f"|deployed - float| / |float| over the circuit's {n_qubits} expectation values, the "
        "circuit run alone on the float model's input to it: shot noise and the device's noise only (0: exact).",
        "chip s, quantum s, classical s": f"wall seconds of the deployed segments of that kind on the {tests} test "
        f"recordings, on this CPU (chip s: {RUNNERS.get(chip, chip)}, not the chip's own time; quantum s: the circuit "
        "simulated, ZNE's folded circuits included).",
        "training s": f"wall seconds to train that model ({epochs} epochs on {train} recordings, on this CPU).",
        "baselines": "trained the same way: a Linear + Tanh where the circuit was; a dense front end (events "
        f"averaged over time -> Linear -> ReLU -> Linear, in float) where the {front} front end was.",
    }
    return "\n".join(
        textwrap.fill(text, WIDTH, initial_indent=f"{term}: ", subsequent_indent="  ") for term, text in entries.items()
    )


def chip_cost(report: Any, chip: str) -> str:
    """One paragraph: what the chip segment did per test recording, and its energy (or why there is none)."""
    segment = chip_segment(report)
    run = segment.cost.chip
    per = max(run.samples, 1)
    events = sum(layer.spikes for layer in run.layers) / per
    ops = sum(layer.synaptic_ops for layer in run.layers) / per
    dense = [layer.dense_synaptic_ops for layer in run.layers]
    saved = ""
    if dense and all(d is not None for d in dense) and sum(dense):
        dense_ops = sum(dense) / per
        saved = f" ({1 - ops / dense_ops:.0%} fewer than the {dense_ops:,.0f} of a dense run)"
    steps = f"{run.time_steps} time step{'s' if run.time_steps != 1 else ''}"
    if run.latency_steps:
        steps += f" ({run.time_steps - run.latency_steps} + {run.latency_steps} of pipeline latency)"
    energy = segment.cost.energy
    if energy is not None:
        sources = "; ".join(sorted({c.source for _, c in energy.model.constants()}))
        joules = f"energy {energy.per_sample * 1e9:,.1f} nJ per recording ({energy.model.chip}'s constants: {sources})"
    else:
        joules = (
            f"energy: not estimated: there are no public per-event energy figures for {chip!r} (pass measured "
            "constants with hybridai.deploy(..., energy={...}))"
        )
    return textwrap.fill(
        f"chip segment {segment.name} on {segment.backend}, per test recording: {events:,.0f} "
        f"{segment.cost.event_word}, {ops:,.0f} synaptic ops{saved}, {steps}; {joules}",
        WIDTH,
        subsequent_indent="  ",
    )


__all__ = ["KINDS", "Placement", "chip_cost", "chip_segment", "deployed_row", "legend", "placement_table"]
