"""Zero-noise extrapolation (ZNE) with Mitiq, inside training.

``ZNE`` is accepted as ``mitigation=`` by ``QuantumLayer`` on the noisy Qiskit backends.
Mitiq does the folding (``mitiq.zne.scaling``) and the extrapolation (its factories):
the parametrised circuit is folded ONCE per structure and scale factor (Mitiq folds Cirq
circuits with symbolic angles), and every folded circuit of a batch, with every
parameter-shifted copy, goes out in one primitive call. Richardson, linear and polynomial
extrapolations are linear in the measured values: hybridai asks Mitiq's factory for the
coefficients once and applies them as a fixed linear combination, so gradients are exact
by the shift rule; the exponential fit is differentiated by the chain rule. Each forward
pass leaves a ``ZNEResult`` (noisy values per scale factor and the extrapolation) for plots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, MissingExtraError, invalid

FOLDINGS = ("global", "random")
EXTRAPOLATIONS = ("richardson", "linear", "poly", "exp")
ENGINES = ("mitiq", "ibm")


@dataclass(frozen=True)
class ZNE:
    """Zero-noise extrapolation settings.

    scale_factors: noise scale factors (>= 1, increasing; unitary folding reaches odd
        integers exactly, other values by partial folding).
    folding: "global" (Mitiq ``fold_global``) or "random" (``fold_gates_at_random``, seeded).
    extrapolation: "richardson", "linear", "poly" (degree ``order``) or "exp".
    engine: "mitiq" (folding here, any noisy Qiskit backend) or "ibm" (qiskit-ibm-runtime's
        own resilience options, ``ibm:`` backends only).
    asymptote: the known infinite-noise value for "exp" (0.0 for Pauli expectations under
        depolarizing noise makes the fit a stable log-linear one); ``None`` fits it.
    """

    scale_factors: tuple[float, ...] = (1.0, 3.0, 5.0)
    folding: str = "global"
    extrapolation: str = "richardson"
    order: int = 2
    seed: int | None = None
    engine: str = "mitiq"
    asymptote: float | None = None
    _coefficients: tuple[float, ...] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        factors = tuple(float(s) for s in self.scale_factors) if _iterable(self.scale_factors) else None
        if not factors:
            raise invalid("scale_factors", self.scale_factors, "a non-empty sequence of numbers >= 1")
        if any(not math.isfinite(s) or s < 1 for s in factors):
            raise invalid("scale_factors", self.scale_factors, "numbers >= 1 (1 is the unamplified circuit)")
        if list(factors) != sorted(set(factors)):
            raise invalid("scale_factors", self.scale_factors, "strictly increasing numbers >= 1")
        if self.folding not in FOLDINGS:
            raise invalid("folding", self.folding, f"one of {FOLDINGS}")
        if self.extrapolation not in EXTRAPOLATIONS:
            raise invalid("extrapolation", self.extrapolation, f"one of {EXTRAPOLATIONS}")
        if self.engine not in ENGINES:
            raise invalid("engine", self.engine, f"one of {ENGINES}")
        needed = {"richardson": 2, "linear": 2, "poly": self.order + 1, "exp": 3}[self.extrapolation]
        if len(factors) < needed:
            raise invalid(
                "scale_factors",
                self.scale_factors,
                f"at least {needed} factors for extrapolation={self.extrapolation!r}",
            )
        object.__setattr__(self, "scale_factors", factors)
        if self.linear:
            object.__setattr__(self, "_coefficients", tuple(self._mitiq_coefficients()))

    @property
    def linear(self) -> bool:
        """Whether the mitigated value is a fixed linear combination of the noisy values."""
        return self.extrapolation != "exp"

    def _factory(self) -> Any:
        try:
            from mitiq.zne import inference
        except ImportError as exc:  # pragma: no cover - mitiq is a runtime dependency
            raise MissingExtraError("mitiq", "all", "zero-noise extrapolation") from exc
        return {
            "richardson": lambda: inference.RichardsonFactory(self.scale_factors),
            "linear": lambda: inference.LinearFactory(self.scale_factors),
            "poly": lambda: inference.PolyFactory(self.scale_factors, order=self.order),
            "exp": lambda: inference.ExpFactory(self.scale_factors),
        }[self.extrapolation]()

    def extrapolate(self, values: Any) -> float:
        """Mitiq's extrapolation of noisy ``values`` (one per scale factor) to zero noise."""
        from mitiq.zne.inference import ExtrapolationError

        factory = self._factory()
        try:
            return float(type(factory).extrapolate(self.scale_factors, list(values), *self._extra_args()))
        except ExtrapolationError as exc:
            shown = [round(float(v), 6) for v in values]
            raise ConfigError(
                f"extrapolation={self.extrapolation!r} failed on the noisy values {shown} "
                f"({exc}); accepted: asymptote=0.0 for Pauli expectations, or a linear extrapolation "
                "('richardson', 'linear', 'poly')"
            ) from None

    def _extra_args(self) -> tuple:
        if self.extrapolation == "poly":
            return (self.order,)
        if self.extrapolation == "exp":
            return (self.asymptote,)
        return ()

    def _mitiq_coefficients(self) -> list[float]:
        eye = np.eye(len(self.scale_factors))
        return [self.extrapolate(row) for row in eye]

    @property
    def coefficients(self) -> np.ndarray:
        """The linear-combination coefficients (linear extrapolations only), from Mitiq."""
        if self._coefficients is None:
            raise ConfigError(f"extrapolation={self.extrapolation!r} is not linear; it has no fixed coefficients")
        return np.asarray(self._coefficients)

    def combine(self, noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mitigated values from ``noisy [F, ...]`` and d(mitigated)/d(noisy) ``[F, ...]``."""
        if self.linear:
            c = self.coefficients.reshape((-1,) + (1,) * (noisy.ndim - 1))
            return (c * noisy).sum(0), np.broadcast_to(c, noisy.shape)
        flat = noisy.reshape(noisy.shape[0], -1)
        value = np.array([self.extrapolate(flat[:, j]) for j in range(flat.shape[1])])
        weights = np.zeros_like(flat)
        h = 1e-6
        for i in range(flat.shape[0]):  # chain rule: derivative of Mitiq's fit, central differences
            up, down = flat.copy(), flat.copy()
            up[i] += h
            down[i] -= h
            weights[i] = [
                (self.extrapolate(up[:, j]) - self.extrapolate(down[:, j])) / (2 * h) for j in range(flat.shape[1])
            ]
        return value.reshape(noisy.shape[1:]), weights.reshape(noisy.shape)


def _iterable(x: Any) -> bool:
    try:
        iter(x)
    except TypeError:
        return False
    return not isinstance(x, str)


@dataclass
class ZNEResult:
    """Noisy values per scale factor ``[F, B, R]`` and their extrapolation ``[B, R]``."""

    scale_factors: tuple[float, ...]
    noisy: np.ndarray
    mitigated: np.ndarray
    extrapolation: str
    coefficients: np.ndarray | None


def plot_zne(result: ZNEResult, path: str, sample: int = 0, column: int = 0) -> str:
    """Save a PNG of the noisy values against scale factor and the zero-noise value; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not 0 <= sample < result.noisy.shape[1]:
        raise invalid("sample", sample, f"an index in [0, {result.noisy.shape[1]})")
    if not 0 <= column < result.noisy.shape[2]:
        raise invalid("column", column, f"an index in [0, {result.noisy.shape[2]})")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    xs = np.asarray(result.scale_factors)
    ys = result.noisy[:, sample, column]
    ax.plot(xs, ys, "o", label="noisy (folded circuits)")
    if result.coefficients is not None and result.extrapolation in ("linear", "poly", "richardson"):
        degree = {"linear": 1, "richardson": len(xs) - 1}.get(result.extrapolation, min(len(xs) - 1, 2))
        fit = np.polyfit(xs, ys, degree)
        grid = np.linspace(0, xs.max(), 100)
        ax.plot(grid, np.polyval(fit, grid), "-", alpha=0.6, label=f"{result.extrapolation} fit")
    ax.plot([0], [result.mitigated[sample, column]], "*", markersize=12, label="zero-noise value")
    ax.set_xlabel("noise scale factor")
    ax.set_ylabel("expectation value")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# -- folding parametrised circuits with Mitiq ---------------------------------------------


def _constant_gates() -> list[tuple[str, Any]]:
    """(qiskit name, Cirq gate) of the constant gates, so folds come back as named, noisy gates."""
    import cirq

    return [
        ("h", cirq.H), ("x", cirq.X), ("y", cirq.Y), ("z", cirq.Z), ("s", cirq.S), ("sdg", cirq.S**-1),
        ("t", cirq.T), ("tdg", cirq.T**-1), ("sx", cirq.X**0.5), ("sxdg", cirq.X**-0.5), ("cx", cirq.CNOT),
        ("cz", cirq.CZ), ("cy", cirq.ControlledGate(cirq.Y)), ("ch", cirq.ControlledGate(cirq.H)),
        ("swap", cirq.SWAP), ("ccx", cirq.CCX), ("cswap", cirq.CSWAP), ("iswap", cirq.ISWAP),
        ("iswapdg", cirq.ISWAP**-1),
    ]  # fmt: skip


def to_cirq(circuit: Any) -> Any:
    """A parametrised qiskit circuit (our gate set) as a Cirq circuit with sympy angles."""
    import cirq
    import sympy

    qubits = cirq.LineQubit.range(circuit.num_qubits)
    constants = dict(_constant_gates())
    ops = []
    for instruction in circuit.data:
        name = instruction.operation.name
        qs = [qubits[circuit.find_bit(q).index] for q in instruction.qubits]
        params = instruction.operation.params

        def angle(p: Any) -> Any:  # our circuits hold bare theta[k] parameters or numbers
            return sympy.Symbol(f"theta_{p.index}") if hasattr(p, "index") else float(p)

        if name in ("rx", "ry", "rz"):
            ops.append(getattr(cirq, name)(angle(params[0])).on(*qs))
        elif name == "p":
            ops.append(cirq.ZPowGate(exponent=angle(params[0]) / sympy.pi).on(*qs))
        elif name in ("rxx", "ryy", "rzz"):
            gate = {"rxx": cirq.XXPowGate, "ryy": cirq.YYPowGate, "rzz": cirq.ZZPowGate}[name]
            ops.append(gate(exponent=angle(params[0]) / sympy.pi, global_shift=-0.5).on(*qs))
        elif name in constants:
            ops.append(constants[name].on(*qs))
        else:  # any other constant gate by its matrix (qiskit is little-endian: reverse the qubits)
            from qiskit.quantum_info import Operator

            matrix = Operator(instruction.operation).data
            ops.append(cirq.MatrixGate(matrix).on(*reversed(qs)))
    return cirq.Circuit(ops)


@dataclass
class Occurrences:
    """Where each parameter of a folded circuit comes from: ``phi[j] = scale[j] * theta[index[j]] + offset[j]``.

    A folded circuit repeats each angle (U, U^dagger, U, ...); under noise the expectation is no
    longer a single sinusoid of the shared angle, so every occurrence gets its own parameter
    and the shift rule is applied per occurrence (chain rule: sum over occurrences).
    """

    index: np.ndarray
    scale: np.ndarray
    offset: np.ndarray

    def values(self, theta: np.ndarray) -> np.ndarray:
        return theta[..., self.index] * self.scale + self.offset


def from_cirq(folded: Any, n_qubits: int) -> tuple[Any, Occurrences]:
    """A folded Cirq circuit back to qiskit, with one fresh parameter per angle occurrence."""
    import cirq
    import sympy
    from qiskit import QuantumCircuit
    from qiskit.circuit import Parameter
    from qiskit.circuit.library import UnitaryGate

    index, scale, offset = [], [], []

    def angle(expr: Any) -> Any:
        expr = sympy.sympify(expr)
        if not expr.free_symbols:
            return float(expr)
        (symbol,) = expr.free_symbols
        index.append(int(symbol.name.split("_")[1]))
        scale.append(float(sympy.diff(expr, symbol)))
        offset.append(float(expr.subs(symbol, 0)))
        return Parameter(f"phi_{len(index) - 1:06d}")

    constants = _constant_gates()
    out = QuantumCircuit(n_qubits)
    for op in folded.all_operations():
        gate, qs = op.gate, [q.x for q in op.qubits]
        if isinstance(gate, cirq.Rx | cirq.Ry | cirq.Rz):
            getattr(out, type(gate).__name__.lower())(angle(gate._rads), *qs)
        elif isinstance(gate, cirq.XXPowGate | cirq.YYPowGate | cirq.ZZPowGate) and cirq.is_parameterized(gate):
            name = {cirq.XXPowGate: "rxx", cirq.YYPowGate: "ryy", cirq.ZZPowGate: "rzz"}[type(gate)]
            getattr(out, name)(angle(gate.exponent * sympy.pi), *qs)
        elif isinstance(gate, cirq.ZPowGate) and cirq.is_parameterized(gate):
            out.p(angle(gate.exponent * sympy.pi), *qs)
        elif (name := next((n for n, g in constants if g == gate), None)) is not None:
            if name == "iswapdg":
                out.append(UnitaryGate(cirq.unitary(op)), list(reversed(qs)))
            else:
                getattr(out, name)(*qs)
        else:
            out.append(UnitaryGate(cirq.unitary(op)), list(reversed(qs)))
    occurrences = Occurrences(np.array(index, dtype=int), np.array(scale), np.array(offset))
    return out, occurrences


def fold(circuit: Any, zne: ZNE) -> list[tuple[Any, Occurrences]]:
    """One folded qiskit circuit per scale factor (Mitiq folding, done once per structure)."""
    from mitiq.zne import scaling

    base = to_cirq(circuit)
    folded = []
    for s in zne.scale_factors:
        if zne.folding == "global":
            out = scaling.fold_global(base, s)
        else:
            out = scaling.fold_gates_at_random(base, s, seed=zne.seed)
        folded.append(from_cirq(out, circuit.num_qubits))
    return folded
