"""Checks every backend answers, whatever its domain: registration, capabilities, option errors."""

from __future__ import annotations

import copy
import io
from typing import Any

from hybridai.core import registry
from hybridai.core.capabilities import ChipCapabilities, QuantumCapabilities
from hybridai.core.contracts import (
    CAPABILITIES,
    CONTRACTS,
    DOMAINS,
    Availability,
    Backend,
    ChipCompiler,
    Placement,
    QuantumExecutor,
    contract_of,
)
from hybridai.core.errors import suggest
from hybridai.testing.suite import ConformanceError, NotApplicable, Subject, expect_error

BOGUS_OPTION = "no_such_option_for_conformance"
BOGUS_TARGET = "no-such-target-for-conformance"

# What each contract runs and describes itself with.
CONTRACT_DOMAINS = {QuantumExecutor: ("quantum",), Placement: ("classical", "spiking"), ChipCompiler: ("spiking",)}
CONTRACT_CAPABILITIES = CAPABILITIES


def registration(s: Subject) -> str:
    """Listed, loadable, implements one contract with domains it allows, available, builds under its name."""
    if s.family not in registry.families():
        raise ConformanceError(
            f"family {s.family!r} is not registered; known: {', '.join(registry.families())}."
            f"{suggest(s.family, registry.families())} A plugin registers in the entry-point group "
            f"{registry.ENTRY_POINT_GROUP!r}"
        )
    cls = registry.backend_class(s.family)  # a failed plugin raises BackendUnavailableError: a failure here
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise ConformanceError(f"{cls!r} is not a subclass of hybridai.backends.Backend")
    contract = contract_of(cls)
    if contract is None:
        names = ", ".join(c.__name__ for c in CONTRACTS)
        raise ConformanceError(f"{cls.__name__} implements none of the contracts {names}")
    allowed = CONTRACT_DOMAINS[contract]
    if not cls.domains or any(d not in DOMAINS for d in cls.domains) or any(d not in allowed for d in cls.domains):
        raise ConformanceError(
            f"{cls.__name__}.domains={cls.domains!r}; accepted for a {contract.__name__}: "
            f"a non-empty subset of {allowed}"
        )
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
    return f"{row.source}; {row.contract or contract.__name__} for {'/'.join(cls.domains)}; instance {backend.name!r}"


def _positive_or_none(caps: Any, name: str) -> None:
    value = getattr(caps, name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConformanceError(f"capabilities.{name}={value!r}; accepted: None or a positive int")


def _names(caps: Any, name: str, empty: bool = True) -> tuple[str, ...]:
    value = getattr(caps, name)
    if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value) or not (empty or value):
        what = "a tuple of names" if empty else "a non-empty tuple of names"
        raise ConformanceError(f"capabilities.{name}={value!r}; accepted: {what}")
    return value


def capabilities(s: Subject) -> str:
    """``capabilities`` is the contract's typed record, consistent with itself, the same on every read."""
    backend = s.unchecked()
    caps = backend.capabilities
    if s.contract is None:
        raise ConformanceError(f"{s.cls.__name__} implements none of the contracts, so it has no capabilities record")
    record = CONTRACT_CAPABILITIES[s.contract]
    if not isinstance(caps, record):
        raise ConformanceError(
            f"capabilities is {type(caps).__name__}, not hybridai.backends.{record.__name__} (the record of a "
            f"{s.contract.__name__})"
        )
    _names(caps, "devices", empty=False)
    if not isinstance(caps.extra, dict):
        raise ConformanceError(f"capabilities.extra={caps.extra!r}; accepted: a dict (informational only)")
    if isinstance(caps, QuantumCapabilities):
        _positive_or_none(caps, "max_qubits")
        methods = _names(caps, "diff_methods", empty=False)
        _names(caps, "mitigation_engines")
        if caps.differentiable and "best" not in methods:
            raise ConformanceError(
                f"differentiable=True but diff_methods={methods!r} lacks 'best' (QuantumLayer's default)"
            )
        if caps.dtype not in ("complex128", "complex64"):
            raise ConformanceError(f"capabilities.dtype={caps.dtype!r}; accepted: 'complex128' or 'complex64'")
        if caps.exact and caps.noise:
            raise ConformanceError("exact=True and noise=True contradict each other (exact means noiseless)")
        flags = [k for k in ("differentiable", "exact", "shots", "noise") if getattr(caps, k)]
    elif isinstance(caps, ChipCapabilities):
        _positive_or_none(caps, "max_neurons")
        _names(caps, "hardware")
        flags = ["bit_exact"] if caps.bit_exact else []
        flags += [f"hardware {', '.join(caps.hardware)}"] if caps.hardware else ["emulated"]
    else:
        flags = [k for k in ("differentiable", "exact") if getattr(caps, k)]
    if backend.capabilities != caps:
        raise ConformanceError("capabilities differ between two reads of the same instance")
    copy.deepcopy(caps)
    return f"{record.__name__}: {', '.join(flags) or 'claims nothing'}; devices {', '.join(caps.devices)}"


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
