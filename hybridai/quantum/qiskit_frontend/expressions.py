"""Qiskit ``ParameterExpression`` -> a function of torch tensors, so that gradients flow through it.

A gate angle of a Qiskit circuit is a number, a ``Parameter`` or an expression of parameters such as
``2*(pi - x[0])*(pi - x[1])`` (``zz_feature_map``). ``angle(value)`` compiles it once into an ``Angle``: called
with ``{parameter name: tensor}`` it evaluates the expression with torch operations, so autograd differentiates
it and a parameter used in several gates collects gradient from every one. Numbers stay Python floats (float64:
never rounded through torch's default dtype). Complex expressions are refused: gate angles are real.

The expression is compiled from Qiskit's own expression tree (the operations it was built with), else from its
SymPy form (``ParameterExpression.sympify()``), and the compiled angle is checked against Qiskit's numeric binding
(``ParameterExpression.bind``) at a few points before it is kept: Qiskit 2.6's ``sympify()`` returns the
cancelled parameter of ``0*a + b`` or ``a - a + b`` for about half of such objects, and fails on ``2**x``. An
angle that no path computes as Qiskit binds it is refused by name, never evaluated wrongly.
"""

from __future__ import annotations

import math
import random
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
        return Angle(str(value), frozenset(p.name for p in value.parameters), _checked(value, where))
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


def _checked(value: Any, where: str) -> Evaluate:
    """``value`` compiled from Qiskit's expression tree, else from its SymPy form: the first that equals Qiskit's
    own binding at every checked point (``_points``). A ConfigError where neither does, naming the gate, the
    expression and both results; a path that cannot compile the expression gives its own ConfigError when no path
    compiles it (a complex angle, a function torch lacks)."""
    points: list[tuple[dict[str, float], float]] | None = None  # drawn once a path compiles
    refusals: list[ConfigError] = []
    mismatches: list[str] = []
    for path, build in (("Qiskit's expression tree", _from_tree), ("its SymPy form", _from_sympy)):
        try:
            evaluate = build(value, where)
        except ConfigError as exc:
            refusals.append(exc)
            continue
        points = _points(value, where) if points is None else points
        wrong = _disagreement(evaluate, points)
        if wrong is None:
            return evaluate
        mismatches.append(f"{path} gives {wrong}")
    if refusals and not mismatches:
        raise refusals[0]
    raise ConfigError(
        f"{where} has the angle {value}, which hybridai cannot compute as Qiskit binds it ({'; '.join(mismatches)}"
        f"{'; ' if mismatches and refusals else ''}{'; '.join(str(r) for r in refusals)}); accepted: real "
        f"expressions of parameters with +, -, *, /, ** and {', '.join(sorted(FUNCTIONS))}, or bind this angle "
        "(assign_parameters) before giving the circuit"
    )


def _points(value: Any, where: str, wanted: int = 3) -> list[tuple[dict[str, float], float]]:
    """Up to ``wanted`` points ``({name: value}, Qiskit's bound value)`` where Qiskit's binding of ``value`` is a
    finite real number: parameter values drawn (a fixed seed of a local generator: the same points every time) in
    (0.1, 1), then (-1, -0.1), then (1, 3), so that ``log``, ``acos`` and powers find a point in their domain. A
    ConfigError where no draw gives one (nothing to check the compiled angle against)."""
    parameters = sorted(value.parameters, key=lambda p: p.name)
    draw = random.Random(20240937)
    points: list[tuple[dict[str, float], float]] = []
    for low, high in ((0.1, 1.0),) * 4 + ((-1.0, -0.1),) * 4 + ((1.0, 3.0),) * 4:
        binding = {p: draw.uniform(low, high) for p in parameters}
        try:
            number = complex(value.bind(binding))
        except Exception:  # a division by zero, a domain error: no check at this point
            continue
        if number.imag == 0 and math.isfinite(number.real):
            points.append(({p.name: v for p, v in binding.items()}, number.real))
            if len(points) == wanted:
                break
    if not points:
        raise ConfigError(
            f"{where} has the angle {value}, which Qiskit's binding makes no finite real number at any point "
            "hybridai checks; accepted: real expressions of parameters"
        )
    return points


def _disagreement(evaluate: Evaluate, points: list[tuple[dict[str, float], float]]) -> str | None:
    """None where ``evaluate`` equals Qiskit's bound value at every point (to 1e-9 relative), else the first
    point where it does not, in words."""
    for named, want in points:
        values = {name: torch.tensor(v, dtype=torch.float64) for name, v in named.items()}
        try:
            got = complex(torch.as_tensor(evaluate(values)).item())
        except Exception as exc:  # a domain error of a constant piece, say
            return f"{type(exc).__name__} at {named} where Qiskit binds {want}"
        if not (got.imag == 0 and abs(got.real - want) <= 1e-9 * max(1.0, abs(want))):
            return f"{got.real if got.imag == 0 else got} at {named} where Qiskit binds {want}"
    return None


