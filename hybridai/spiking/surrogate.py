"""Surrogate gradients of the spike function, with snnTorch's exact definitions.

The forward pass of a spike is always the Heaviside step ``S = 1 if U - threshold > 0``;
a surrogate only replaces dS/dU in the backward pass. Each class computes
``grad * dS/dU`` with the same floating-point operations, in the same order, as
``snntorch.surrogate`` so that gradients agree with snnTorch to rounding.
"""

from __future__ import annotations

import math
import numbers
import sys
from types import FunctionType

import numpy as np
import torch

from hybridai.core.errors import invalid


class Surrogate:
    """Base class: ``scaled_derivative(shifted, grad)`` returns ``grad * dS/dU``.

    ``shifted`` is ``U - threshold`` and may be overwritten (it is a scratch buffer).
    """

    name = ""

    def scaled_derivative(self, shifted: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def parameters_dict(self) -> dict[str, float]:
        """The surrogate's hyper-parameters by name (for reprs and NIR metadata)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters_dict().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.parameters_dict() == other.parameters_dict()

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(self.parameters_dict().items())))


def _positive(argument: str, value: float) -> float:
    real = isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
    if not real or (isinstance(value, numbers.Integral) and abs(value) > sys.float_info.max):  # float() overflows
        raise invalid(argument, value, "a positive finite number")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise invalid(argument, value, "a positive finite number")
    return number


class ATan(Surrogate):
    """Arc-tangent surrogate (snnTorch ``surrogate.atan``): dS/dU = (alpha/2) / (1 + (pi/2 alpha U)^2)."""

    name = "atan"

    def __init__(self, alpha: float = 2.0) -> None:
        self.alpha = _positive("alpha", alpha)

    def scaled_derivative(self, shifted: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        shifted.mul_(math.pi / 2 * self.alpha).square_().add_(1).reciprocal_().mul_(self.alpha / 2)
        return shifted.mul_(grad)

    def parameters_dict(self) -> dict[str, float]:
        return {"alpha": self.alpha}


class FastSigmoid(Surrogate):
    """Fast-sigmoid surrogate (snnTorch ``surrogate.fast_sigmoid``): dS/dU = 1 / (slope |U| + 1)^2."""

    name = "fast_sigmoid"

    def __init__(self, slope: float = 25.0) -> None:
        self.slope = _positive("slope", slope)

    def scaled_derivative(self, shifted: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        shifted.abs_().mul_(self.slope).add_(1.0).square_()
        return torch.div(grad, shifted, out=shifted) if grad.shape == shifted.shape else grad / shifted

    def parameters_dict(self) -> dict[str, float]:
        return {"slope": self.slope}


SURROGATES: dict[str, type[ATan] | type[FastSigmoid]] = {"atan": ATan, "fast_sigmoid": FastSigmoid}
# snnTorch's surrogate factories whose gradient hybridai computes the same way: factory -> its constant
SNNTORCH_FACTORIES = {"atan": "alpha", "fast_sigmoid": "slope"}


def from_snntorch_surrogate(function: object) -> Surrogate | None:
    """hybridai's surrogate equal to ``function`` when it is ``snntorch.surrogate.atan(alpha)`` or
    ``fast_sigmoid(slope)`` (the closures those factories return), else None.

    Read from the closure without importing snnTorch: its module, the factory that made it and
    the constant it holds. Gradients then agree with snnTorch's to rounding (same operations).
    """
    if (
        not isinstance(function, FunctionType)
        or function.__module__ != "snntorch.surrogate"
        or not function.__closure__
    ):
        return None
    factory = function.__qualname__.split(".<locals>.")[0]
    if factory not in SNNTORCH_FACTORIES:
        return None
    constants = dict(zip(function.__code__.co_freevars, (c.cell_contents for c in function.__closure__), strict=True))
    constant = SNNTORCH_FACTORIES[factory]
    if constant not in constants:
        return None
    return SURROGATES[factory](constants[constant])


def describe_callable(value: object) -> str:
    """How an error shows a function: ``snntorch.surrogate.sigmoid.<locals>.inner``, or its type name."""
    name = getattr(value, "__qualname__", None)
    module = getattr(value, "__module__", None)
    return f"{module}.{name}" if name and module else type(value).__name__


def make_surrogate(spec: str | Surrogate, argument: str = "surrogate") -> Surrogate:
    """A surrogate from a name (``"atan"``, ``"fast_sigmoid"``), an instance, or snnTorch's
    ``atan()``/``fast_sigmoid()`` (translated by ``from_snntorch_surrogate``)."""
    if isinstance(spec, Surrogate):
        return spec
    if isinstance(spec, str) and spec in SURROGATES:
        return SURROGATES[spec]()
    translated = from_snntorch_surrogate(spec) if callable(spec) else None
    if translated is not None:
        return translated
    accepted = f"one of {sorted(SURROGATES)} or an instance such as hybridai.spiking.ATan(alpha=2.0)"
    if argument != "surrogate":  # snnTorch's spike_grad=
        accepted = (
            "hybridai calls this surrogate=, e.g. surrogate=hybridai.spiking.ATan(); it takes "
            f"one of {sorted(SURROGATES)} or an instance from hybridai.spiking"
        )
    if callable(spec):
        raise invalid(
            argument,
            describe_callable(spec),
            f"{accepted}; of snnTorch's surrogates hybridai translates snntorch.surrogate.atan() and "
            "fast_sigmoid(), whose gradients it computes the same way, and has no equivalent of this one",
        )
    raise invalid(argument, spec, accepted)
