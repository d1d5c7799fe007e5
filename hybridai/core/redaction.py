"""Secrets are never printed: not in errors, reprs, tables or log output.

A *secret* is a value given under a secret-looking name (``token=``, ``api_key=``, ``password=``,
``secret=``, ``instance=``, ``credentials=`` ...; ``is_secret_name``) or the value of a known token
variable of the environment (``QISKIT_IBM_TOKEN``, ``QISKIT_IBM_INSTANCE``). The registry remembers
the secret values of the options it is given (``remember_options``); ``redact`` replaces every known
value by ``'***'`` and ``describe_options`` shows secret-named options as ``name='***'``.

Log output: ``redact_logs("hybridai", "qiskit_ibm_runtime")`` attaches a ``RedactingFilter`` to
those loggers, to every logger below them and to their handlers. It rewrites only the records that
would show a secret (message, exception text, stack), formatting them once; other records, and every
other library's logging, are left exactly as they are (the process-wide record factory is untouched).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

MASK = "***"
MIN_LENGTH = 4  # shorter values are masked where they are shown by name, never searched for in text
TOKEN_VARIABLES = ("QISKIT_IBM_TOKEN", "QISKIT_IBM_INSTANCE")
SECRET_NAME = re.compile(
    r"token|secret|passw(or)?d|passphrase|credential|api_?key|access_?key|private_?key|auth|instance|cookie",
    re.IGNORECASE,
)

_known: set[str] = set()
_lock = threading.Lock()


def is_secret_name(name: object) -> bool:
    """Whether an option or field called ``name`` holds a secret (token, api_key, password, instance ...)."""
    return isinstance(name, str) and SECRET_NAME.search(name) is not None


def _collect(value: Any, secret: bool, found: list[str], depth: int = 0) -> None:
    """Secret strings in ``value``: all of its text when ``secret``, else values under secret names."""
    if depth > 8:
        return
    if isinstance(value, Mapping):
        for key, item in list(value.items()):
            _collect(item, secret or is_secret_name(key), found, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in list(value):
            _collect(item, secret, found, depth + 1)
    elif secret and value is not None and not isinstance(value, bool | float):
        text = value.decode(errors="replace") if isinstance(value, bytes) else _text(value)
        if len(text) >= MIN_LENGTH:
            found.append(text)


def _text(value: Any) -> str:
    try:
        return value if isinstance(value, str) else str(value)
    except Exception:  # an object whose str fails has nothing printable to hide
        return ""


def remember_options(options: Mapping[str, Any]) -> bool:
    """Remember the values of secret-named options (also nested in dicts); True when there was one."""
    found: list[str] = []
    _collect(options, False, found)
    remember(*found)
    return bool(found)


def remember(*values: str) -> None:
    """Remember secret values (from an account file, say) so that ``redact`` hides them from now on."""
    new = {v for v in values if isinstance(v, str) and len(v) >= MIN_LENGTH}
    if new:
        with _lock:
            _known.update(new)


def forget() -> None:
    """Forget remembered values (tests); environment variables are always read afresh."""
    with _lock:
        _known.clear()


def secret_values() -> list[str]:
    """Every value that must never be printed, longest first (so that no part of one survives)."""
    with _lock:
        values = set(_known)
    values.update(v for v in (os.environ.get(k) for k in TOKEN_VARIABLES) if v and len(v) >= MIN_LENGTH)
    return sorted(values, key=len, reverse=True)


def redact(text: object) -> str:
    """``text`` (any object, as ``str``) with every known secret value replaced by ``'***'``."""
    text = _text(text)
    secrets = secret_values()
    while any(secret in text for secret in secrets):  # every pass shortens the text: a mask never forms one
        for secret in secrets:
            text = text.replace(secret, MASK)
    return text


def contains_secret(text: object) -> bool:
    text = _text(text)
    return any(secret in text for secret in secret_values())


def describe_options(options: Mapping[str, Any]) -> str:
    """``", a=1, token='***'"``: options for a repr, secret-named values masked and the rest redacted."""
    return "".join(f", {k}={MASK!r}" if is_secret_name(k) else f", {k}={redact(repr(v))}" for k, v in options.items())


def scrub_exception(exc: BaseException) -> BaseException:
    """Redact the string arguments of ``exc`` and of its causes and contexts (in place); returns ``exc``."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen or len(seen) > 32:
            continue
        seen.add(id(current))
        try:
            if any(isinstance(a, str) and contains_secret(a) for a in current.args):
                current.args = tuple(redact(a) if isinstance(a, str) else a for a in current.args)
        except Exception:  # an exception type with unusual args keeps them
            pass
        stack += [current.__cause__, current.__context__]
    return exc


class RedactingFilter(logging.Filter):
    """Rewrites a log record that would show a secret: its message formatted once and redacted (``args``
    emptied), its exception and stack text redacted (``exc_info`` dropped, ``exc_text`` kept). Records
    without secrets pass untouched, so every logging style (dict-style ``%(name)s`` included) works."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if not secret_values():
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: keep its parts, redacted, rather than lose the record
            message = f"{_text(record.msg)} (arguments: {_text(record.args)})"
        exc_text = record.exc_text
        if record.exc_info and not exc_text:
            try:
                exc_text = self._formatter.formatException(record.exc_info)
            except Exception:
                exc_text = "(the exception could not be formatted)"
        extra = [k for k, v in vars(record).items() if k not in _STANDARD and isinstance(v, str) and contains_secret(v)]
        for key in extra:  # logger.info(..., extra={"token": ...}) shown by a formatter's %(token)s
            setattr(record, key, redact(getattr(record, key)))
        if not any(contains_secret(part) for part in (message, exc_text, record.stack_info) if part):
            return True
        record.msg, record.args = redact(message), ()
        if exc_text:
            record.exc_text, record.exc_info = redact(exc_text), None
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


_filter = RedactingFilter()


def redact_logs(*names: str) -> None:
    """Attach the redacting filter to the loggers ``names``, every existing logger below them, and
    their handlers. Idempotent and cheap: call it again after importing a library that creates loggers."""
    prefixes = tuple(f"{n}." for n in names)
    loggers = [logging.getLogger(n) for n in names]
    for key, item in list(logging.Logger.manager.loggerDict.items()):
        if key.startswith(prefixes) and isinstance(item, logging.Logger):
            loggers.append(item)
    for logger in loggers:
        if _filter not in logger.filters:
            logger.addFilter(_filter)
        for handler in list(logger.handlers):
            if _filter not in handler.filters:
                handler.addFilter(_filter)
