"""Plain-text tables for summaries and CLI output (no dependency, fixed-width columns)."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], footer: Sequence[object] | None = None
) -> str:
    """Left-aligned text table with a rule under the header (and above the footer)."""
    body = [[str(c) for c in r] for r in rows]
    foot = [str(c) for c in footer] if footer is not None else None
    every = [list(headers), *body, *([foot] if foot else [])]
    widths = [max(len(r[i]) for r in every) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [line(headers), rule, *(line(r) for r in body)]
    if foot:
        out += [rule, line(foot)]
    return "\n".join(out)
