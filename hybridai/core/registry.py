"""The backend registry. Every family, built-in or plugin, arrives through the ``hybridai.backends``
entry-point group and is imported only when first needed, so the registry imports no
implementation. Built-ins are the entry points of the ``hybridai`` distribution; a plugin never
replaces one. A plugin that fails to load, or that implements no contract, is listed as unavailable
with its reason and never stops the process. ``register`` adds a family at run time (notebooks,
tests).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from hybridai.core.contracts import (
    CONTRACTS,
    DOMAINS,
    Availability,
    Backend,
    ChipCompiler,
    Placement,
    QuantumExecutor,
    contract_of,
)
from hybridai.core.errors import (
    BackendNotFoundError,
    BackendUnavailableError,
    ConfigError,
    HybridAIError,
    UnsupportedOperationError,
    invalid,
    suggest,
)

ENTRY_POINT_GROUP = "hybridai.backends"
DISTRIBUTION = "hybridai"
CONTRACT_NAMES = {QuantumExecutor: "quantum executor", Placement: "placement", ChipCompiler: "chip compiler"}

_registered: dict[str, type[Backend]] = {}  # by register(), at run time
_loaded: dict[str, type[Backend] | BaseException] = {}  # loaded entry points (or why they failed)
_lock = threading.RLock()


@dataclass(frozen=True)
class BackendInfo:
    """One row of ``available()``: a family, where it came from and whether it runs here."""

    name: str
    domains: tuple[str, ...]
    available: bool
    reason: str
    capabilities: Any
    source: str  # "built-in", "registered" or "plugin <distribution> (<module:attr>)"
    contract: str = ""  # "quantum executor", "placement" or "chip compiler"


def _check_class(cls: Any, where: str) -> type[Backend]:
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"{where} is {cls!r}, not a subclass of a hybridai.backends contract")
    if contract_of(cls) is None:
        names = ", ".join(c.__name__ for c in CONTRACTS)
        raise TypeError(f"{where} implements none of the contracts {names}")
    if not cls.domains or any(d not in DOMAINS for d in cls.domains):
        raise TypeError(f"{where}.domains={cls.domains!r}; accepted: a non-empty subset of {DOMAINS}")
    return cls


def register(family: str):
    """Class decorator registering a backend class under ``family`` at run time."""
    if not isinstance(family, str) or not family or not family.replace("_", "").replace("-", "").isalnum():
        raise invalid("family", family, "a non-empty name of letters, digits, '-' and '_'")

    def decorate(cls: type[Backend]) -> type[Backend]:
        try:
            _check_class(cls, getattr(cls, "__name__", repr(cls)))
        except TypeError as exc:
            raise invalid(
                "cls", cls, f"a class implementing QuantumExecutor, Placement or ChipCompiler ({exc})"
            ) from None
        cls.family = family
        with _lock:
            _registered[family] = cls
        return cls

    return decorate


def _entry_points() -> dict[str, tuple[metadata.EntryPoint, bool]]:
    """name -> (entry point, built-in?); a built-in wins over a plugin of the same name."""
    found: dict[str, tuple[metadata.EntryPoint, bool]] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        builtin = getattr(getattr(ep, "dist", None), "name", None) == DISTRIBUTION
        if ep.name not in found or (builtin and not found[ep.name][1]):
            found[ep.name] = (ep, builtin)
    return found


def _source(ep: metadata.EntryPoint, builtin: bool) -> str:
    if builtin:
        return "built-in"
    dist = getattr(ep, "dist", None)
    return f"plugin {dist.name if dist else '?'} ({ep.value})"


def _load(name: str, ep: metadata.EntryPoint) -> type[Backend] | BaseException:
    with _lock:
        if name not in _loaded:
            try:
                cls = _check_class(ep.load(), ep.value)
                cls.family = name
                _loaded[name] = cls
            except Exception as exc:  # a broken plugin must break nothing else
                _loaded[name] = exc
        return _loaded[name]


def reload() -> None:
    """Forget loaded entry points so that they are discovered afresh (tests, notebooks)."""
    with _lock:
        _loaded.clear()


def families() -> list[str]:
    """Names of every known family, without importing any."""
    return sorted(set(_registered) | set(_entry_points()))


def parse_name(name: str) -> tuple[str, str | None]:
    """Split ``"family:target"`` into ``(family, target)``; the target may itself hold colons."""
    if not isinstance(name, str) or not name.strip():
        raise invalid("backend", name, "a string 'family' or 'family:target', e.g. 'pennylane:default.qubit'")
    family, _, target = name.strip().partition(":")
    return family, (target or None)


def backend_class(family: str) -> type[Backend]:
    """The backend class of ``family``, loading its entry point on first use."""
    with _lock:
        if family in _registered:
            return _registered[family]
    eps = _entry_points()
    if family not in eps:
        raise BackendNotFoundError(
            f"backend family {family!r} is not registered; known families: "
            f"{', '.join(families())}.{suggest(family, families())}"
        )
    ep, builtin = eps[family]
    loaded = _load(family, ep)
    if isinstance(loaded, BaseException):
        raise BackendUnavailableError(
            f"backend family {family!r} ({_source(ep, builtin)}) failed to load: {type(loaded).__name__}: {loaded}"
        ) from loaded
    return loaded


def _build(name: str, options: dict[str, Any]) -> Backend:
    family, target = parse_name(name)
    cls = backend_class(family)
    status = _availability(cls)
    if not status.available:
        raise BackendUnavailableError(f"backend {name!r} is not available here: {status.reason}")
    try:
        return cls(target, **options)
    except TypeError as exc:
        if "unexpected keyword argument" not in str(exc):
            raise
        raise ConfigError(f"backend={name!r} does not accept the option(s) {sorted(options)}: {exc}") from None


def get(
    name: str | Backend, contract: type[Backend] | None = None, *, domain: str | None = None, **options: Any
) -> Backend:
    """A configured backend for ``"family[:target]"`` with ``options`` (or ``name`` itself if it is
    a backend object).

    ``contract`` (``QuantumExecutor``, ``Placement`` or ``ChipCompiler``) and ``domain`` check what
    the backend is for. Raises BackendNotFoundError for unknown names, BackendUnavailableError when
    the family cannot run here, ConfigError for a backend of the wrong contract or domain.
    """
    backend = name if isinstance(name, Backend) else _build(name, options)
    if contract is not None and not isinstance(backend, contract):
        raise _wrong_contract(backend, contract, domain)
    if domain is not None and domain not in backend.domains:
        raise ConfigError(
            f"backend={backend.name!r} runs the {'/'.join(backend.domains)} domain, not {domain}; "
            f"accepted: {_examples(contract or Backend, domain)}"
        )
    return backend


def _wrong_contract(backend: Backend, contract: type[Backend], domain: str | None) -> HybridAIError:
    got = CONTRACT_NAMES.get(contract_of(type(backend)), type(backend).__name__)
    wanted = CONTRACT_NAMES.get(contract, contract.__name__) + (f" for the {domain} domain" if domain else "")
    message = f"backend={backend.name!r} is a {got}, not a {wanted}; accepted: {_examples(contract, domain)}"
    if isinstance(backend, ChipCompiler):
        return UnsupportedOperationError(
            f"{message}; a chip runs a whole trained network, not one layer: deploy the model with "
            f"hybridai.deploy(model, backend={backend.name!r})"
        )
    return ConfigError(message)


def _examples(contract: type[Backend], domain: str | None) -> str:
    """'a <contract> such as 'x', 'y'' from the built-in families (imports their classes)."""
    names = []
    for family, (ep, builtin) in sorted(_entry_points().items()):
        cls = _load(family, ep) if builtin else None
        if isinstance(cls, type) and issubclass(cls, contract) and (domain is None or domain in cls.domains):
            names.append(repr(family))
    what = CONTRACT_NAMES.get(contract, "backend")
    return f"a {what} such as {', '.join(names)}" if names else f"a {what}"


def available() -> list[BackendInfo]:
    """One record per family (built-in, registered and plugin) with availability and reason."""
    rows: list[BackendInfo] = []
    with _lock:
        registered = dict(_registered)
    for family, cls in sorted(registered.items()):
        rows.append(_info(family, cls, "registered"))
    for family, (ep, builtin) in sorted(_entry_points().items()):
        if family in registered:
            continue
        loaded = _load(family, ep)
        if isinstance(loaded, BaseException):
            reason = f"failed to load: {type(loaded).__name__}: {loaded}"
            rows.append(BackendInfo(family, (), False, reason, None, _source(ep, builtin)))
        else:
            rows.append(_info(family, loaded, _source(ep, builtin)))
    return rows


def _info(family: str, cls: type[Backend], source: str) -> BackendInfo:
    status = _availability(cls)
    caps = None
    if status.available:
        try:
            caps = cls().capabilities
        except Exception as exc:  # a family that needs a target has no default capabilities
            if not isinstance(exc, ConfigError | BackendNotFoundError | BackendUnavailableError):
                status = Availability(False, f"default instance failed: {type(exc).__name__}: {exc}")
    contract = CONTRACT_NAMES.get(contract_of(cls), "")
    return BackendInfo(family, tuple(cls.domains), status.available, status.reason, caps, source, contract)


def _availability(cls: type[Backend]) -> Availability:
    """``cls.is_available()``, or why it cannot be asked (it raised, or answered something else)."""
    try:
        status = cls.is_available()
    except Exception as exc:
        return Availability(False, f"is_available() raised {type(exc).__name__}: {exc}")
    if not isinstance(status, Availability):
        return Availability(False, f"is_available() returned {status!r}, not hybridai.backends.Availability")
    return status
