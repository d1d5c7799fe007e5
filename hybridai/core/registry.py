"""The backend registry. Every family, built-in or plugin, arrives through the ``hybridai.backends``
entry-point group and is imported only when first needed, so the registry imports no
implementation. Built-ins are the entry points of the ``hybridai`` distribution; a plugin never
replaces one: an entry point named like a built-in is listed as unavailable ("shadows the built-in"),
and ``register`` refuses built-in names. A plugin that fails to load (even by ``sys.exit``), that
implements no contract, or whose ``is_available``, constructor or ``capabilities`` raises or answers
something else, is listed as unavailable with its reason and never stops the process; ``get`` raises
``BackendUnavailableError`` naming it. ``register`` adds a family at run time (notebooks, tests).

An unknown family that another framework's habits explain gets a suggestion: a backend class may list
``aliases`` (what users of other frameworks call it: ``aer`` is ``AerSimulator`` in Qiskit) and a classmethod
``known_targets()`` (the targets it knows by name: PennyLane's device names), so that ``"default.qubit"``
suggests ``'pennylane:default.qubit'`` and ``"aer_simulator"`` suggests ``'aer'``.

Option values under secret-looking names (``token=``, ``api_key=`` ...) are remembered and never
printed: errors from the registry name options, never their values, and an error a backend raises
while being configured has every known secret replaced by ``'***'`` (``hybridai.core.redaction``).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, TypeVar

from hybridai.core.contracts import (
    CONTRACTS,
    DOMAINS,
    Availability,
    Backend,
    ChipCompiler,
    Placement,
    QuantumExecutor,
    capabilities_record,
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
from hybridai.core.redaction import redact, redact_logs, remember_options, scrub_exception

ENTRY_POINT_GROUP = "hybridai.backends"
DISTRIBUTION = "hybridai"
CONTRACT_NAMES = {QuantumExecutor: "quantum executor", Placement: "placement", ChipCompiler: "chip compiler"}

BackendClass = TypeVar("BackendClass", bound=type[Backend])

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
    targets: tuple[str, ...] = ()  # the targets it knows by name (``known_targets()``): fake devices, devices


def _check_class(cls: Any, where: str) -> type[Backend]:
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"{where} is {cls!r}, not a subclass of a hybridai.backends contract")
    if contract_of(cls) is None:
        names = ", ".join(c.__name__ for c in CONTRACTS)
        raise TypeError(f"{where} implements none of the contracts {names}")
    if not cls.domains or any(d not in DOMAINS for d in cls.domains):
        raise TypeError(f"{where}.domains={cls.domains!r}; accepted: a non-empty subset of {DOMAINS}")
    return cls


def register(family: str) -> Callable[[BackendClass], BackendClass]:
    """Class decorator registering a backend class under ``family`` at run time.

    Registering the same name again replaces the earlier registration (re-run notebook cells);
    a built-in family's name, or a built-in class under another name, is refused.
    """
    if not isinstance(family, str) or not family or not family.replace("_", "").replace("-", "").isalnum():
        raise invalid("family", family, "a non-empty name of letters, digits, '-' and '_'")
    builtins = _builtin_values()
    if family in builtins:
        raise invalid(
            "family", family, f"a name that is not a built-in family ({', '.join(sorted(builtins))}): a "
            f"registered class never replaces a built-in; choose another name, e.g. {family + '_custom'!r}",
        )  # fmt: skip

    def decorate(cls: BackendClass) -> BackendClass:
        try:
            _check_class(cls, getattr(cls, "__name__", repr(cls)))
            _check_not_builtin(cls, family)
        except TypeError as exc:
            raise invalid(
                "cls", cls, f"a class implementing QuantumExecutor, Placement or ChipCompiler ({exc})"
            ) from None
        cls.family = family
        with _lock:
            _registered[family] = cls
        return cls

    return decorate


def _builtin_values() -> dict[str, str]:
    """Built-in family name -> ``module:Class`` (entry points of the hybridai distribution)."""
    return {name: ep.value for name, (ep, builtin) in _entry_points().items() if builtin}


def _check_not_builtin(cls: type, family: str) -> None:
    """A built-in family's own class may not serve another name (it would be renamed, built-in included)."""
    where = f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', '?')}"
    owner = next((name for name, value in _builtin_values().items() if value == where), None)
    if owner is not None and owner != family:
        raise TypeError(
            f"{where} is the class of the built-in family {owner!r}; subclass it (class Mine({cls.__name__}): ...) "
            "to serve another name"
        )


def _entry_points() -> dict[str, tuple[metadata.EntryPoint, bool]]:
    """name -> (entry point, built-in?); a built-in wins over a plugin of the same name."""
    return _scan()[0]


def _is_builtin(ep: metadata.EntryPoint) -> bool:
    return _dist_name(ep) == DISTRIBUTION and ep.value.startswith(f"{DISTRIBUTION}.")


