"""Zero-noise extrapolation (ZNE) settings and Mitiq's extrapolation.

``ZNE`` is accepted as ``mitigation=`` by ``QuantumLayer`` and ``QuantumKernel`` on any executor
with shots or noise; ``hybridai.quantum.mitigation.folding`` runs it around the executor. Richardson,
linear and polynomial extrapolations are linear in the measured values: hybridai asks Mitiq's
factory for the coefficients once and applies them as a fixed linear combination, so gradients are
exact; the exponential fit is differentiated by the chain rule. Each mitigated execution returns a
``ZNEResult`` (noisy values per scale factor and the extrapolation) for plots.
"""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hybridai.core.errors import ConfigError, MissingExtraError, ShapeError, bounded_int, check_seed, invalid

FOLDINGS = ("global", "random")
EXTRAPOLATIONS = ("richardson", "linear", "poly", "exp")
ENGINES = ("mitiq", "ibm")
# The most a mitigated value may amplify the noise of the values it combines (sum of |coefficients|):
# Richardson on (1, 3, 5) gives 3.5, on 1..10 about 1e3; factors 1e-12 apart give 1e11.
MAX_NOISE_GAIN = 1e4
# The largest scale factor: a circuit folded at s runs about s times its gates (and s times their noise), so that
# beyond 100 the folded circuits are mostly noise and their size, not the extrapolation, is what one gets.
MAX_SCALE_FACTOR = 100.0


@dataclass(frozen=True)
class ZNE:
    """Zero-noise extrapolation settings.

    scale_factors: noise scale factors (in [1, 100], increasing; unitary folding reaches odd
        integers exactly, other values by partial folding), far enough apart that the extrapolation
        amplifies the noise of the measured values at most ``MAX_NOISE_GAIN`` (1e4) times.
    folding: "global" (Mitiq ``fold_global``) or "random" (``fold_gates_at_random``, seeded).
    extrapolation: "richardson", "linear", "poly" (degree ``order``) or "exp".
    engine: "mitiq" (folding by hybridai with Mitiq, any executor) or "ibm" (qiskit-ibm-runtime's
        own resilience options, ``ibm:`` backends only).
    asymptote: the known infinite-noise value for "exp" (0.0 for Pauli expectations under
        depolarizing noise makes the fit a stable log-linear one); ``None`` fits it.
    order: degree of the "poly" fit, a positive int. seed: ``None`` or an int in [0, 2**32 - 1] (random folding).
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
        factors = _scale_factors(self.scale_factors)
        if self.folding not in FOLDINGS:
            raise invalid("folding", self.folding, f"one of {FOLDINGS}")
        if self.extrapolation not in EXTRAPOLATIONS:
            raise invalid("extrapolation", self.extrapolation, f"one of {EXTRAPOLATIONS}")
        if self.engine not in ENGINES:
            raise invalid("engine", self.engine, f"one of {ENGINES}")
        order = bounded_int("order", self.order, 1)  # before it sizes anything below
        check_seed(self.seed)
        if self.asymptote is not None and (
            isinstance(self.asymptote, bool)
            or not isinstance(self.asymptote, numbers.Real)
            or not math.isfinite(self.asymptote)
        ):
            raise invalid("asymptote", self.asymptote, "None (fitted) or a finite number, e.g. 0.0")
        needed = {"richardson": 2, "linear": 2, "poly": order + 1, "exp": 3}[self.extrapolation]
        if len(factors) < needed:
            raise invalid(
                "scale_factors",
                self.scale_factors,
                f"at least {needed} factors for extrapolation={self.extrapolation!r}"
                + (f" of order={order}" if self.extrapolation == "poly" else ""),
            )
        object.__setattr__(self, "scale_factors", factors)
        object.__setattr__(self, "order", order)
        if self.asymptote is not None:
            object.__setattr__(self, "asymptote", float(self.asymptote))
        # conditioning: how much the extrapolation amplifies the noise of the measured values (shots, drift)
        coefficients = self._mitiq_coefficients() if self.linear else None
        gain = float(np.abs(_linear_fit_at_zero(factors) if coefficients is None else coefficients).sum())
        if not math.isfinite(gain) or gain > MAX_NOISE_GAIN:
            raise invalid(
                "scale_factors",
                self.scale_factors,
                f"factors far enough apart that the extrapolation amplifies the noise of the measured values at most "
                f"{MAX_NOISE_GAIN:g} times (the sum of |coefficients| is {gain:.3g} here; (1, 3, 5) gives 3.5 with "
                "Richardson)",
            )
        if coefficients is not None:
            object.__setattr__(self, "_coefficients", tuple(coefficients))

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

        values = _values(values, len(self.scale_factors))
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
        noisy = np.asarray(noisy, dtype=np.float64)
        if noisy.ndim == 0 or noisy.shape[0] != len(self.scale_factors):
            raise invalid(
                "noisy.shape", noisy.shape, f"[{len(self.scale_factors)}, ...] (one row per scale factor)", ShapeError
            )
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


def _scale_factors(given: Any) -> tuple[float, ...]:
    """``given`` as increasing floats in [1, MAX_SCALE_FACTOR], else a ConfigError naming scale_factors."""
    accepted = (
        f"a non-empty sequence of strictly increasing numbers >= 1 and <= {MAX_SCALE_FACTOR:g}, e.g. (1, 3, 5) (1: "
        "the unamplified circuit; a circuit folded at s runs about s times its gates)"
    )
    if isinstance(given, str | bytes) or not isinstance(given, Iterable):
        raise invalid("scale_factors", given, accepted)
    given_list = list(given)
    if not given_list or any(isinstance(s, bool) or not isinstance(s, numbers.Real) for s in given_list):
        raise invalid("scale_factors", given, accepted)
    factors = tuple(float(s) for s in given_list)
    if any(not 1 <= s <= MAX_SCALE_FACTOR for s in factors) or list(factors) != sorted(set(factors)):  # NaN fails
        raise invalid("scale_factors", given, accepted)
    return factors


def _values(values: Any, n: int) -> list[float]:
    """``values`` as n floats (one per scale factor), else a ShapeError naming values."""
    accepted = f"{n} finite numbers, one per scale factor"
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise invalid("values", reprlib.repr(values), accepted, ShapeError) from None
    if array.shape != (n,) or not np.isfinite(array).all():
        raise invalid("values", reprlib.repr(values), accepted, ShapeError)
    return list(array)


def _linear_fit_at_zero(factors: tuple[float, ...]) -> np.ndarray:
    """The coefficients c with sum(c * y) = the least-squares line through (factors, y) at 0: the noise gain
    of a fit on these factors (used for the non-linear 'exp' fit, which has no fixed coefficients)."""
    A = np.stack([np.ones(len(factors)), np.asarray(factors)], 1)
    with np.errstate(all="ignore"):
        return np.linalg.pinv(A)[0]


@dataclass
class ZNEResult:
    """Noisy values per scale factor ``[F, B, R]`` and their extrapolation ``[B, R]``."""

    scale_factors: tuple[float, ...]
    noisy: np.ndarray
    mitigated: np.ndarray
    extrapolation: str
    coefficients: np.ndarray | None
