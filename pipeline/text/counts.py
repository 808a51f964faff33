"""Counts as a person writes them: "1 file", "2 files", "1 entry", "3 entries" (never "file(s)")."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """`n` and `word`, with `many` (default: word + "s") when n is not 1."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"
