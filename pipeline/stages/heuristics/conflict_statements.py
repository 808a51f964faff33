"""What a memory claims, with its markup set aside (issue 11, item 11).

Real memory files are markdown: tables of facts per row, lists of links, `[[wikilinks]]`, fenced
code, `{{placeholders}}`, headings. None of those is a statement someone could contradict: a table
cell "no" beside a cell "yes" are two rows, not two opinions; a heading names a topic; a link list
is an index. The conflict judge reads only the prose that is left, one statement per sentence or
bullet, each kept with the words it was written in so an action can quote it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from ...text.lines import FENCED_BLOCK

_FRONT_MATTER = re.compile(r"\A---\n.*?\n---[ \t]*\n", re.DOTALL)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}\s.*$|^.+\n[=-]{3,}[ \t]*$", re.MULTILINE)
_TABLE_ROW = re.compile(r"^[ \t]*\|.*$|^[ \t]*[:-]{3,}[ \t]*\|.*$", re.MULTILINE)
_WIKILINK = re.compile(r"\[\[[^\]\n]*\]\]")
_PLACEHOLDER = re.compile(r"\{\{[^}\n]*\}\}|\$\{[^}\n]*\}|<[A-Za-z_][\w -]*>|\[[A-Z][A-Z0-9_ -]+\]")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+")
_EMPHASIS = re.compile(r"(?<![\w*])(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1(?![\w*])")  # not `snake_case_names`
# A line that is only links and separators ("- [a](a.md) — [b](b.md)") is an index, not a claim.
_ONLY_LINKS = re.compile(r"^[\s\-*+\d.)]*(?:!?\[[^\]\n]*\]\([^)\n]*\)[\s,;:|/·•—–-]*)+$")
_KEY_VALUE = re.compile(r"^[\w .-]{1,40}:\s*\S+$")  # "Owner: Maria", "Status: done": a label, not an assertion
_WORD = re.compile(r"[A-Za-z]{2,}")
# Where a line has two `_WORD`s (two runs of two letters or more), found from the first two alone:
# a run, a character that is no letter, and later two letters, which are another run.
_TWO_WORDS = re.compile(r"[A-Za-z]{2}[A-Za-z]*[^A-Za-z].*?[A-Za-z]{2}", re.DOTALL)


def _line_statement(line: str) -> str:
    # Most lines are plain prose: a pattern runs only when the line holds the character every
    # match of it starts with or contains ("](" of a link, "`" of code, ...).
    if "](" in line and _ONLY_LINKS.match(line):
        return ""
    line = _BULLET.sub("", line)
    if "[[" in line:
        line = _WIKILINK.sub(" ", line)
    if "{" in line or "<" in line or "[" in line:
        line = _PLACEHOLDER.sub(" ", line)
    if "](" in line:
        line = _LINK.sub(lambda m: m.group(1), line)
    if "://" in line:
        line = _URL.sub(" ", line)
    if "*" in line or "_" in line:
        line = _EMPHASIS.sub(lambda m: m.group(2), line)
    if "`" in line:
        line = _INLINE_CODE.sub(" ", line)
    line = " ".join(line.split())
    if _KEY_VALUE.match(line) or not _TWO_WORDS.search(line):
        return ""
    return line


def statement_lines(text: str) -> list[str]:
    """The prose lines of a memory that can make a claim, markup removed, in order."""
    # Each pattern only where a match could start: what every match of it holds is in the text.
    text = text.replace("\r\n", "\n")
    if text.startswith("---"):
        text = _FRONT_MATTER.sub("", text)
    if "```" in text or "~~~" in text:
        text = FENCED_BLOCK.sub("\n", text)
    if "<!--" in text:
        text = _HTML_COMMENT.sub(" ", text)
    if "|" in text:
        text = _TABLE_ROW.sub("", text)
    if "#" in text or "\n=" in text or "\n-" in text:
        text = _HEADING.sub("", text)
    out = []
    for line in text.split("\n"):
        stmt = _line_statement(line)
        if stmt:
            out.append(stmt)
    return out


@lru_cache(maxsize=2048)
def statements(text: str) -> str:
    """The claim-bearing text of a memory: its prose lines, one per line. Plain text is unchanged
    apart from whitespace. Kept in a bounded cache: the conflict judge asks for a memory's
    statements once per pair (and again to quote), and a memory stands in several pairs."""
    if not any(mark in text for mark in ("|", "#", "[", "`", "{", "<", "---", "\n", "*", "_")):
        return text
    return "\n".join(statement_lines(text))
