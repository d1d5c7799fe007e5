"""Trainable arrays of quantum functions: validating ``weight_shapes`` against the function's
signature and registering the parameters (shared by ``QuantumLayer`` and ``QuantumKernel``)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from hybridai.core.errors import ConfigError, HybridAIError, invalid, positive_int

WeightInit = Callable[[torch.Tensor], Any]


def uniform_angles(tensor: torch.Tensor) -> torch.Tensor:
    """Default initialisation: angles uniform in [0, 2*pi)."""
    return nn.init.uniform_(tensor, 0.0, 2 * math.pi)


def _parameters(function: Callable[..., Any]) -> dict[str, inspect.Parameter] | None:
    """The parameters of ``function``'s signature, or None when it has none Python can read."""
    try:
        return dict(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None


def takes_inputs(function: Callable[..., Any], weight_shapes: Any) -> bool:
    """Whether ``function`` receives inputs as its first argument: it has a first positional parameter
    that is not one of the weights (or takes ``*args``). ``qfunc(weights)`` with
    ``weight_shapes={"weights": ...}`` and ``qfunc()`` take none. Unknown signatures take inputs."""
    params = _parameters(function)
    if params is None:
        return True
    names = set(weight_shapes) if isinstance(weight_shapes, Mapping) else set()
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if positional:
        return positional[0].name not in names
    return any(p.kind is p.VAR_POSITIONAL for p in params.values())


def check_weight_shapes(
    module: nn.Module, function: Callable[..., Any], weight_shapes: Any, role: str, inputs: bool = True
) -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` checked against ``function(inputs, **weights)`` (``function(**weights)`` when
    ``inputs`` is False); ``role`` names the function in errors."""
    if not isinstance(weight_shapes, Mapping):
        raise invalid("weight_shapes", weight_shapes, f"a dict {{name: shape}} of the {role}'s weight arguments")
    known = _parameters(function)
    params = known or {}
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if inputs and known is not None and not positional and not any(p.kind is p.VAR_POSITIONAL for p in params.values()):
        raise invalid(role, function, "a function whose first argument receives the inputs")
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    named = [*(positional[1:] if inputs else positional), *(p for p in params.values() if p.kind is p.KEYWORD_ONLY)]
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in weight_shapes.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise invalid("weight_shapes", name, "keys that are valid Python identifiers")
        if known is not None and not takes_any and name not in {p.name for p in named}:
            raise ConfigError(
                f"weight_shapes has key {name!r} but {role} takes no argument of that name; "
                f"accepted keys: {sorted(p.name for p in named)}"
            )
        if hasattr(module, name):
            raise invalid("weight_shapes", name, "names that are not attributes of torch.nn.Module")
        shapes[name] = _shape(f"weight_shapes[{name!r}]", shape)
    missing = [p.name for p in named if p.default is p.empty and p.name not in shapes]
    if missing:
        raise ConfigError(f"weight_shapes={dict(weight_shapes)!r} lacks the {role} argument(s) {missing}")
    return shapes


def _shape(argument: str, shape: Any) -> tuple[int, ...]:
    """``shape`` (a positive int, or a tuple or list of them) as a tuple, else a ConfigError naming ``argument``."""
    dims = (shape,) if isinstance(shape, int) and not isinstance(shape, bool) else shape
    if isinstance(dims, tuple | list):
        try:
            return tuple(positive_int(argument, d) for d in dims)
        except HybridAIError:
            pass
    raise invalid(argument, shape, "a positive int or a tuple of positive ints")


def register_weights(
    module: nn.Module, shapes: dict[str, tuple[int, ...]], init: WeightInit | Mapping[str, WeightInit] | None
) -> None:
    """Create and initialise one ``nn.Parameter`` per shape (``init``: a function or ``{name: function}``)."""
    for name, shape in shapes.items():
        param = nn.Parameter(torch.empty(shape))
        initialiser = (init.get(name, uniform_angles) if isinstance(init, Mapping) else init) or uniform_angles
        if not callable(initialiser):
            raise invalid(f"init[{name!r}]" if isinstance(init, Mapping) else "init", initialiser, "a callable")
        with torch.no_grad():
            initialiser(param)
        module.register_parameter(name, param)
