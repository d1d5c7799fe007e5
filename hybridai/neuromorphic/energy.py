"""Energy estimates from counted events, every constant carried with its source.

A chip estimate multiplies the events of a ``ChipRun`` (synaptic operations, neuron updates,
spikes) by per-event energies. Only Loihi 1 has public per-event figures (Davies et al. 2018,
pre-silicon); for Akida, Loihi 2 and nengo's simulator none were found, so their estimates take
constants the user supplies (measured on their own board) and say so. A conventional baseline
counts multiply-accumulates and prices them per operation.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hybridai.core.chip import ChipRun
from hybridai.core.errors import invalid

DAVIES_2018 = (
    'Davies et al., "Loihi: A Neuromorphic Manycore Processor with On-Chip Learning", '
    "IEEE Micro 38(1):82-99, 2018, Table 2 (pre-silicon)"
)
HOROWITZ_2014 = (
    'Horowitz, "Computing\'s energy problem (and what we can do about it)", ISSCC 2014: 45 nm, '
    "fp32 multiply 3.7 pJ + add 0.9 pJ; arithmetic only, memory access excluded"
)
EVENTS = ("synaptic_op", "neuron_update_active", "neuron_update_inactive", "spike")


@dataclass(frozen=True)
class Constant:
    """Energy of one event in joules, where the figure comes from, and which figure of it."""

    joules: float
    source: str
    figure: str = ""


@dataclass(frozen=True)
class EnergyModel:
    """Per-event energies of one chip; ``None`` for an event the chip's figures do not price."""

    chip: str
    synaptic_op: Constant
    neuron_update_active: Constant
    neuron_update_inactive: Constant
    spike: Constant | None = None
    note: str = ""

    def constants(self) -> list[tuple[str, Constant]]:
        return [(e, c) for e in EVENTS if (c := getattr(self, e)) is not None]


LOIHI_1 = EnergyModel(
    chip="Loihi 1",
    synaptic_op=Constant(23.6e-12, DAVIES_2018, "synaptic spike operation, minimum"),
    neuron_update_active=Constant(81e-12, DAVIES_2018, "neuron update, active"),
    neuron_update_inactive=Constant(52e-12, DAVIES_2018, "neuron update, inactive"),
    spike=Constant(1.7e-12, DAVIES_2018, "spike within a tile (all layers on one tile: a lower bound)"),
    note="pre-silicon figures; spikes routed between tiles cost 3-4 pJ per hop more",
)
FP32_MAC = Constant(4.6e-12, HOROWITZ_2014, "fp32 multiply-accumulate")
PUBLISHED: dict[str, EnergyModel] = {"loihi": LOIHI_1}


def energy_model(family: str, constants: Mapping[str, Any] | None = None) -> EnergyModel | None:
    """The energy model for a backend family: user ``constants`` if given, else the published one.

    ``constants`` maps each of ``synaptic_op``, ``neuron_update_active``, ``neuron_update_inactive``
    (and optionally ``spike``) to joules per event, or to ``(joules, source)``. Returns ``None`` when
    neither exists (no public figure for that chip).
    """
    if constants is None:
        return PUBLISHED.get(family)
    if not isinstance(constants, Mapping):
        raise invalid("energy", constants, f"a dict mapping {EVENTS} to joules per event or (joules, source)")
    unknown = sorted((k for k in constants if not isinstance(k, str) or k not in EVENTS), key=repr)
    missing = [e for e in EVENTS[:3] if e not in constants]
    if unknown or missing:
        found = [f"missing {missing}" if missing else "", f"unknown {unknown}" if unknown else ""]
        raise invalid(
            "energy",
            dict(constants),
            f"keys {EVENTS[:3]} (required) and 'spike' (optional); {' and '.join(f for f in found if f)}",
        )
    parsed = {e: _constant(e, v) for e, v in constants.items()}
    return EnergyModel(chip=f"{family} (user-supplied)", note="constants supplied by the user", **parsed)


def _constant(event: str, value: Any) -> Constant:
    joules, source = value if isinstance(value, tuple | list) and len(value) == 2 else (value, "user-supplied")
    accepted = "joules per event: a finite number >= 0, or (joules, source) with source a str"
    real = isinstance(joules, numbers.Real) and not isinstance(joules, bool | np.bool_)
    # compared before float(): an int beyond float's range would overflow, a NaN fails every comparison
    if not real or not 0 <= joules <= sys.float_info.max or not isinstance(source, str):
        raise invalid(f"energy[{event!r}]", value, accepted)
    return Constant(float(joules), source)


@dataclass(frozen=True)
class EnergyEstimate:
    """Estimated energy of a run: total joules, per sample, and per layer and event."""

    model: EnergyModel
    total: float
    per_sample: float
    per_layer: tuple[tuple[str, float], ...]
    per_event: tuple[tuple[str, float], ...]


def estimate(run: ChipRun, model: EnergyModel) -> EnergyEstimate:
    """Price every event of ``run`` with ``model``'s constants."""
    per_layer, per_event = [], dict.fromkeys(EVENTS, 0.0)
    for layer in run.layers:
        counts = {
            "synaptic_op": layer.synaptic_ops,
            "neuron_update_active": layer.active_updates,
            "neuron_update_inactive": layer.neuron_updates - layer.active_updates,
            "spike": layer.spikes,
        }
        joules = 0.0
        for event, constant in model.constants():
            cost = counts[event] * constant.joules
            per_event[event] += cost
            joules += cost
        per_layer.append((layer.name, joules))
    total = sum(j for _, j in per_layer)
    return EnergyEstimate(
        model=model,
        total=total,
        per_sample=total / max(run.samples, 1),
        per_layer=tuple(per_layer),
        per_event=tuple((e, j) for e, j in per_event.items() if getattr(model, e) is not None),
    )


def mac_energy(macs: float, constant: Constant = FP32_MAC) -> float:
    """Joules for ``macs`` multiply-accumulates at ``constant`` (default fp32, Horowitz 2014)."""
    return macs * constant.joules
