"""What the demo prints about the machine it ran on: its timings depend on the CPU and torch's threads."""

from __future__ import annotations

import os
import platform

import torch


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``'s "model name"), else what ``platform.processor()`` says."""
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        name = ""
    return name or platform.processor() or "unknown CPU"


def machine_line() -> str:
    """``machine: <CPU model>, <n> cores; torch <version>, <t> thread(s)``."""
    threads = torch.get_num_threads()
    return (
        f"machine: {cpu_model()}, {os.cpu_count()} cores; torch {torch.__version__}, "
        f"{threads} thread{'s' if threads != 1 else ''}"
    )


__all__ = ["cpu_model", "machine_line"]
