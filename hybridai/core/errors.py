"""Every error a user can cause: one base class, a few precise subclasses.

Messages name the argument, the value received and what would be accepted, so that
the fix is obvious from the message alone.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

# The largest seed every random generator hybridai seeds takes: numpy's legacy ``RandomState`` (Mitiq's random
# folding, scikit-learn) takes [0, 2**32 - 1]; torch.Generator.manual_seed, numpy's default_rng, PennyLane and
# Qiskit Aer take more.
SEED_MAX = 2**32 - 1
# The most shots one circuit may ask for: a count every simulator and library stores (a C int; Aer and PennyLane
# keep each shot, 8 bytes or more, so 2**31 shots are 16 GiB per circuit), whose standard error (2e-5) is below
# any use of a sampled estimate: shots=None gives exact values.
SHOTS_MAX = 2**31 - 1


class HybridAIError(Exception):
    """Base class of every error hybridai raises on purpose."""


class ConfigError(HybridAIError, ValueError):
    """An argument has a value hybridai cannot accept."""


class ShapeError(HybridAIError, ValueError):
    """A tensor has the wrong rank, width, dtype or device."""


class BackendNotFoundError(HybridAIError, LookupError):
    """A backend name (family or target) is not registered or not installed."""


class BackendUnavailableError(HybridAIError, RuntimeError):
    """A backend is registered but cannot run here (missing device, failed import, ...)."""


class UnsupportedOperationError(HybridAIError, NotImplementedError):
    """A backend cannot execute an operation or measurement; the message names another backend that can."""


class BackendExecutionError(HybridAIError, RuntimeError):
    """A backend job failed (after its retries); the message carries the job id."""

    def __init__(self, message: str, job_id: str | None = None) -> None:
        self.job_id = job_id
        super().__init__(message)


class ResourceLimitError(HybridAIError, MemoryError):
    """A computation would exceed a configured memory limit; refused before allocating."""


class MissingExtraError(HybridAIError, ImportError):
    """An optional package is not installed; the message names the pip extra."""

    def __init__(self, package: str, extra: str, purpose: str = "") -> None:
        self.package = package
        self.extra = extra
        super().__init__(missing_extra(package, extra, purpose))


def missing_extra(package: str, extra: str, purpose: str = "") -> str:
    """The one way hybridai says an optional package is missing: the package, the extra, the commands.

    The first command works today, from a clone of hybridai into the environment in use; the second once
    hybridai is on PyPI."""
    what = f" (needed for {purpose})" if purpose else ""
    return (
        f"the optional package {package!r} is not installed{what}; install it with pip install -e '.[{extra}]' "
        f"in a clone of hybridai (or pip install 'hybridai[{extra}]' once hybridai is published on PyPI)"
    )


def invalid(argument: str, value: object, accepted: str, cls: type[HybridAIError] = ConfigError) -> HybridAIError:
    """Build an error that names the argument, the value received and what is accepted."""
    return cls(f"{argument}={value!r} is not valid; accepted: {accepted}")


def described(value: object) -> str:
    """``value`` in words for a refusal: ``"a tensor of shape (4, 6)"`` for anything with a shape, else its type."""
    shape = getattr(value, "shape", None)
    return f"a {type(value).__name__} of shape {tuple(shape)}" if shape is not None else type(value).__name__


def positive_int(argument: str, value: object, high: int | None = None) -> int:
    """``value`` if it is a positive int (not a bool) and at most ``high`` when given, else a ConfigError naming
    ``argument``."""
    return _named_int(argument, value, 1, high)


def non_negative_int(argument: str, value: object, high: int | None = None) -> int:
    """``value`` if it is an int >= 0 (not a bool) and at most ``high`` when given, else a ConfigError naming
    ``argument``."""
    return _named_int(argument, value, 0, high)


def _named_int(argument: str, value: object, low: int, high: int | None) -> int:
    """``bounded_int``, whose refusal says "a positive int <= high" (or non-negative) for these two lows."""
    try:
        return bounded_int(argument, value, low, high)
    except ConfigError:
        raise invalid(argument, value, _int_range(low, high, named=True)) from None


def bounded_int(argument: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int if it is an integer (Python or numpy, not a bool) in ``[low, high]`` (either
    bound optional), else a ConfigError naming ``argument``, the value and the accepted range."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise invalid(argument, value, _int_range(low, high))
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise invalid(argument, value, _int_range(low, high))
    return number


def _int_range(low: int | None, high: int | None, named: bool = False) -> str:
    if named and low in (0, 1) and high is not None:
        return f"{'a positive' if low else 'a non-negative'} int <= {high}"
    if low is not None and high is not None:
        return f"an int in [{low}, {high}]"
    if low is not None:
        return {0: "a non-negative int", 1: "a positive int"}.get(low, f"an int >= {low}")
    return "an int" if high is None else f"an int <= {high}"


def optional_int(argument: str, value: object, low: int = 0, high: int | None = None) -> int | None:
    """``None``, or an int in ``[low, high]`` (not a bool; ``high`` optional); else a ConfigError naming
    ``argument``."""
    if value is None:
        return None
    try:
        return bounded_int(argument, value, low, high)
    except ConfigError:
        raise invalid(argument, value, f"None or {_int_range(low, high, named=True)}") from None


def check_shots(value: object, argument: str = "shots") -> int | None:
    """``None`` (exact, or the backend's default) or a number of shots in ``[1, SHOTS_MAX]``."""
    return optional_int(argument, value, 1, SHOTS_MAX)


def check_seed(value: object, argument: str = "seed") -> int | None:
    """``None`` (fresh randomness) or a seed in ``[0, SEED_MAX]``, which every generator hybridai seeds takes."""
    return optional_int(argument, value, 0, SEED_MAX)


def suggest(name: str, candidates: Iterable[str], n: int = 3) -> str:
    """' Did you mean: a, b?' for the closest candidates, or '' when none is close."""
    import difflib

    close = difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.5)
    return f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
