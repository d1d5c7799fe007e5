"""Backend conformance suite: does a backend family keep its hybridai contract?

A plugin author runs it against a configured backend (``"family"`` or ``"family:target"``
plus options), from pytest::

    import pytest
    from hybridai.testing import conformance_checks

    @pytest.mark.parametrize("check", conformance_checks("photonic:ideal"), ids=str)
    def test_conformance(check):
        check()

or from Python (``run_conformance(...)`` returns a ``Report``; ``print(report)`` is a table),
or from the shell: ``hybridai test-backend photonic:ideal``. Checks: registration (one of the
three contracts), typed capabilities, option errors, then the checks of the backend's contract
(``hybridai.core.contracts.contract_of``): a ``QuantumExecutor`` gets ``quantum`` (``execute(tapes,
ExecutionConfig(...))`` returning an ``Execution``), a ``Placement`` gets ``placement`` (per domain),
a ``ChipCompiler`` gets ``deployment`` (compiling and running a probe network). They cover capability
honesty (exact values against a reference, gradients against a reference or finite differences /
the shift rule, randomness reproducible per seed), errors on bad input, serialization
(``torch.save``/``torch.load``, state_dict), thread safety of independent instances and of ONE
instance shared by several threads (backends hold no per-call state). See ``docs/plugins.md``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

from hybridai.core.errors import invalid
from hybridai.testing.suite import (
    FAIL,
    PASS,
    SKIP,
    Check,
    CheckResult,
    ConformanceError,
    NotApplicable,
    Report,
    Subject,
)

__all__ = [
    "FAIL",
    "PASS",
    "SKIP",
    "Check",
    "CheckResult",
    "ConformanceError",
    "NotApplicable",
    "Report",
    "assert_conforms",
    "conformance_checks",
    "run_conformance",
]


def conformance_checks(
    backend: str, options: Mapping[str, Any] | None = None, *, atol: float | None = None
) -> list[Check]:
    """The checks for one configured backend, in order (registration first).

    ``backend`` is ``"family"`` or ``"family:target"``; ``options`` are passed to the backend
    as ``hybridai.backends.get(backend, **options)``; ``atol`` overrides the tolerance of the
    exact-value and gradient checks (default 1e-10 in float64). When the family cannot be
    loaded, only the registration check is returned (and it fails with the reason).
    """
    from hybridai.core import registry
    from hybridai.core.contracts import ChipCompiler, Placement, QuantumExecutor, contract_of
    from hybridai.testing import common, deployment, placement, quantum

    atol = check_atol(atol)
    if options is not None and not isinstance(options, Mapping):
        raise invalid("options", options, "None or a mapping of backend options, e.g. {'shots': 100}")
    subject = Subject(backend, dict(options or {}))
    if atol is not None:
        subject.cache["atol"] = atol
    checks = [Check("registration", subject, common.registration)]
    try:
        cls = registry.backend_class(subject.family)
    except Exception:
        return checks
    contract = contract_of(cls)
    if contract is None:  # registration fails with the reason
        return checks
    checks.append(Check("capabilities", subject, common.capabilities))
    checks.append(Check("option errors", subject, common.option_errors))
    tables = {
        QuantumExecutor: lambda domain: quantum.CHECKS,
        Placement: placement.checks,
        ChipCompiler: lambda domain: deployment.CHECKS,
    }
    for domain in [d for d in cls.domains if d in common.CONTRACT_DOMAINS[contract]]:
        table = tables[contract](domain)
        checks += [Check(f"{domain}: {name}", subject, fn, (fn.__doc__ or "").strip()) for name, fn in table]
    return checks


def run_conformance(
    backends: str | Iterable[str], options: Mapping[str, Any] | None = None, *, atol: float | None = None,
    progress: Any = None,
) -> Report:  # fmt: skip
    """Run every check on each backend name; ``progress(result)`` is called after each check."""
    atol = check_atol(atol)
    try:
        names = [backends] if isinstance(backends, str) else list(backends)
    except TypeError:
        raise invalid("backends", backends, "a backend name or a non-empty list of names") from None
    if not names:
        raise invalid("backends", backends, "a backend name or a non-empty list of names")
    results: list[CheckResult] = []
    for name in names:
        for check in conformance_checks(name, options, atol=atol):
            result = check.run()
            results.append(result)
            if progress is not None:
                progress(result)
    return Report(results)


def check_atol(atol: Any) -> float | None:
    """``None`` (each check's default tolerance) or a finite number >= 0, as a float."""
    if atol is None:
        return None
    if isinstance(atol, bool) or not isinstance(atol, numbers.Real) or not math.isfinite(atol) or atol < 0:
        raise invalid("atol", atol, "None (each check's default, 1e-10 in float64) or a finite number >= 0")
    return float(atol)


def assert_conforms(backend: str, options: Mapping[str, Any] | None = None, *, atol: float | None = None) -> Report:
    """Run the suite; raise ConformanceError with the whole table when a check fails."""
    report = run_conformance(backend, options, atol=atol)
    if not report.ok:
        raise ConformanceError(f"{backend} fails {len(report.failures)} conformance check(s):\n{report.table(0)}")
    return report
