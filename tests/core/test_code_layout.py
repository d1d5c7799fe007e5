"""The package's modules stay small (at most 500 lines each), and the machine's memory is read in one place
(``hybridai.core.machine``) that every memory check imports."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import hybridai
from hybridai.core import machine
from hybridai.events import binning
from hybridai.quantum.execution import resources

PACKAGE = Path(hybridai.__file__).parent
REPOSITORY = PACKAGE.parent
MAX_LINES = 500


def test_no_module_of_the_package_is_over_500_lines():
    lengths = {str(p.relative_to(REPOSITORY)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert len(lengths) > 100  # the whole package was read
    assert {path: n for path, n in lengths.items() if n > MAX_LINES} == {}


def test_physical_memory_is_defined_once_and_imported_by_every_memory_check():
    sources = [*PACKAGE.rglob("*.py"), *(REPOSITORY / "benchmarks").rglob("*.py")]
    defined = [
        str(path.relative_to(REPOSITORY))
        for path in sources
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "physical_memory"
    ]
    assert defined == ["hybridai/core/machine.py"]
    assert resources.physical_memory is machine.physical_memory
    assert binning.physical_memory is machine.physical_memory


def test_physical_memory_is_the_ram_in_bytes_or_the_fallback_when_the_system_does_not_say(monkeypatch):
    assert machine.physical_memory() == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")

    def unknown(name: str) -> int:
        raise ValueError(f"unrecognized configuration name {name}")

    monkeypatch.setattr(os, "sysconf", unknown)
    assert machine.physical_memory() == machine.FALLBACK_MEMORY == 16 * 2**30
