"""The backend registry: built-in families register with a decorator; third-party
families arrive through the ``hybridai.backends`` entry-point group and are imported
only when first needed. A plugin that fails to load is reported, never fatal.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from ..errors import BackendNotFoundError, BackendUnavailableError, ConfigError, invalid, suggest
from .base import DOMAINS, Availability, Backend, Capabilities

ENTRY_POINT_GROUP = "hybridai.backends"

_builtin: dict[str, type[Backend]] = {}
_plugins: dict[str, type[Backend] | BaseException] = {}  # loaded entry points (or their error)
_lock = threading.Lock()


@dataclass(frozen=True)
class BackendInfo:
    """One row of ``available()``: a family, where it came from and whether it runs here."""

    name: str
    domains: tuple[str, ...]
    available: bool
    reason: str
    capabilities: Capabilities | None
    source: str  # "built-in" or "plugin <distribution> (<module:attr>)"


def register(family: str):
    """Class decorator registering a built-in Backend subclass under ``family``."""
    if not family or ":" in family or not family.replace("_", "").replace("-", "").isalnum():
        raise invalid("family", family, "a non-empty name of letters, digits, '-' and '_'")

    def decorate(cls: type[Backend]) -> type[Backend]:
        if not (isinstance(cls, type) and issubclass(cls, Backend)):
            raise invalid("cls", cls, "a subclass of hybridai.backends.Backend")
        bad = [d for d in cls.domains if d not in DOMAINS]
        if not cls.domains or bad:
            raise invalid(f"{cls.__name__}.domains", cls.domains, f"a non-empty subset of {DOMAINS}")
        cls.family = family
        _builtin[family] = cls
        return cls

    return decorate


def _entry_points() -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def _source(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"plugin {dist.name if dist else '?'} ({ep.value})"


def _load_plugin(name: str, ep: metadata.EntryPoint) -> type[Backend] | BaseException:
    with _lock:
        if name not in _plugins:
            try:
                cls = ep.load()
                if not (isinstance(cls, type) and issubclass(cls, Backend)):
                    raise TypeError(f"{ep.value} is {cls!r}, not a subclass of hybridai.backends.Backend")
                if not cls.domains or any(d not in DOMAINS for d in cls.domains):
                    raise TypeError(f"{ep.value}.domains={cls.domains!r}; accepted: a subset of {DOMAINS}")
                cls.family = name
                _plugins[name] = cls
            except Exception as exc:  # a broken plugin must break nothing else
                _plugins[name] = exc
        return _plugins[name]


def reload() -> None:
    """Forget loaded plugins so that entry points are discovered afresh (tests, notebooks)."""
    with _lock:
        _plugins.clear()


def families() -> list[str]:
    """Names of every known family, built-in and plugin, without importing plugins."""
    return sorted(set(_builtin) | set(_entry_points()))


def parse_name(name: str) -> tuple[str, str | None]:
    """Split ``"family:target"`` into ``(family, target)``; the target may itself hold colons."""
    if not isinstance(name, str) or not name.strip():
        raise invalid("backend", name, "a string 'family' or 'family:target', e.g. 'pennylane:default.qubit'")
    family, _, target = name.strip().partition(":")
    return family, (target or None)


def backend_class(family: str) -> type[Backend]:
    """The Backend class of ``family``; loads the plugin if it is one."""
    if family in _builtin:
        return _builtin[family]
    eps = _entry_points()
    if family not in eps:
        raise BackendNotFoundError(
            f"backend family {family!r} is not registered; known families: "
            f"{', '.join(families())}.{suggest(family, families())}"
        )
    loaded = _load_plugin(family, eps[family])
    if isinstance(loaded, BaseException):
        raise BackendUnavailableError(
            f"backend family {family!r} ({_source(eps[family])}) failed to load: {type(loaded).__name__}: {loaded}"
        ) from loaded
    return loaded


def get(name: str | Backend, domain: str | None = None, **options: Any) -> Backend:
    """A configured backend for ``"family[:target]"`` with ``options``.

    ``domain`` (optional) checks that the backend can execute that domain.
    Raises BackendNotFoundError for unknown names, BackendUnavailableError when the
    family cannot run here, ConfigError for a backend of the wrong domain.
    """
    if isinstance(name, Backend):
        backend = name
    else:
        family, target = parse_name(name)
        cls = backend_class(family)
        status = cls.is_available()
        if not status.available:
            raise BackendUnavailableError(f"backend {name!r} is not available here: {status.reason}")
        try:
            backend = cls(target, **options)
        except TypeError as exc:
            if "unexpected keyword argument" not in str(exc):
                raise
            raise ConfigError(f"backend={name!r} does not accept the option(s) {sorted(options)}: {exc}") from None
    if domain is not None and domain not in backend.domains:
        raise ConfigError(
            f"backend={backend.name!r} runs the {'/'.join(backend.domains)} domain, not {domain}; "
            f"accepted: a {domain} backend such as "
            f"{', '.join(repr(f) for f in _families_of(domain)) or '(none registered)'}"
        )
    return backend


def _families_of(domain: str) -> list[str]:
    return sorted(f for f, cls in _builtin.items() if domain in cls.domains)


def available() -> list[BackendInfo]:
    """One record per family (built-in and plugin) with availability and reason."""
    rows: list[BackendInfo] = []
    for family, cls in sorted(_builtin.items()):
        rows.append(_info(family, cls, "built-in"))
    for family, ep in sorted(_entry_points().items()):
        if family in _builtin:
            continue
        loaded = _load_plugin(family, ep)
        if isinstance(loaded, BaseException):
            reason = f"failed to load: {type(loaded).__name__}: {loaded}"
            rows.append(BackendInfo(family, (), False, reason, None, _source(ep)))
        else:
            rows.append(_info(family, loaded, _source(ep)))
    return rows


def _info(family: str, cls: type[Backend], source: str) -> BackendInfo:
    try:
        status = cls.is_available()
    except Exception as exc:
        status = Availability(False, f"is_available() raised {type(exc).__name__}: {exc}")
    caps = None
    if status.available:
        try:
            caps = cls().capabilities
        except Exception as exc:  # a family that needs a target has no default capabilities
            caps = None
            if not isinstance(exc, ConfigError | BackendNotFoundError | BackendUnavailableError):
                status = Availability(False, f"default instance failed: {type(exc).__name__}: {exc}")
    return BackendInfo(family, tuple(cls.domains), status.available, status.reason, caps, source)
