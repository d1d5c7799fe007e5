"""IBM tokens never leave hybridai: their values are replaced by '***' in errors and log records."""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger("hybridai.qiskit")
TOKEN_VARIABLES = ("QISKIT_IBM_TOKEN",)


def secrets() -> list[str]:
    """Token values hybridai must never print (environment variables of qiskit-ibm-runtime)."""
    return [v for v in (os.environ.get(k) for k in TOKEN_VARIABLES) if v]


def redact(text: str) -> str:
    for secret in secrets():
        text = text.replace(secret, "***")
    return text


_redacting = False


def redact_logs() -> None:
    """From now on, log records (of any library) have token values replaced by '***'.

    Installed when an ``ibm`` backend is first created, before qiskit-ibm-runtime runs;
    it wraps the record factory, so records are clean whichever handler receives them.
    """
    global _redacting
    if _redacting:
        return
    make_record = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        if secrets():
            record.msg = redact(str(record.msg))
            if record.args:
                items = record.args if isinstance(record.args, tuple) else (record.args,)
                record.args = tuple(redact(a) if isinstance(a, str) else a for a in items)
        return record

    logging.setLogRecordFactory(factory)
    _redacting = True
