"""Checks every backend answers, whatever its domain: registration, capabilities, option errors."""

from __future__ import annotations

import copy
import io
from typing import Any

from ..backends import registry
from ..backends.base import (
    DOMAINS,
    Availability,
    Backend,
    Capabilities,
    ClassicalBackend,
    NeuromorphicBackend,
    QuantumBackend,
)
from ..errors import suggest
from .suite import ConformanceError, NotApplicable, Subject, expect_error

BOGUS_OPTION = "no_such_option_for_conformance"
BOGUS_TARGET = "no-such-target-for-conformance"


def registration(s: Subject) -> str:
    """Listed, loadable, a Backend subclass of valid domains, available, and builds under its name."""
    if s.family not in registry.families():
        raise ConformanceError(
            f"family {s.family!r} is not registered; known: {', '.join(registry.families())}."
            f"{suggest(s.family, registry.families())} A plugin registers in the entry-point group "
            f"{registry.ENTRY_POINT_GROUP!r}"
        )
    cls = registry.backend_class(s.family)  # a failed plugin raises BackendUnavailableError: a failure here
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise ConformanceError(f"{cls!r} is not a subclass of hybridai.backends.Backend")
    if not cls.domains or any(d not in DOMAINS for d in cls.domains):
        raise ConformanceError(f"{cls.__name__}.domains={cls.domains!r}; accepted: a non-empty subset of {DOMAINS}")
    needs = {
        "quantum": (QuantumBackend,),
        "classical": (ClassicalBackend,),
        "spiking": (ClassicalBackend, NeuromorphicBackend),
    }
    for domain in cls.domains:
        if not issubclass(cls, needs[domain]):
            kinds = " or ".join(k.__name__ for k in needs[domain])
            raise ConformanceError(f"{cls.__name__} runs the {domain} domain but is not a {kinds}")
    status = cls.is_available()
    if not isinstance(status, Availability):
        raise ConformanceError(f"{cls.__name__}.is_available() returned {status!r}, not a hybridai Availability")
    if not status.available:
        raise ConformanceError(f"not available here: {status.reason or '(no reason given: give one)'}")
    rows = {r.name: r for r in registry.available()}
    row = rows.get(s.family)
    if row is None or not row.available:
        raise ConformanceError(f"hybridai.backends.available() lists {s.family!r} as {row}")
    backend = s.make()
    if backend.family != s.family:
        raise ConformanceError(f"instance.family={backend.family!r}, expected {s.family!r}")
    if backend.name != s.family and not backend.name.startswith(f"{s.family}:"):
        raise ConformanceError(f"instance.name={backend.name!r} is not {s.family!r} or {s.family + ':<target>'!r}")
    again = registry.get(backend.name, **s.options)
    if again.name != backend.name:
        raise ConformanceError(f"get({backend.name!r}) gives a backend named {again.name!r}: names must round-trip")
    repr(backend)
    return f"{row.source}; domains {'/'.join(cls.domains)}; instance {backend.name!r}"


def capabilities(s: Subject) -> str:
    """``capabilities`` is a frozen Capabilities consistent with itself and with the domain."""
    caps = s.make().capabilities
    if not isinstance(caps, Capabilities):
        raise ConformanceError(f"capabilities is {type(caps).__name__}, not hybridai.backends.Capabilities")
    if not caps.devices or not all(isinstance(d, str) for d in caps.devices):
        raise ConformanceError(f"capabilities.devices={caps.devices!r}; accepted: a non-empty tuple of device names")
    for limit in ("max_qubits", "max_neurons"):
        value = getattr(caps, limit)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConformanceError(f"capabilities.{limit}={value!r}; accepted: None or a positive int")
    if "quantum" in s.cls.domains and caps.differentiable and "best" not in caps.diff_methods:
        raise ConformanceError(
            f"differentiable=True but diff_methods={caps.diff_methods!r} lacks 'best' (QuantumLayer's default)"
        )
    if caps.exact and caps.noise and "quantum" not in s.cls.domains:
        raise ConformanceError("exact=True and noise=True contradict each other for a classical or spiking backend")
    copy.deepcopy(caps)
    flags = [k for k in ("differentiable", "exact", "shots", "noise") if getattr(caps, k)]
    return f"claims {', '.join(flags) or 'nothing'}; devices {', '.join(caps.devices)}"


def option_errors(s: Subject) -> str:
    """An unknown option and an unknown target are HybridAIErrors (the option is named)."""
    got = [
        expect_error(
            lambda: s.make(**{BOGUS_OPTION: 1}).capabilities,
            f"get({s.name!r}, {BOGUS_OPTION}=1)",
            must_name=(BOGUS_OPTION,),
        ),
        expect_error(
            lambda: registry.get(f"{s.family}:{BOGUS_TARGET}", **s.options).capabilities,
            f"get({s.family + ':' + BOGUS_TARGET!r})",
        ),
    ]
    return f"unknown option -> {got[0]}; unknown target -> {got[1]}"


def seed_pair(s: Subject, what: str) -> tuple[Backend, Backend, Backend]:
    """Two instances with seed 11 and one with seed 12; a backend claiming shots or noise must take ``seed=``."""
    try:
        return s.make(seed=11), s.make(seed=11), s.make(seed=12)
    except Exception as exc:
        raise ConformanceError(
            f"claims {what} but get({s.name!r}, seed=11) failed: {type(exc).__name__}: {exc}; a backend with "
            "randomness takes seed="
        ) from None


def saved_and_loaded(model: Any) -> Any:
    """``torch.save`` of the whole model into memory, then ``torch.load`` (weights_only=False)."""
    import torch

    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def state_dict_round_trip(model: Any, fresh: Any) -> None:
    """``model.state_dict()`` saved, loaded with weights_only=True, into ``fresh`` (strict)."""
    import torch

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer, weights_only=True))


def deterministic(values: list[Any]) -> bool:
    import torch

    first = torch.as_tensor(values[0])
    return all(torch.equal(first, torch.as_tensor(v)) for v in values[1:])


def need(flag: bool, reason: str) -> None:
    if not flag:
        raise NotApplicable(reason)
