"""Qiskit ``ParameterExpression`` -> a function of torch tensors, so that gradients flow through it.

A gate angle of a Qiskit circuit is a number, a ``Parameter`` or an expression of parameters such as
``2*(pi - x[0])*(pi - x[1])`` (``zz_feature_map``). ``angle(value)`` compiles it once, from its SymPy form
(``ParameterExpression.sympify()``, Qiskit's public API), into an ``Angle``: called with ``{parameter name:
tensor}`` it evaluates the expression with torch operations, so autograd differentiates it and a parameter
used in several gates collects gradient from every one. Numbers stay Python floats (float64: never rounded
through torch's default dtype). Complex expressions are refused: gate angles are real.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from hybridai.core.errors import ConfigError

Values = Mapping[str, torch.Tensor]
Evaluate = Callable[[Values], Any]  # returns a tensor, or a float where the piece is constant

# SymPy function name -> (torch function, math function for constants)
FUNCTIONS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], Callable[[float], float]]] = {
    "sin": (torch.sin, math.sin), "cos": (torch.cos, math.cos), "tan": (torch.tan, math.tan),
    "asin": (torch.asin, math.asin), "acos": (torch.acos, math.acos), "atan": (torch.atan, math.atan),
    "exp": (torch.exp, math.exp), "log": (torch.log, math.log), "Abs": (torch.abs, abs),
    "sign": (torch.sign, lambda v: float((v > 0) - (v < 0))),
    "conjugate": (lambda t: t, lambda v: v), "re": (lambda t: t, lambda v: v),  # real angles: identities
}  # fmt: skip


class Angle:
    """One gate angle: a float, or an expression of named parameters evaluated in torch."""

    def __init__(self, text: str, names: frozenset[str], evaluate: Evaluate) -> None:
        self.text, self.names, self._evaluate = text, names, evaluate

    def __call__(self, values: Values) -> Any:
        return self._evaluate(values)

    def __repr__(self) -> str:
        return f"Angle({self.text})"


def angle(value: Any, where: str) -> Angle:
    """The ``Angle`` of a Qiskit gate parameter ``value`` (``where`` names the gate in errors)."""
    from qiskit.circuit import Parameter, ParameterExpression

    if isinstance(value, Parameter):
        name = value.name
        return Angle(name, frozenset({name}), lambda values: values[name])
    if isinstance(value, ParameterExpression):
        if not value.parameters:
            return _constant(complex(value), str(value), where)
        return Angle(str(value), frozenset(p.name for p in value.parameters), _compile(value.sympify(), where))
    try:
        number = complex(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} has the parameter {value!r}; accepted: numbers and Qiskit parameters") from None
    return _constant(number, repr(value), where)


def _constant(number: complex, text: str, where: str) -> Angle:
    if number.imag != 0 or not math.isfinite(number.real):
        raise ConfigError(f"{where} has the angle {text} ({number}); accepted: real, finite angles")
    real = float(number.real)
    return Angle(text, frozenset(), lambda values: real)


def _compile(expr: Any, where: str) -> Evaluate:
    """A SymPy expression as a function of ``{name: tensor}`` (recursively, once per node)."""
    import sympy

    if expr.is_Symbol:
        name = str(expr.name)
        return lambda values: values[name]
    if expr.is_number:
        number = complex(expr)
        if number.imag != 0:
            raise ConfigError(f"{where} has a complex angle ({expr}); accepted: real expressions of parameters")
        real = float(number.real)
        return lambda values: real
    args = [_compile(a, where) for a in expr.args]
    if isinstance(expr, sympy.Add):
        return lambda values: _fold(args, values, lambda a, b: a + b)
    if isinstance(expr, sympy.Mul):
        return lambda values: _fold(args, values, lambda a, b: a * b)
    if isinstance(expr, sympy.Pow):
        base, exponent = args
        return lambda values: base(values) ** exponent(values)
    name = type(expr).__name__
    if name in FUNCTIONS and len(args) == 1:
        tensor_fn, math_fn = FUNCTIONS[name]
        (inner,) = args

        def call(values: Values) -> Any:
            v = inner(values)
            return tensor_fn(v) if torch.is_tensor(v) else math_fn(v)

        return call
    raise ConfigError(
        f"{where} has the angle {expr}, whose {name} hybridai cannot evaluate in torch; accepted: +, -, *, /, **, "
        f"and {', '.join(sorted(FUNCTIONS))} of parameters and numbers"
    )


def _fold(args: list[Evaluate], values: Values, combine: Callable[[Any, Any], Any]) -> Any:
    result = args[0](values)
    for arg in args[1:]:
        result = combine(result, arg(values))
    return result
