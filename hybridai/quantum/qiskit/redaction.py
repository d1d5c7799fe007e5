"""IBM tokens never leave hybridai: their values are replaced by '***' in errors and log output.

The secrets are those of ``hybridai.core.redaction``: the environment's ``QISKIT_IBM_TOKEN`` and
``QISKIT_IBM_INSTANCE``, values given under secret-looking option names, and the token and instance of
a saved IBM Quantum account once an ``ibm`` backend has read it. ``redact_logs`` attaches the redacting
log filter to hybridai's and qiskit-ibm-runtime's loggers (never the process-wide record factory), so
other libraries' logging is untouched.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from hybridai.core.redaction import TOKEN_VARIABLES, redact, remember, remember_options, secret_values
from hybridai.core.redaction import redact_logs as _redact_logs

log = logging.getLogger("hybridai.qiskit")
LOGGERS = ("hybridai", "qiskit_ibm_runtime")

__all__ = ["LOGGERS", "TOKEN_VARIABLES", "log", "redact", "redact_logs", "remember_account", "secrets"]


def secrets() -> list[str]:
    """Token values hybridai must never print (longest first)."""
    return secret_values()


def redact_logs() -> None:
    """Attach the redacting filter to the loggers of hybridai and qiskit-ibm-runtime (and every logger
    below them that exists now). Called when an ``ibm`` backend is created and before each of its jobs,
    so that loggers qiskit-ibm-runtime creates lazily are covered too. Imports qiskit-ibm-runtime first (an
    ``ibm`` backend needs it anyway), so that the loggers its modules create on import exist."""
    if "qiskit_ibm_runtime" not in sys.modules:
        try:
            import qiskit_ibm_runtime  # noqa: F401
        except Exception:  # not installed: the backend says so; hybridai's own loggers are still covered
            pass
    _redact_logs(*LOGGERS)


def remember_account(account: Any) -> None:
    """Remember the token and instance of a qiskit-ibm-runtime account (an ``Account`` or the dict of
    ``QiskitRuntimeService.active_account()``) so that they are redacted like environment tokens."""
    if isinstance(account, dict):
        remember_options(account)
        return
    for name in ("token", "instance"):
        value = getattr(account, name, None)
        if isinstance(value, str):
            remember(value)
