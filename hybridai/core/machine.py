"""What the machine running hybridai has: its physical memory, the bound that memory checks default to."""

from __future__ import annotations

import os

FALLBACK_MEMORY = 16 * 2**30  # bytes assumed when the system does not say


def physical_memory() -> int:
    """The machine's RAM in bytes (``FALLBACK_MEMORY``, 16 GiB, when the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return FALLBACK_MEMORY