def _from_sympy(value: Any, where: str) -> Evaluate:
    """``value`` compiled from its SymPy form; a ConfigError where Qiskit cannot build that form."""
    try:
        expr = value.sympify()
    except Exception as exc:  # Qiskit 2.6 fails on 2**x (an int's __pow__ of a Symbol)
        raise ConfigError(f"{where} has the angle {value}, whose SymPy form Qiskit cannot build ({exc})") from None
    return _compile(expr, where)


def _opcodes() -> dict[Any, tuple[str, str]]:
    """Qiskit's expression-tree operation codes -> ("binary" or "reversed" or "unary", operator or FUNCTIONS
    name). Reversed operations hold their operands swapped (``2 - x`` is ``RSUB(x, 2)``), as ``sympify`` reads
    them."""
    from qiskit.circuit.parameterexpression import OpCode

    return {
        OpCode.ADD: ("binary", "+"), OpCode.SUB: ("binary", "-"), OpCode.MUL: ("binary", "*"),
        OpCode.DIV: ("binary", "/"), OpCode.POW: ("binary", "**"), OpCode.RSUB: ("reversed", "-"),
        OpCode.RDIV: ("reversed", "/"), OpCode.RPOW: ("reversed", "**"), OpCode.SIN: ("unary", "sin"),
        OpCode.COS: ("unary", "cos"), OpCode.TAN: ("unary", "tan"), OpCode.ASIN: ("unary", "asin"),
        OpCode.ACOS: ("unary", "acos"), OpCode.ATAN: ("unary", "atan"), OpCode.EXP: ("unary", "exp"),
        OpCode.LOG: ("unary", "log"), OpCode.SIGN: ("unary", "sign"), OpCode.ABS: ("unary", "Abs"),
        OpCode.CONJ: ("unary", "conjugate"),
    }  # fmt: skip


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
    "**": lambda a, b: a**b,
}  # fmt: skip


def _from_tree(value: Any, where: str) -> Evaluate:
    """``value`` (a parameter, a number or an expression) compiled from Qiskit's own expression tree: the
    operations it was built with, replayed on a stack as ``sympify`` replays them (operands pushed, then popped by
    each operation), with torch functions. A ConfigError for a tree this Qiskit does not expose or an operation
    torch cannot evaluate (a derivative, a substitution)."""
    from qiskit.circuit import Parameter, ParameterExpression

    if isinstance(value, Parameter):
        name = value.name
        return lambda values: values[name]
    if not isinstance(value, ParameterExpression) or not value.parameters:
        return _real(complex(value), value, where)
    replay = getattr(value, "_qpy_replay", None)
    if not replay:
        raise ConfigError(f"{where} has the angle {value}, whose expression tree this Qiskit does not expose")
    codes = _opcodes()
    stack: list[Evaluate] = []
    for step in replay:
        stack.extend(_from_tree(operand, where) for operand in (step.lhs, step.rhs) if operand is not None)
        kind, op = codes.get(step.op, ("", ""))
        if kind == "unary":
            stack.append(_function(op, stack.pop()))
        elif kind in ("binary", "reversed"):
            right, left = stack.pop(), stack.pop()
            first, second = (right, left) if kind == "reversed" else (left, right)
            stack.append(_binary(BINARY[op], first, second))
        else:
            raise ConfigError(f"{where} has the angle {value}, whose operation {step.op} hybridai cannot evaluate")
    if len(stack) != 1:
        raise ConfigError(f"{where} has the angle {value}, whose expression tree hybridai cannot read")
    return stack[0]


def _binary(combine: Callable[[Any, Any], Any], first: Evaluate, second: Evaluate) -> Evaluate:
    return lambda values: combine(first(values), second(values))


def _real(number: complex, shown: Any, where: str) -> Evaluate:
    if number.imag != 0:
        raise ConfigError(f"{where} has a complex angle ({shown}); accepted: real expressions of parameters")
    real = float(number.real)
    return lambda values: real


def _function(name: str, inner: Evaluate) -> Evaluate:
    """``FUNCTIONS[name]`` of ``inner``: torch's on tensors, math's on constants."""
    tensor_fn, math_fn = FUNCTIONS[name]

    def call(values: Values) -> Any:
        v = inner(values)
        return tensor_fn(v) if torch.is_tensor(v) else math_fn(v)

    return call


def _compile(expr: Any, where: str) -> Evaluate:
    """A SymPy expression as a function of ``{name: tensor}`` (recursively, once per node)."""
    import sympy

    if expr.is_Symbol:
        name = str(expr.name)
        return lambda values: values[name]
    if expr.is_number:
        return _real(complex(expr), expr, where)
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
        return _function(name, args[0])
    raise ConfigError(
        f"{where} has the angle {expr}, whose {name} hybridai cannot evaluate in torch; accepted: +, -, *, /, **, "
        f"and {', '.join(sorted(FUNCTIONS))} of parameters and numbers"
    )


def _fold(args: list[Evaluate], values: Values, combine: Callable[[Any, Any], Any]) -> Any:
    result = args[0](values)
    for arg in args[1:]:
        result = combine(result, arg(values))
    return result
