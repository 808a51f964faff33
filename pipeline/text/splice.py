"""Put replacements into a text, every other character kept: the one primitive under the relative-date
grammar's `apply_replacements` and the writers' in-place edits (`storage/text_edits.py`)."""

from __future__ import annotations

from typing import Iterable

from ..errors import MemconsolidateError


class SpliceError(MemconsolidateError, ValueError):  # a ValueError still, for its callers
    """A span that overlaps the one before it, or no longer holds its `before` text."""

    def __init__(self, start: int, end: int, before: str) -> None:
        super().__init__(f"{before!r} at {start}-{end} does not match the text")
        self.start, self.end, self.before = start, end, before


def splice(text: str, spans: Iterable[tuple[int, int, str, str]]) -> str:
    """`text` with each (start, end, before, after) span, in order of start, rewritten to `after`."""
    out: list[str] = []
    pos = 0
    for start, end, before, after in sorted(spans, key=lambda s: s[0]):
        if start < pos or text[start:end] != before:
            raise SpliceError(start, end, before)
        out.append(text[pos:start])
        out.append(after)
        pos = end
    out.append(text[pos:])
    return "".join(out)
