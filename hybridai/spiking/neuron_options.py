"""The keyword options every neuron with a membrane takes (``LIF``, ``CUBA``, ``SpikingNeuron`` subclasses).

``NeuronOptions`` holds them checked: threshold, reset, surrogate, learn_threshold, output, stateful,
batch_first, dt, backend, recompute_steps, and snnTorch's names for some of them (``spike_grad=``,
``reset_mechanism=``; ``hybridai.spiking.snntorch_arguments``). ``NeuronOptions.of(layer, keywords)``
checks a constructor's keywords, each refusal a ``ConfigError`` naming the argument. ``neuron_signature``
is a neuron constructor's public signature: its own parameters with these options written out, so
``help(LIF)`` and ``inspect.signature(LIF)`` list every keyword a user can pass.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import torch

from hybridai.core.errors import invalid, optional_int
from hybridai.spiking.parameters import check_choice, check_dt, parameter_tensor
from hybridai.spiking.snntorch_arguments import translate
from hybridai.spiking.surrogate import Surrogate, make_surrogate

RESETS = ("subtract", "zero")
OUTPUTS = ("spikes", "membrane", "both")
SNNTORCH_OPTIONS = "snntorch_options"  # the name of the constructor's ``**`` keywords: snnTorch's names


def _option(accepts: str, default: Any) -> Any:
    """A field given as a keyword: the type a user passes (``accepts``, the signature's annotation) and its default."""
    return field(metadata={"accepts": accepts, "default": default})


@dataclass(frozen=True)
class NeuronOptions:
    """A neuron's shared keyword options, checked (see ``LIF`` for what each means).

    The fields hold the checked values (a threshold tensor, a ``Surrogate``); each field's metadata holds
    the keyword's default and the type a user passes, from which ``neuron_signature`` writes the signature.
    """

    threshold: torch.Tensor = _option("float | torch.Tensor", 1.0)
    reset: str = _option("str", "subtract")
    surrogate: Surrogate = _option("str | Surrogate", "atan")
    learn_threshold: bool = _option("bool", False)
    output: str = _option("str", "spikes")
    stateful: bool = _option("bool", False)
    batch_first: bool = _option("bool", False)
    dt: float = _option("float", 1e-3)
    backend: str | None = _option("str | None", None)
    recompute_steps: int | None = _option("int | None", None)

    @classmethod
    def of(cls, layer: type, keywords: dict[str, Any]) -> NeuronOptions:
        """The options among ``keywords`` (the rest: snnTorch's names), checked for the neuron class ``layer``.

        An unknown keyword is refused listing every keyword ``layer``'s constructor accepts.
        """
        given = {f.name: keywords.get(f.name, f.metadata["default"]) for f in fields(cls)}
        snntorch_options = {name: value for name, value in keywords.items() if name not in given}
        accepted = [name for name in inspect.signature(layer).parameters if name != SNNTORCH_OPTIONS]
        habits = translate(
            layer.__name__,
            snntorch_options,
            reset=given["reset"],
            surrogate=given["surrogate"],
            output=given["output"],
            accepted=accepted,
        )
        return cls(
            recompute_steps=optional_int("recompute_steps", given["recompute_steps"], 1),
            reset=check_choice("reset", habits.reset, RESETS),
            output=check_choice("output", habits.output, OUTPUTS),
            surrogate=make_surrogate(habits.surrogate),
            stateful=bool(given["stateful"]),
            batch_first=_check_batch_first(given["batch_first"]),
            dt=check_dt(given["dt"]),
            threshold=parameter_tensor("threshold", given["threshold"], positive=True),
            learn_threshold=given["learn_threshold"],
            backend=given["backend"],
        )


def _check_batch_first(batch_first: Any) -> bool:
    if not isinstance(batch_first, bool):
        raise invalid("batch_first", batch_first, "True ([B, T, ...] in and out) or False ([T, B, ...])")
    return batch_first


def neuron_signature(init: Callable[..., None]) -> inspect.Signature:
    """The public signature of a neuron constructor ``init(self, <own parameters>, **options)``.

    Its own positional parameters, the shared options as keyword-only parameters (its own keyword-only
    ones, e.g. ``learn_beta``, beside ``learn_threshold``) and ``**snntorch_options``.
    """
    signature = inspect.signature(init)
    own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    positional = [p for p in own if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    learn = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]
    shared = [
        inspect.Parameter(
            f.name, inspect.Parameter.KEYWORD_ONLY, default=f.metadata["default"], annotation=f.metadata["accepts"]
        )
        for f in fields(NeuronOptions)
    ]
    at = next(i for i, p in enumerate(shared) if p.name == "learn_threshold")
    rest = inspect.Parameter(SNNTORCH_OPTIONS, inspect.Parameter.VAR_KEYWORD, annotation="Any")
    return signature.replace(parameters=[*positional, *shared[:at], *learn, *shared[at:], rest])


__all__ = ["OUTPUTS", "RESETS", "NeuronOptions", "neuron_signature"]
