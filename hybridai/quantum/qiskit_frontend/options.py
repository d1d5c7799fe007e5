"""Options every executor that speaks Qiskit takes (``shots``, ``seed``, ``optimization_level``), checked, and the
refusal of options a family does not take, naming those it does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybridai.core.errors import ConfigError, invalid, suggest

FRONT_END_OPTIONS = ("shots", "seed", "optimization_level")  # the options of every Qiskit-speaking family
OPTIMIZATION_LEVELS = (0, 1, 2, 3)  # Qiskit's transpiler presets


def check_optimization_level(level: Any) -> None:
    """A ConfigError naming ``optimization_level`` unless it is one of Qiskit's levels 0 to 3 (not a bool)."""
    if isinstance(level, bool) or level not in OPTIMIZATION_LEVELS:
        raise invalid("optimization_level", level, "0, 1, 2 or 3")


def refuse_options(name: str, options: dict[str, Any], accepted: Sequence[str]) -> None:
    """A ConfigError naming the backend ``name`` and ``options`` when there are any, with the ``accepted`` options
    listed and the nearest accepted name suggested for each."""
    if options:
        hints = "".join(suggest(o, list(accepted)) for o in sorted(options))
        raise ConfigError(
            f"backend={name!r} does not accept the option(s) {sorted(options)}; accepted: {', '.join(accepted)}.{hints}"
        )
