"""Fenced code blocks of the documentation's Markdown pages, the skip markers in front of them, and the output
the pages quote.

A block is illustrative only (not run) when the line before its opening fence is an HTML comment
``<!-- skip: why this block cannot run in the tests -->``; the reason is required.

A page shows what a ``print(...)`` prints in a comment on that call: ``# prints `text` `` and then, if
needed, any explanation. The quoted text is what the call prints, whitespace aside; ``...`` in it stands
for any text (``# prints `{'epoch': 1, 'train_loss': ...}` ``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
SKIP = re.compile(r"^\s*<!--\s*skip\b:?(?P<reason>.*?)-->\s*$")


@dataclass(frozen=True)
class Located:
    """Something on a page: the page and its line (1-based)."""

    page: Path
    line: int

    @property
    def where(self) -> str:
        return f"{_name(self.page)}:{self.line}"


@dataclass(frozen=True)
class Block(Located):
    """One fenced block: its page, the line of its first code line, language and code."""

    language: str
    code: str
    skip_reason: str | None  # None: the block runs; "" : marked skip without a reason


def _name(page: Path) -> str:
    """A page's path from the repository root (as it is, for a page elsewhere)."""
    return str(page.relative_to(ROOT) if page.is_relative_to(ROOT) else page)


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` in order (blocks inside list items are dedented)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = (opening["info"].split() or [""])[0].lower()
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = SKIP.match(previous)
        body, j = [], i + 1
        while j < len(lines) and not _closes(lines[j], fence):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        reason = marker["reason"].strip() if marker else None
        found.append(Block(page, i + 2, language, "\n".join(body) + "\n", reason))
        i = j + 1
    return found


def _closes(line: str, fence: str) -> bool:
    """A closing fence: only the opening fence's character, at least as many times."""
    text = line.strip()
    return len(text) >= len(fence) and set(text) == {fence[0]}


def python_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.language in ("python", "py")]


def pages() -> list[Path]:
    """The site's pages, then README.md."""
    return sorted(DOCS.rglob("*.md")) + [README]


PRINTS = re.compile(r"#\s*prints\b(?P<rest>.*)$")
QUOTE = re.compile(r"\s*`(?P<text>[^`]+)`")


@dataclass(frozen=True)
class Quote(Located):
    """What a page says one ``print(...)`` prints: the page line the call starts on, and the quoted text."""

    text: str


def quotes(block: Block) -> list[Quote]:
    """The ``# prints `text` `` comments of a block, each tied to the ``print(`` call it is written on.

    Raises ValueError for a ``# prints`` comment without a quoted text or on no ``print(`` call."""
    lines = block.code.splitlines()
    tokens = tokenize.generate_tokens(io.StringIO(block.code).readline)
    comments = {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}
    calls = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(ast.parse(block.code))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
    ]
    found = []
    for line, comment in sorted(comments.items()):
        claim = PRINTS.match(comment)
        if not claim:
            continue
        where = f"{_name(block.page)}:{block.line + line - 1}"
        quoted = QUOTE.match(claim["rest"])
        if not quoted:
            raise ValueError(f"{where}: write what the call prints in backticks, # prints `text`: {lines[line - 1]}")
        starts = [first for first, last in calls if first <= line <= last]
        if not starts:
            raise ValueError(f"{where}: a # prints comment on no print( call: {lines[line - 1]}")
        found.append(Quote(block.page, block.line + max(starts) - 1, quoted["text"]))
    return found


def _spaced(text: str) -> str:
    return " ".join(text.split())


def says(quote: str, printed: str) -> bool:
    """Whether ``printed`` is what ``quote`` says, whitespace aside, ``...`` standing for any text."""
    pattern = ".*?".join(re.escape(part) for part in _spaced(quote).split("..."))
    return re.fullmatch(pattern, _spaced(printed), flags=re.DOTALL) is not None
