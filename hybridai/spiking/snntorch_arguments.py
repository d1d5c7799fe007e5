"""snnTorch's constructor arguments on ``LIF`` and ``CUBA``: accepted where they mean what hybridai does.

``LIF(beta=0.9, spike_grad=surrogate.atan(), reset_mechanism="zero")`` builds what snnTorch's
``Leaky`` with those arguments computes (``beta``, ``threshold``, ``alpha``, ``learn_*`` have the
same names in both). An snnTorch argument hybridai does not reproduce is refused with a
``ConfigError`` that says what hybridai calls it, or why it has no equivalent; never a plain
``TypeError``. Values that only restate hybridai's behaviour (``init_hidden=False``,
``reset_delay=True``, ``graded_spikes_factor=1.0``, ...) are accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hybridai.core.errors import ConfigError, invalid, suggest
from hybridai.spiking.surrogate import Surrogate, describe_callable, make_surrogate

STEP_LOOP = (
    "hybridai layers take the whole sequence [T, B, ...] in one call (the T steps are fused); "
    "stateful=True carries the final state into the next call, and for a loop of your own "
    "spk, state = layer.step(x_t, state) runs one step"
)
# snnTorch arguments whose only accepted value is the one that restates hybridai's behaviour: (value, why not)
RESTATED: dict[str, tuple[Any, str]] = {
    "init_hidden": (False, f"False only: {STEP_LOOP}"),
    "reset_delay": (True, "True only: hybridai resets the membrane one step after a spike, snnTorch's default"),
    "surrogate_disable": (
        False,
        "False only: hybridai always has a surrogate gradient, which changes nothing in forward "
        "(the spikes are the same step function); run under torch.no_grad() for inference",
    ),
    "inhibition": (False, "False only: hybridai has no winner-take-all inhibition"),
    "state_quant": (False, "False only: hybridai does not quantize the state while stepping (deployments quantize)"),
    "graded_spikes_factor": (1.0, "1.0 only: hybridai's spikes are 0 or 1"),
    "learn_graded_spikes_factor": (False, "False only: hybridai's spikes are 0 or 1"),
}
SNNTORCH_NAMES = ("spike_grad", "reset_mechanism", *RESTATED)


class UnknownKeywordError(ConfigError, TypeError):
    """A keyword neither hybridai nor snnTorch knows: a ``TypeError`` as Python raises, listing the accepted ones."""


@dataclass(frozen=True)
class Translated:
    """The hybridai arguments after snnTorch's names were applied."""

    reset: str
    surrogate: str | Surrogate
    output: str


def translate(
    layer: str,
    snntorch_options: dict[str, Any],
    *,
    reset: str,
    surrogate: str | Surrogate,
    output: Any,
    accepted: Sequence[str],
) -> Translated:
    """Apply the snnTorch arguments in ``snntorch_options`` to hybridai's ``reset``/``surrogate``/``output``.

    layer: the class name for messages. accepted: hybridai's own keyword names (listed with
    snnTorch's when a keyword is neither).
    """
    unknown = sorted(set(snntorch_options) - set(SNNTORCH_NAMES))
    if unknown:
        names = sorted({*accepted, *SNNTORCH_NAMES})
        hints = "".join(suggest(name, names) for name in unknown)
        raise UnknownKeywordError(
            f"{layer}() got unknown keyword argument(s) {', '.join(map(repr, unknown))}; accepted: "
            f"{', '.join(names)}.{hints}"
        )
    for name, (value, why) in RESTATED.items():
        if name in snntorch_options and not _same(snntorch_options[name], value):
            raise invalid(name, _shown(snntorch_options[name]), why)
    if "reset_mechanism" in snntorch_options:
        reset = _reset(snntorch_options["reset_mechanism"], reset)
    if "spike_grad" in snntorch_options:
        surrogate = _surrogate(snntorch_options["spike_grad"], surrogate)
    return Translated(reset, surrogate, _output(output))


def _same(given: Any, value: Any) -> bool:
    """``given`` is ``value`` (a bool for a bool, a number equal to a number), not merely truthy."""
    if isinstance(value, bool):
        return given is value or (type(given).__name__ == "bool_" and bool(given) is value)
    try:
        return not isinstance(given, bool) and float(given) == value
    except (TypeError, ValueError):
        return False


def _shown(value: Any) -> Any:
    return describe_callable(value) if callable(value) else value


def _reset(mechanism: Any, reset: str) -> str:
    if mechanism == "none":
        raise invalid(
            "reset_mechanism",
            mechanism,
            "'subtract' or 'zero' (hybridai calls this reset=; it has no neuron without reset, snnTorch's integrator)",
        )
    if mechanism not in ("subtract", "zero"):
        raise invalid("reset_mechanism", mechanism, "'subtract' or 'zero' (hybridai calls this reset=)")
    if reset != "subtract" and reset != mechanism:  # reset= was given too, and says otherwise
        raise invalid("reset_mechanism", mechanism, f"one of reset= and reset_mechanism= (reset={reset!r} was given)")
    return mechanism


def _surrogate(spike_grad: Any, surrogate: str | Surrogate) -> Surrogate:
    if surrogate != "atan":  # surrogate= was given too
        raise invalid(
            "spike_grad",
            _shown(spike_grad),
            f"one of surrogate= and spike_grad= (surrogate={surrogate!r} was given); hybridai calls this surrogate=",
        )
    if spike_grad is None:  # snnTorch's default: atan(alpha=2), hybridai's too
        return make_surrogate("atan")
    return make_surrogate(spike_grad, argument="spike_grad")


def _output(output: Any) -> Any:
    """snnTorch's ``output=True`` (spikes and membrane from an ``init_hidden`` layer) is hybridai's ``'both'``."""
    if output is True:
        raise invalid(
            "output",
            True,
            "'spikes', 'membrane' or 'both' (hybridai calls snnTorch's output=True output='both': "
            "the layer returns (spikes, membrane))",
        )
    if output is False:  # snnTorch's output=False: spikes only
        return "spikes"
    return output


__all__ = ["SNNTORCH_NAMES", "Translated", "UnknownKeywordError", "translate"]
