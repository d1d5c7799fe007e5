"""Fenced code blocks of the documentation's Markdown pages, and the skip markers in front of them.

A block is illustrative only (not run) when the line before its opening fence is an HTML comment
``<!-- skip: why this block cannot run in the tests -->``; the reason is required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
SKIP = re.compile(r"^\s*<!--\s*skip\b:?(?P<reason>.*?)-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its page, the line of its first code line (1-based), language and code."""

    page: Path
    line: int
    language: str
    code: str
    skip_reason: str | None  # None: the block runs; "" : marked skip without a reason

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


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
