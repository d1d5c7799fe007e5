"""Every error a user can cause: one base class, a few precise subclasses.

Messages name the argument, the value received and what would be accepted, so that
the fix is obvious from the message alone.
"""

from __future__ import annotations

from collections.abc import Iterable


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
        what = f" (needed for {purpose})" if purpose else ""
        super().__init__(
            f"the optional package {package!r} is not installed{what}; install it with: pip install 'hybridai[{extra}]'"
        )


def invalid(argument: str, value: object, accepted: str, cls: type[HybridAIError] = ConfigError):
    """Build an error that names the argument, the value received and what is accepted."""
    return cls(f"{argument}={value!r} is not valid; accepted: {accepted}")


def positive_int(argument: str, value: object) -> int:
    """``value`` if it is a positive int (not a bool), else a ConfigError naming ``argument``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid(argument, value, "a positive int")
    return value


def suggest(name: str, candidates: Iterable[str], n: int = 3) -> str:
    """' Did you mean: a, b?' for the closest candidates, or '' when none is close."""
    import difflib

    close = difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.5)
    return f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
