"""Bytes and lines as every reader and writer sees them: the BOM, line endings, fences, headings.

One definition each, so a writer keeps what its reader found: a file that starts with a BOM keeps
it, a CRLF or CR-only file gets its own line ending on every line a writer adds.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

UTF8_BOM = b"\xef\xbb\xbf"


def split_bom(data: bytes) -> tuple[bool, bytes]:
    """(had a UTF-8 BOM, the bytes after it)."""
    if data.startswith(UTF8_BOM):
        return True, data[len(UTF8_BOM) :]
    return False, data


def decode_utf8(data: bytes) -> tuple[str, bool]:
    """(text, had a BOM) of UTF-8 bytes; UnicodeDecodeError when they are not UTF-8."""
    bom, rest = split_bom(data)
    return rest.decode("utf-8"), bom


def encode_utf8(text: str, bom: bool, errors: str = "strict") -> bytes:
    """`text` as UTF-8, behind the BOM the file had."""
    return (UTF8_BOM if bom else b"") + text.encode("utf-8", errors)


# What `str.splitlines` ends a line at: none of these may enter a memory through an edit (a reader
# splitting that way would see a line the file does not have).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_NEWLINE = re.compile(r"\r\n|\r|\n")
_LINE_END = re.compile(r"(\r\n|\r|\n)")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of a Markdown file as Markdown and the agents writing it see them: ended by CRLF, LF
    or CR only. `str.splitlines` also ends a line at U+2028, U+0085, a form feed and other separators,
    which sit inside a Markdown line: a "### heading" after one of them is no heading, and a grammar
    that took it for one would cut another entry's line in half. Otherwise as `str.splitlines`."""
    parts = _LINE_END.split(text)
    lines = [parts[i] + parts[i + 1] if keepends else parts[i] for i in range(0, len(parts) - 1, 2)]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_texts(text: str) -> list[str]:
    """`text.split("\\n")` for every line ending `split_lines` knows (CRLF, LF, CR only): each line's
    text, and last what follows the last line ending ("" when the text ends with one). The lines a
    grammar numbers; `line_pieces` gives them with their endings."""
    return _NEWLINE.split(text)


def line_pieces(text: str) -> list[tuple[str, str]]:
    """(text, ending) of each of `line_texts(text)`, the last with none: `join_pieces` of them is `text`."""
    parts = _LINE_END.split(text)
    return list(zip(parts[::2], [*parts[1::2], ""]))


def join_pieces(pieces: Iterable[tuple[str, str]]) -> str:
    """Lines (`line_pieces`, some maybe left out or edited) joined again as `"\\n".join` joins them, each
    with its own ending: every one but the last, which ends the text (a text whose last line went
    ends with the line before it, without that line's ending)."""
    kept = list(pieces)
    return "".join(line + eol for line, eol in kept[:-1]) + (kept[-1][0] if kept else "")


def line_count(text: str) -> int:
    """`len(split_lines(text))`, counted in C without making the lines."""
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    return breaks + (1 if text and not text.endswith(("\n", "\r")) else 0)


def split_eol(line: str) -> tuple[str, str]:
    """A line (as `split_lines(keepends=True)` gives it) and its ending, apart."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line and line[-1] in "\r\n":
        return line[:-1], line[-1]
    return line, ""


def newline_of(text: str, default: str = "\n") -> str:
    """The text's line ending, the one a writer adds: the first CRLF, LF or CR it uses."""
    m = _NEWLINE.search(text)
    return m.group() if m else default


def with_old_line_endings(new: str, old: str) -> str:
    """`new`, written with LF line endings, as bytes of `old` it keeps: a line `old` also has ends as it
    ended there (its CRLF, LF or CR, the n-th copy of a line as the n-th did), and any other line
    with `old`'s first line ending (LF when it has none). A file with mixed endings keeps each of
    them on the lines a rewrite leaves alone; a CR-only file stays CR-only."""
    default = newline_of(old)
    endings: dict[str, deque[str]] = {}
    for line, eol in line_pieces(old)[:-1]:  # the last piece has no line ending
        endings.setdefault(line, deque()).append(eol)
    pieces = new.split("\n")
    out = []
    for line in pieces[:-1]:
        seen = endings.get(line)
        out.append(line + (seen.popleft() if seen else default))
    out.append(pieces[-1])
    return "".join(out)


def ends_with_blank_line(text: str) -> bool:
    return text.endswith(("\n\n", "\r\n\r\n", "\r\r"))


def append_paragraphs(text: str, lines: Iterable[str]) -> str:
    """`text` with each line appended as its own paragraph, in the text's line ending."""
    newline = newline_of(text)
    out = text
    if out and not out.endswith(("\n", "\r")):
        out += newline
    for line in lines:
        out += newline + line + newline
    return out


# A whole fenced block in a text (opening fence to the same closing fence, or to the end): what the
# readers of prose (refs, the conflict judge's statements) set aside as code.
FENCED_BLOCK = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)

# A list item's marker at the start of a line: "- ", "* ", "+ ", "1. ", "2) ".
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


# A fence line as CommonMark reads one: its run of 3 or more backticks or tildes, and what follows
# (the info string, which for a backtick fence may hold no backtick: ```` ```x``` ```` is inline code).
_FENCE_RUN = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Fences:
    code: list[bool]  # each line inside a fenced block that closes, its two fence lines included
    unclosed: list[int]  # each fence line (0-based) no later fence line closes

    def code_to_end(self) -> list[bool]:
        """`code`, with the first unclosed fence running to the end of the text as CommonMark runs it:
        for a reader that must not take code for text (a date to rewrite, a heading to cut at) when
        where the fence was meant to end cannot be told."""
        if not self.unclosed:
            return self.code
        first = self.unclosed[0]
        return self.code[:first] + [True] * (len(self.code) - first)


def fenced_blocks(lines: Sequence[str]) -> Fences:
    """The fenced code blocks of a text's lines, as CommonMark pairs them: a fence closes only on a
    line of the same character, at least as long, with nothing after it but blanks (```` ```python ````
    inside a ```` ``` ```` block is code, not its end). A fence no later line closes is `unclosed`:
    CommonMark runs it to the end of the text, but where its author meant it to end cannot be told,
    so it opens no block here and the lines after it are read as they are (a caller editing the
    text leaves it alone). Linear: each fence line looks up, by character, the longest closing
    fence after it instead of scanning to the end for one."""
    runs = [m if (m := _FENCE_RUN.match(line)) and not (m.group(1)[0] == "`" and "`" in m.group(2)) else None for line in lines]
    closing = [(m.group(1)[0], len(m.group(1))) if m and not m.group(2).strip() else None for m in runs]
    longest: dict[str, list[int]] = {"`": [0] * (len(lines) + 1), "~": [0] * (len(lines) + 1)}
    for i in range(len(lines) - 1, -1, -1):  # longest[c][i]: the longest closing fence of c at line i or after
        for char, after in longest.items():
            close = closing[i]
            after[i] = max(after[i + 1], close[1] if close is not None and close[0] == char else 0)
    code = [False] * len(lines)
    unclosed: list[int] = []
    i = 0
    while i < len(lines):
        m = runs[i]
        if m is None:
            i += 1
            continue
        char, size = m.group(1)[0], len(m.group(1))
        if longest[char][i + 1] < size:
            unclosed.append(i)
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if (c := closing[j]) and c[0] == char and c[1] >= size)
        code[i : end + 1] = [True] * (end + 1 - i)
        i = end + 1
    return Fences(code, unclosed)


# An ATX heading as CommonMark has it: up to 3 spaces, 1-6 #, a blank, the text, optional closing #s.
ATX_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
