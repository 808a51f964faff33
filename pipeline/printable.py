"""One line of a report, whatever the file names and texts in it hold.

Every line the tool prints or writes for a person (the plan, run reports, REPORT.md, the crux REM
summary, zylos session log entries, stderr messages) goes through `printable`: a file name with a
newline, a carriage return or an escape sequence would otherwise forge report lines, headings or
terminal output. The plan JSON needs none of this (JSON escapes what it carries).
"""

from __future__ import annotations

import re

# Every Unicode bidi control (UAX #9): they reorder what a reader sees, so a name or a memory's text
# could show a path or a command other than the one the plan acts on. The embeddings, overrides and
# isolates, and the implicit marks: LRM, RLM and the Arabic letter mark.
_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# C0 controls, DEL, C1 controls, the Unicode line and paragraph separators, and the bidi controls.
_UNPRINTABLE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI_CONTROLS}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character written as an escape (`\\n`, `\\r`, `\\t`, `\\x1b`,
    `\\u2028`, ...): always one line, never a terminal escape sequence."""
    return _UNPRINTABLE.sub(_escape, text) if _UNPRINTABLE.search(text) else text
