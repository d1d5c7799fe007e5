"""Every Python block of the documentation runs: the blocks of one page in order, in one namespace, and
prints what the page says it prints.

Each page is one test (later blocks use the names earlier blocks define), run in a temporary folder
with one torch thread. A block preceded by ``<!-- skip: reason -->`` is illustrative and not run;
``bash``/``sh``/``text`` blocks are never run. README.md's Python blocks are included. A ``print(...)``
with a ``# prints `text` `` comment must print that text each time it runs. The global random states
(torch, numpy, random) start from a new seed in every run, so a printed number that a page does not
seed itself shows up as a mismatch.
"""

from __future__ import annotations

import builtins
import collections
import random
import re
import sys
import types

import numpy as np
import pytest
import torch

from hybridai.core import registry
from tests.docs.markdown import DOCS, README, ROOT, Block, pages, python_blocks, quotes, says

# Lightning 2.6 calls a torch pytree API that torch 2.13 deprecates (the Lightning examples): not the docs' concern
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*")

RUNNABLE = [page for page in pages() if any(b.skip_reason is None for b in python_blocks(page))]


@pytest.fixture
def docs_module(tmp_path, monkeypatch):
    """The namespace a page runs in: a module registered as ``__docs__`` (so that classes a page defines
    pickle, as in a script), in a temporary working folder, with a non-interactive matplotlib and one
    torch thread. What a page changes for the process is put back afterwards: the global random states
    it seeds (``torch.manual_seed``, ``distributed.seed_everything``) and the backend families it registers.
    The global random states start from a new seed (the ``seed`` key of the namespace: a failure names it)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    module = types.ModuleType("__docs__")
    monkeypatch.setitem(sys.modules, "__docs__", module)
    registered = dict(registry._registered)
    python_state, numpy_state = random.getstate(), np.random.get_state()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    seed = random.SystemRandom().randrange(2**32)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        yield module.__dict__, seed
    torch.set_num_threads(threads)
    random.setstate(python_state)
    np.random.set_state(numpy_state)
    registry._registered.clear()
    registry._registered.update(registered)


def recording_print(page, printed):
    """``print`` for a page's namespace: prints, and keeps what each call written on ``page`` printed, by line."""

    def print(*values, sep=" ", end="\n", file=None, flush=False):  # stands in for the builtin on the page
        builtins.print(*values, sep=sep, end=end, file=file, flush=flush)
        caller = sys._getframe(1)
        if file is None and caller.f_code.co_filename == str(page):
            printed[caller.f_lineno].append((" " if sep is None else sep).join(map(str, values)))

    return print


def misquoted(blocks: list[Block], printed: dict[int, list[str]]) -> list[str]:
    """Each ``# prints`` quote of ``blocks`` that the call it is written on did not print, every time it ran."""
    wrong = []
    for quote in (q for block in blocks for q in quotes(block)):
        outputs = printed.get(quote.line, [])
        if not outputs:
            wrong.append(f"{quote.where}: says it prints `{quote.text}`, printed nothing")
        wrong += [
            f"{quote.where}: says `{quote.text}`, printed `{out}`" for out in outputs if not says(quote.text, out)
        ]
    return wrong


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_blocks_of_a_page_run_in_order_and_print_what_it_says(page, docs_module):
    namespace, seed = docs_module
    printed = collections.defaultdict(list)
    namespace["print"] = recording_print(page, printed)
    runnable = [block for block in python_blocks(page) if block.skip_reason is None]
    for block in runnable:
        # pad with empty lines so that tracebacks point at the page's own line numbers
        code = compile("\n" * (block.line - 1) + block.code, str(page), "exec")
        try:
            exec(code, namespace)
        except Exception as error:
            raise AssertionError(
                f"the block at {block.where} failed (global seed {seed}): {type(error).__name__}: {error}"
            ) from error
    wrong = misquoted(runnable, printed)
    assert not wrong, f"global seed {seed}; " + "\n".join(wrong)


def test_a_quote_is_tied_to_its_print_call(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 2\nprint(x, [x] * 3)  # prints `2 [2, 2, 2]` and an explanation\n"
        "print(\n    x,\n    'apart',  # prints `2 ...`\n)\n"
        "for i in range(2):\n    print(f'{i:.1f} of {x}')  # prints `... of 2`\n"
        "# prints `nothing`: a comment on no call\n```\n"
        "```python\nprint(1)  # prints 1 (not quoted)\n```\n"
    )
    first, second = python_blocks(page)
    with pytest.raises(ValueError, match=r"page.md:10: a # prints comment on no print\( call"):
        quotes(first)
    with pytest.raises(ValueError, match=r"page.md:13: write what the call prints in backticks"):
        quotes(second)
    ok = Block(page, first.line, "python", first.code.rsplit("# prints `nothing`", 1)[0], None)
    assert [(q.line, q.text) for q in quotes(ok)] == [(3, "2 [2, 2, 2]"), (4, "2 ..."), (9, "... of 2")]
    printed = collections.defaultdict(list)
    namespace = {"print": recording_print(page, printed)}
    exec(compile("\n" * (ok.line - 1) + ok.code, str(page), "exec"), namespace)
    assert dict(printed) == {3: ["2 [2, 2, 2]"], 4: ["2 apart"], 9: ["0.0 of 2", "1.0 of 2"]}
    assert misquoted([ok], printed) == []
    printed[9][1] = "1.0 of 3"
    printed.pop(4)
    assert misquoted([ok], printed) == [
        f"{page}:4: says it prints `2 ...`, printed nothing",
        f"{page}:9: says `... of 2`, printed `1.0 of 3`",
    ]


def test_a_quote_says_what_was_printed_whitespace_aside_with_ellipses():
    assert says("torch.Size([64, 2])", "torch.Size([64, 2])")
    assert not says("torch.Size([64, 2])", "torch.Size([64, 3])")
    assert not says("0.09", "0.093")  # the whole output, not a prefix
    assert says("tensor([1., 1.,\n 1.])", "tensor([1., 1.,  1.])")
    assert says("{'epoch': 1, 'train_loss': ...}", "{'epoch': 1, 'train_loss': 0.6987761855125427}")
    assert not says("{'epoch': 1, 'train_loss': ...}", "{'epoch': 2, 'train_loss': 0.69}")
    assert says("... mHa", "quantum fidelity kernel: test energy MAE 0.76 mHa")


def test_the_pages_quote_what_they_print():
    """The quotes are found (a broken pattern would silently check nothing)."""
    found = {page.name: quotes_of(page) for page in pages()}
    assert sum(found.values()) >= 40
    assert found["coming-from-qiskit.md"] >= 3 and found["getting-started.md"] >= 3


def quotes_of(page):
    return sum(len(quotes(b)) for b in python_blocks(page) if b.skip_reason is None)


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
