"""Every Python block of the documentation runs: the blocks of one page in order, in one namespace.

Each page is one test (later blocks use the names earlier blocks define), run in a temporary folder
with one torch thread. A block preceded by ``<!-- skip: reason -->`` is illustrative and not run;
``bash``/``sh``/``text`` blocks are never run. README.md's Python blocks are included.
"""

from __future__ import annotations

import random
import re
import sys
import types

import numpy as np
import pytest
import torch

from hybridai.core import registry
from tests.docs.markdown import DOCS, README, ROOT, pages, python_blocks

# Lightning 2.6 calls a torch pytree API that torch 2.13 deprecates (the Lightning examples): not the docs' concern
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*")

RUNNABLE = [page for page in pages() if any(b.skip_reason is None for b in python_blocks(page))]


@pytest.fixture
def docs_module(tmp_path, monkeypatch):
    """The namespace a page runs in: a module registered as ``__docs__`` (so that classes a page defines
    pickle, as in a script), in a temporary working folder, with a non-interactive matplotlib and one
    torch thread. What a page changes for the process is put back afterwards: the global random states
    it seeds (``torch.manual_seed``, ``distributed.seed_everything``) and the backend families it registers."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    module = types.ModuleType("__docs__")
    monkeypatch.setitem(sys.modules, "__docs__", module)
    registered = dict(registry._registered)
    python_state, numpy_state = random.getstate(), np.random.get_state()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with torch.random.fork_rng():
        yield module.__dict__
    torch.set_num_threads(threads)
    random.setstate(python_state)
    np.random.set_state(numpy_state)
    registry._registered.clear()
    registry._registered.update(registered)


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_blocks_of_a_page_run_in_order(page, docs_module):
    namespace = docs_module
    for block in python_blocks(page):
        if block.skip_reason is not None:
            continue
        # pad with empty lines so that tracebacks point at the page's own line numbers
        code = compile("\n" * (block.line - 1) + block.code, str(page), "exec")
        try:
            exec(code, namespace)
        except Exception as error:
            raise AssertionError(f"the block at {block.where} failed: {type(error).__name__}: {error}") from error


def test_skip_markers_are_explained_and_rare():
    every = [b for page in pages() for b in python_blocks(page)]
    unexplained = [b.where for b in every if b.skip_reason == ""]
    assert not unexplained, f"<!-- skip: reason --> needs a reason at {unexplained}"
    skipped = [b.where for b in every if b.skip_reason is not None]
    assert len(skipped) <= len(every) // 10, f"illustrative-only blocks should be rare: {skipped}"


def test_a_skip_marker_is_read_only_right_before_a_fence(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- skip: needs hardware -->\n```python\nraise RuntimeError\n```\n\n"
        "<!-- skip -->\n\n```py\nx = 1\n```\n\n<!-- skip: not before a fence -->\ntext\n\n"
        "```python\ny = 2\n```\n\n```bash\nmake test\n```\n  ```python\n  z = 3\n  ```\n"
    )
    found = python_blocks(page)
    assert [(b.line, b.skip_reason, b.code) for b in found] == [
        (3, "needs hardware", "raise RuntimeError\n"),
        (9, "", "x = 1\n"),  # a bare marker (blank lines between are fine) reads as a skip without reason
        (16, None, "y = 2\n"),  # a marker followed by text is not this block's
        (23, None, "z = 3\n"),  # indented (in a list item): dedented
    ]


def test_the_blocks_are_found():
    """The parser sees the blocks (a broken fence pattern would silently test nothing)."""
    counted = {page.name: len(python_blocks(page)) for page in pages()}
    assert counted["getting-started.md"] >= 3 and counted["concepts.md"] >= 3
    assert sum(counted.values()) >= 30


def test_every_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", nav, flags=re.MULTILINE))
    on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert on_disk == listed, f"not in the nav: {on_disk - listed}; missing files: {listed - on_disk}"
    assert README.exists()