def _dist_name(ep: metadata.EntryPoint) -> str:
    return str(getattr(getattr(ep, "dist", None), "name", None) or "?")


def _scan() -> tuple[dict[str, tuple[metadata.EntryPoint, bool]], list[tuple[metadata.EntryPoint, str]]]:
    """The entry points in use by name, and those left out with why: a plugin named like a built-in
    (it shadows it), or like a plugin found first. The same distribution found twice is not a clash."""
    eps = [(ep, _is_builtin(ep)) for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]
    found: dict[str, tuple[metadata.EntryPoint, bool]] = {}
    for ep, builtin in eps:  # built-ins first: they win whatever the order of sys.path
        if builtin:
            found.setdefault(ep.name, (ep, True))
    left_out: list[tuple[metadata.EntryPoint, str]] = []
    for ep, builtin in eps:
        if builtin:
            continue
        if ep.name not in found:
            found[ep.name] = (ep, False)
            continue
        first, first_builtin = found[ep.name]
        if (_dist_name(first), first.value) == (_dist_name(ep), ep.value):
            continue
        if first_builtin:
            why = (
                f"shadows the built-in {ep.name!r}: a plugin never replaces a built-in family; rename the entry "
                f"point in the {ENTRY_POINT_GROUP!r} group of {_dist_name(ep)}"
            )
        else:
            why = f"the name {ep.name!r} is already taken by {_source(first, False)}; rename one of the entry points"
        if all(other is not ep for other, _ in left_out):
            left_out.append((ep, why))
    return found, left_out


def _source(ep: metadata.EntryPoint, builtin: bool) -> str:
    if builtin:
        return "built-in"
    return f"plugin {_dist_name(ep)} ({ep.value})"


def _load(name: str, ep: metadata.EntryPoint) -> type[Backend] | BaseException:
    with _lock:
        if name not in _loaded:
            try:
                cls = _check_class(ep.load(), ep.value)
                if not _is_builtin(ep):
                    _check_not_builtin(cls, name)
                cls.family = name
                _loaded[name] = cls
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # a broken plugin (even one calling sys.exit) breaks nothing else
                _loaded[name] = exc
        return _loaded[name]


def _failure(exc: BaseException) -> str:
    """``Type: message`` of a plugin's exception, secrets redacted; an exit says so."""
    message = redact(exc)
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"{text} (it called sys.exit)" if isinstance(exc, SystemExit) else text


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
    return _lookup(family)[0]


def _lookup(family: str) -> tuple[type[Backend], str]:
    """The class of ``family`` and where it comes from ('built-in', 'registered' or 'plugin ...')."""
    with _lock:
        if family in _registered:
            return _registered[family], "registered"
    eps = _entry_points()
    if family not in eps:
        raise BackendNotFoundError(
            f"backend family {family!r} is not registered; known families: "
            f"{', '.join(families())}.{_known_elsewhere(family) or suggest(family, families())}"
        )
    ep, builtin = eps[family]
    loaded = _load(family, ep)
    if isinstance(loaded, BaseException):
        raise BackendUnavailableError(
            f"backend family {family!r} ({_source(ep, builtin)}) failed to load: {_failure(loaded)}"
        ) from scrub_exception(loaded)
    return loaded, _source(ep, builtin)


