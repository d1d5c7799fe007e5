"""The conformance machinery: checks, results, reports and the subject under test.

A *check* is one named question about one configured backend (``"family"`` or
``"family:target"`` plus options). Running it gives a ``CheckResult``: ``pass`` (with
what was verified), ``fail`` (with what was expected and what came back) or ``skip``
(the backend does not claim the capability the check is about).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from hybridai.core import registry
from hybridai.core.contracts import Backend, contract_of
from hybridai.core.errors import HybridAIError
from hybridai.core.redaction import redact, remember_options
from hybridai.core.text_table import format_table

PASS, FAIL, SKIP = "pass", "fail", "skip"


class ConformanceError(AssertionError):
    """A backend does not keep the contract; the message says which check and why."""


class NotApplicable(Exception):
    """Raised by a check whose question does not apply to this backend (reported as ``skip``)."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: ``status`` is ``"pass"``, ``"fail"`` or ``"skip"``."""

    backend: str
    check: str
    status: str
    detail: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status != FAIL


class Subject:
    """The backend under test: a registry name and options; builds fresh instances on demand.

    Checks share what is expensive to compute (reference values) through ``cache``.
    """

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        self.name = name
        self.options = dict(options)
        remember_options(self.options)  # secret values never appear in a check's detail
        self.family, self.target = registry.parse_name(name)
        self.cache: dict[str, Any] = {}

    @cached_property
    def cls(self) -> type[Backend]:
        return registry.backend_class(self.family)

    def make(self, **extra: Any) -> Backend:
        """A fresh configured instance (``extra`` options override the subject's)."""
        return registry.get(self.name, **{**self.options, **extra})

    def unchecked(self) -> Backend:
        """An instance built by the family's class itself, without the registry's checks of what it
        answers (``get`` refuses capabilities that are not the typed record): for checks that diagnose
        exactly what is wrong."""
        return self.cls(self.target, **self.options)

    @cached_property
    def contract(self) -> type[Backend] | None:
        """``QuantumExecutor``, ``Placement`` or ``ChipCompiler`` (``None``: no contract)."""
        return contract_of(self.cls)

    @cached_property
    def capabilities(self) -> Any:
        """The typed capabilities of a default-configured instance (the contract's record)."""
        return self.make().capabilities

    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


@dataclass
class Check:
    """One conformance check of one backend; call it (pytest) or ``run()`` it (a result).

    In pytest: ``@pytest.mark.parametrize("check", conformance_checks("myqpu"), ids=str)``
    and ``def test_conformance(check): check()`` -- a failure raises ``ConformanceError``
    with the reason, a check that does not apply is skipped.
    """

    name: str
    subject: Subject
    fn: Callable[[Subject], str] = field(repr=False)
    description: str = ""

    @property
    def backend(self) -> str:
        return self.subject.name

    @property
    def id(self) -> str:
        return f"{self.backend}::{self.name}"

    def __str__(self) -> str:
        return self.id

    def run(self) -> CheckResult:
        """Run the check; never raises (an unexpected exception, ``sys.exit`` included, is a failure with
        its type). Details never show secrets (``hybridai.core.redaction``)."""
        start = time.perf_counter()
        try:
            detail = self.fn(self.subject) or ""
            status = PASS
        except KeyboardInterrupt:
            raise
        except NotApplicable as exc:
            status, detail = SKIP, str(exc)
        except ConformanceError as exc:
            status, detail = FAIL, str(exc)
        except HybridAIError as exc:
            status, detail = FAIL, f"unexpected {type(exc).__name__}: {exc}"
        except BaseException as exc:  # a raw exception (or exit) from the backend is itself a conformance failure
            status, detail = FAIL, f"raised {type(exc).__name__}: {exc}"
        return CheckResult(self.backend, self.name, status, redact(detail), time.perf_counter() - start)

    def __call__(self) -> CheckResult:
        result = self.run()
        if result.status == FAIL:
            raise ConformanceError(f"{self.id}: {result.detail}")
        if result.status == SKIP and "pytest" in sys.modules:
            import pytest

            pytest.skip(result.detail)
        return result


