"""Where nothing may be rewritten: code fences and spans, quotations, URLs, paths, headings,
blockquotes and HTML comments.

A date inside code or a quotation is someone else's text (a command's `--since=yesterday`, a quoted
message), so these spans are masked before any phrase is judged; `_inside` tests a match against the
sorted, merged spans by bisection.
"""

from __future__ import annotations

import bisect
import re

from ...text.lines import fenced_blocks, split_eol


# Every alternative is linear: no lazy scan can run past a line or a bounded length.
_MASKS = re.compile(
    r"(?:https?|ftp|file)://\S+|www\.\S+"  # URLs
    r"|(?<![^\s`\"“”(\[])[^\s`\"“”/\\]*[/\\][^\s`\"“”]*"  # paths and tokens with slashes (anchored)
    r"|\"[^\"\n]*\"|“[^”\n]*”"  # double quotations
    r"|(?<![\w'’])'(?=\S)[^'\n]{0,400}?(?<=[^\s\\])'(?!\w)"  # single quotations, not apostrophes
    r"|‘[^’\n]{0,400}’(?!\w)"
)
_BACKTICKS = re.compile(r"`+")
# A line that is a heading, a quotation (blockquote) or a table separator says nothing dated.
_SKIPPED_LINE = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]|>)")


def _masked_spans(text: str) -> list[tuple[int, int]]:
    """Where nothing may be rewritten: code fences and spans, quotations, URLs, paths, headings."""
    spans: list[tuple[int, int]] = []
    lines = text.splitlines(keepends=True)
    # A fence never closed runs to the end: safer than guessing where it stops.
    in_code = fenced_blocks([split_eol(line)[0] for line in lines]).code_to_end()
    pos = 0
    for line, code in zip(lines, in_code):
        if code or _SKIPPED_LINE.match(line):
            spans.append((pos, pos + len(line)))
        pos += len(line)
    spans.extend(_code_spans(text))
    spans.extend(_comments(text))
    spans.extend(m.span() for m in _MASKS.finditer(text))
    return _merged(spans)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """`code` spans: a run of backticks up to the next run of the same length (CommonMark)."""
    runs = [m.span() for m in _BACKTICKS.finditer(text)]
    later: dict[int, list[int]] = {}  # run length -> indexes of runs, last first
    for i in range(len(runs) - 1, -1, -1):
        later.setdefault(runs[i][1] - runs[i][0], []).append(i)
    out, i = [], 0
    while i < len(runs):
        size = runs[i][1] - runs[i][0]
        same = later[size]
        while same and same[-1] <= i:
            same.pop()
        if not same:
            i += 1
            continue
        j = same[-1]
        out.append((runs[i][0], runs[j][1]))
        i = j + 1
    return out


def _comments(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    while (start := text.find("<!--", pos)) >= 0:
        end = text.find("-->", start + 4)
        end = len(text) if end < 0 else end + 3
        out.append((start, end))
        pos = end
    return out


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _inside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether [start, end) overlaps one of `spans` (sorted, not overlapping)."""
    i = bisect.bisect_left(spans, (end,)) - 1
    return i >= 0 and spans[i][1] > start