def _normalised(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def _known_elsewhere(name: str) -> str:
    """' Did you mean ...?' when ``name``, given as a family, is a family's alias or one of its known targets."""
    aliases, targets = [], []
    for family in families():
        try:
            cls = _lookup(family)[0]
            if _normalised(name) in {_normalised(a) for a in getattr(cls, "aliases", ())}:
                aliases.append(family)
            known = getattr(cls, "known_targets", None)
            if callable(known) and name in known():
                targets.append(f"{family}:{name}")
        except KeyboardInterrupt:
            raise
        except BaseException:  # a family that cannot load or list its targets suggests nothing
            continue
    if targets:
        return (
            f" Did you mean {', '.join(repr(t) for t in targets)}? Names are 'family' or 'family:target', and "
            f"{name!r} is a target of the {', '.join(repr(t.partition(':')[0]) for t in targets)} family."
        )
    if aliases:
        named = ", ".join(repr(a) for a in aliases)
        return f" Did you mean {named}? (hybridai's name for what other frameworks call {name!r}.)"
    return ""


def _build(name: str, options: dict[str, Any]) -> Backend:
    family, target = parse_name(name)
    if remember_options(options):  # secret values are hidden from here on (errors, reprs, hybridai's logs)
        redact_logs(DISTRIBUTION)
    cls, source = _lookup(family)
    status = _availability(cls)
    if not status.available:
        raise BackendUnavailableError(f"backend {name!r} is not available here: {redact(status.reason)}")
    _check_option_names(cls, name, options)
    try:
        backend = cls(target, **options)
    except KeyboardInterrupt:
        raise
    except HybridAIError as exc:
        scrub_exception(exc)
        raise
    except BaseException as exc:
        scrub_exception(exc)
        if isinstance(exc, TypeError) and "unexpected keyword argument" in str(exc):
            raise ConfigError(f"backend={name!r} does not accept the option(s) {sorted(options)}: {exc}") from None
        if source == "built-in":
            raise  # a bug in hybridai: raw (secrets redacted), to be found and fixed
        raise _configure_failed(name, source, exc) from exc
    if source != "built-in":
        _check_capabilities(backend, source)
    return backend


def _configure_failed(name: str, source: str, exc: BaseException) -> BackendUnavailableError:
    """A plugin's (or registered class's) constructor failed: a BackendUnavailableError naming it."""
    return BackendUnavailableError(f"backend {name!r} ({source}) failed while being configured: {_failure(exc)}")


def _check_option_names(cls: type[Backend], name: str, options: dict[str, Any]) -> None:
    """Unknown option names (never their values) before calling a constructor that takes no ``**options``."""
    if not options:
        return
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]  # without self
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    target = positional[0] if positional else None  # receives the target
    accepted = [p.name for p in parameters if p is not target and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        hints = "".join(suggest(u, accepted) for u in unknown)
        raise ConfigError(
            f"backend={name!r} does not accept the option(s) {unknown}; accepted: "
            f"{', '.join(accepted) if accepted else 'no options'}.{hints}"
        )


def _check_capabilities(backend: Backend, source: str) -> None:
    """A plugin's capabilities must be readable and the typed record of its contract (layers read them)."""
    record = capabilities_record(type(backend))
    try:
        caps = backend.capabilities
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise BackendUnavailableError(
            f"backend {backend.name!r} ({source}): reading its capabilities raised {_failure(exc)}"
        ) from None
    if record is not None and not isinstance(caps, record):
        raise BackendUnavailableError(
            f"backend {backend.name!r} ({source}): capabilities is a {type(caps).__name__}, not "
            f"hybridai.backends.{record.__name__}; accepted: the typed record of its contract"
        )


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


def _contract_name(cls: type[Backend], default: str) -> str:
    """What the contract ``cls`` implements is called in messages; ``default`` when it implements none."""
    contract = contract_of(cls)
    return default if contract is None else CONTRACT_NAMES.get(contract, default)


def _wrong_contract(backend: Backend, contract: type[Backend], domain: str | None) -> HybridAIError:
    got = _contract_name(type(backend), type(backend).__name__)
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
    found, left_out = _scan()
    for family, (ep, builtin) in sorted(found.items()):
        if family in registered:
            continue
        loaded = _load(family, ep)
        if isinstance(loaded, BaseException):
            reason = f"failed to load: {_failure(loaded)}"
            rows.append(BackendInfo(family, (), False, reason, None, _source(ep, builtin)))
        else:
            rows.append(_info(family, loaded, _source(ep, builtin)))
    for ep, why in left_out:  # listed, never loaded: its name belongs to another family
        rows.append(BackendInfo(f"{ep.name} ({_dist_name(ep)})", (), False, why, None, _source(ep, False)))
    return rows


def _info(family: str, cls: type[Backend], source: str) -> BackendInfo:
    status = _availability(cls)
    caps = None
    if status.available:
        try:
            caps = cls().capabilities
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a family that needs a target has no default capabilities
            if not isinstance(exc, ConfigError | BackendNotFoundError | BackendUnavailableError):
                status = Availability(False, f"default instance failed: {_failure(exc)}")
        record = capabilities_record(cls)
        if caps is not None and record is not None and not isinstance(caps, record):
            status = Availability(
                False, f"capabilities is a {type(caps).__name__}, not hybridai.backends.{record.__name__}"
            )
            caps = None
    contract = _contract_name(cls, "")
    targets = _known_targets(cls) if status.available else ()
    return BackendInfo(family, tuple(cls.domains), status.available, status.reason, caps, source, contract, targets)


def _known_targets(cls: type[Backend]) -> tuple[str, ...]:
    """``cls.known_targets()`` as a tuple of names; nothing when it has none or cannot list them."""
    known = getattr(cls, "known_targets", None)
    try:
        return tuple(str(t) for t in known()) if callable(known) else ()
    except KeyboardInterrupt:
        raise
    except BaseException:  # a plugin that cannot list its targets lists none
        return ()


def _availability(cls: type[Backend]) -> Availability:
    """``cls.is_available()``, or why it cannot be asked (it raised, or answered something else)."""
    try:
        status = cls.is_available()
        if isinstance(status, Availability):
            return Availability(bool(status.available), redact(status.reason))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # sys.exit in a probe included
        return Availability(False, f"is_available() raised {_failure(exc)}")
    return Availability(False, f"is_available() returned {redact(repr(status))}, not hybridai.backends.Availability")
