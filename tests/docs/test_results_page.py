"""docs/results.md is the page `make bench` writes: a section per benchmark script, nothing on it is run as code.

`make bench` itself is exercised on a one-second stand-in script (never the real benchmarks): rerunning one
section keeps every other section as it was, and what a script prints renders as Markdown.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.docs.markdown import DOCS, ROOT, blocks

RESULTS = DOCS / "results.md"


def test_the_results_page_says_who_writes_it_and_how_to_rerun_a_section():
    text = RESULTS.read_text()
    head = text.split("\n## ", 1)[0]
    assert "Written by `make bench`" in head and "`make bench BENCH=benchmarks/" in head
    assert "\nRESULTS ?= docs/results.md\n" in (ROOT / "Makefile").read_text()
    scripts = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "benchmarks").glob("*.py"))
    sections = [line[3:] for line in text.splitlines() if line.startswith("## benchmarks/")]
    assert sections == [s for s in scripts if s != "benchmarks/machine.py"]


def test_no_block_of_the_results_page_is_code_to_run():
    assert all(block.language not in ("python", "py", "") for block in blocks(RESULTS))


STAND_IN = '''"""A stand-in benchmark.

bench-args: --ok
bench-args: --fail
"""
import sys

print("4 qubits, batch 8, <Z> on every qubit, 1 < 2")
print("| peer s | hybridai s | speed-up |")
print("|---|---|---|")
print("| 2.0 | 0.5 | 4.0x |")
print("done")
if "--fail" in sys.argv:
    raise SystemExit("the stand-in failed")
'''


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_bench_on_one_script_keeps_the_other_sections(tmp_path):
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    page = tmp_path / "results.md"
    before = RESULTS.read_text()
    page.write_text(before)
    subprocess.run(
        ["make", "-s", "-o", ".venv/.installed", "bench", f"PY={sys.executable}", f"RESULTS={page}",
         f"BENCH={script}", "BENCH_TIMEOUT=60"],
        cwd=ROOT, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    after = page.read_text()
    kept = "\n## benchmarks/" + before.split("\n## benchmarks/", 1)[1]
    assert after.endswith(kept)  # every real section byte for byte, sub-headings (## Gram matrix) included
    section = after.split(f"## {script}\n", 1)[1].split("\n## benchmarks/", 1)[0]
    shown = "\n4 qubits, batch 8, &lt;Z> on every qubit, 1 < 2\n\n"  # <Z> would render as an HTML tag, i.e. not
    assert section.count(shown + "| peer s | hybridai s | speed-up |\n") == 2  # a table renders
    assert "| 4.0x |\n\ndone\n" in section
    assert "failed with exit status 1" in section
    (tmp_path / "section.md").write_text(section)
    assert [(b.language, b.code) for b in blocks(tmp_path / "section.md")] == [("text", "the stand-in failed\n")]