@dataclass
class Report:
    """The results of a conformance run, printable as a pass/fail table."""

    results: list[CheckResult]

    @property
    def ok(self) -> bool:
        """True when no check failed (skips are fine: the backend did not claim the capability)."""
        return all(r.ok for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == FAIL]

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in (PASS, FAIL, SKIP)}

    def table(self, width: int = 110) -> str:
        """Backend, check, result, seconds and the detail (shortened to ``width`` characters; 0: whole)."""
        rows = []
        for r in self.results:
            detail = " ".join(r.detail.split())
            if width and len(detail) > width:
                detail = detail[: width - 3] + "..."
            rows.append([r.backend, r.check, r.status.upper(), f"{r.seconds:.2f}", detail])
        c = self.counts()
        footer = ["total", f"{len(self.results)} checks", "FAIL" if c[FAIL] else "PASS", "",
                  f"{c[PASS]} pass, {c[FAIL]} fail, {c[SKIP]} skip"]  # fmt: skip
        return format_table(["backend", "check", "result", "seconds", "detail"], rows, footer)

    def __str__(self) -> str:
        return self.table()


def seeded(seed: int, make: Callable[[], Any]) -> Any:
    """``make()`` with torch's global generator seeded, leaving the caller's random state untouched."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def close(got: Any, expected: Any, atol: float, what: str, rtol: float = 0.0) -> float:
    """Max absolute difference of two tensors, or ConformanceError naming the worst entry."""
    import torch

    got = torch.as_tensor(got).detach().to(torch.float64).cpu()
    expected = torch.as_tensor(expected).detach().to(torch.float64).cpu()
    if got.shape != expected.shape:
        raise ConformanceError(f"{what}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}")
    if not torch.isfinite(got).all():
        bad = got.flatten()[~torch.isfinite(got.flatten())]
        raise ConformanceError(f"{what}: non-finite values {bad[:3].tolist()}")
    diff = (got - expected).abs()
    bound = atol + rtol * expected.abs()
    if diff.numel() and bool((diff > bound).any()):
        worst = int(torch.argmax(diff - bound))
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), diff.shape))
        raise ConformanceError(
            f"{what} differ by up to {float(diff.max()):.3g} (tolerance atol={atol:g}"
            f"{f', rtol={rtol:g}' if rtol else ''}); worst at index {list(index)}: "
            f"got {float(got[index]):.10g}, expected {float(expected[index]):.10g}"
        )
    return float(diff.max()) if diff.numel() else 0.0


def same_as_serial(threaded: list[list[Any]], serial: list[list[Any]]) -> None:
    """Each thread's results equal the same work run serially (to 1e-12), else a ConformanceError naming it."""
    for t, (got_all, expected_all) in enumerate(zip(threaded, serial, strict=True)):
        for i, (got, expected) in enumerate(zip(got_all, expected_all, strict=True)):
            close(got, expected, 1e-12, f"thread {t}, result {i} vs the same work run serially")


def expect_error(action: Callable[[], Any], what: str, must_name: tuple[str, ...] = ()) -> str:
    """Run ``action``; it must raise a HybridAIError whose message names each of ``must_name``."""
    try:
        action()
    except HybridAIError as exc:
        message = str(exc)
        missing = [m for m in must_name if m not in message]
        if missing:
            raise ConformanceError(
                f"{what}: {type(exc).__name__} does not name {missing}: {message!r}; an error should name "
                "the argument, the value received and what is accepted"
            ) from None
        return f"{type(exc).__name__}"
    except Exception as exc:
        raise ConformanceError(
            f"{what}: raised {type(exc).__name__} ({exc}), not a hybridai.HybridAIError subclass"
        ) from None
    raise ConformanceError(f"{what}: no error was raised")


def in_threads(*jobs: Callable[[], Any]) -> list[Any]:
    """Run each job in its own thread, started together; their results, or the first error re-raised."""
    import threading

    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def work(i: int, job: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=60)
            results[i] = job()
        except BaseException as exc:  # collected and re-raised in the caller
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i, j), daemon=True) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    if any(t.is_alive() for t in threads):
        raise ConformanceError("a thread did not finish within 300 s (deadlock?)")
    if errors:
        raise errors[0]
    return results
