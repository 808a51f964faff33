"""Sentence and clause bounds around a phrase, and where a sentence starts.

Every veto reads the phrase's sentence or clause, so the bounds are decided once here: a sentence
runs between stops (".", "!", "?", a blank line, a list item), bounded to `_REACH` characters either
side so that a text without stops never makes each phrase read all of it; a clause is cut again at a
semicolon, a colon or a dash. `_at_sentence_start` decides capitalisation ("On 2026-03-31 we ...")
and whether a capitalised phrase is a name; `_opens_clause` whether a phrase can be the subject of
what follows ("Tomorrow is the freeze").
"""

from __future__ import annotations

import re


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)[.!?](?=\s)|\n[ \t]*\r?\n|\n(?=[ \t]*(?:[-*+]|\d+[.)])[ \t])")
_LINE_LEAD = re.compile(r"^\ufeff?[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+)*(?:\*\*|__|\*|_)?[ \t]*\Z")
_BULLET = re.compile(r"^\ufeff?[ \t]*(?:[-*+]|\d+[.)])[ \t]")
_AFTER_STOP = re.compile(r"[.!?:;][ \t]+(?:\*\*|__|\*|_)?\Z")
# Before a phrase followed by "is"/"was": nothing, a clause break or a conjunction makes the phrase the
# verb's subject ("Tomorrow is the freeze", "and today is the deadline"); after any other word it
# qualifies a longer subject ("the snapshot taken tonight is the restore point").
_OPENS_CLAUSE = re.compile(
    r"(?:^|[,;:()\[\]—–|*_>]|\s-|\b(?:and|but|or|nor|so|because|that|as|while|although|though|whereas|since|until|"
    r"then|said|says|think|thinks|hope|hopes|means|whether|if|when|why|how|what|where))[ \t]*\Z|^\W*\Z", re.IGNORECASE)
_NEXT_WORDS = re.compile(r"^[ \t,]*(\S+)[ \t]+(\S+)")


_REACH = 400


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence around text[start:end]: from the last stop before it to the next one after it."""
    # Bounded on both sides: a text without stops must not make every phrase read all of it.
    lo = max(0, start - _REACH)
    for m in _SENTENCE_END.finditer(text, lo, start):
        lo = m.end()
    hi = min(len(text), end + _REACH)
    nxt = _SENTENCE_END.search(text, end, hi)
    return lo, nxt.start() if nxt else hi


def _at_sentence_start(text: str, start: int, loose: bool = False) -> bool:
    """Whether a sentence starts at `start`. `loose` also counts "Note: Yesterday ..." and any line
    start (a capital there is no name); strictly, a hard-wrapped line goes on with its sentence."""
    reach = max(0, start - _REACH)
    line_start = text.rfind("\n", reach, start) + 1 or reach  # past the reach: not a line start
    before = text[line_start:start]
    stop = _AFTER_STOP.search(before)
    if stop:
        return loose or stop.group(0)[0] in ".!?"
    if not _LINE_LEAD.match(before):
        return False
    if loose or _BULLET.match(before) or line_start == 0:
        return True
    window = max(0, line_start - 1 - _REACH)
    previous = text[max(window, text.rfind("\n", window, line_start - 1) + 1):line_start].strip()
    return not previous or previous[-1] in ".!?:" or previous.startswith(("#", "|", ">", "```", "~~~"))


def _looks_like_a_name(text: str, end: int) -> bool:
    """"Today I Learned", "Yesterday Once More": the words after the phrase are title-cased too."""
    m = _NEXT_WORDS.match(text[end:end + 80])
    return bool(m and all(w[:1].isupper() for w in m.groups()))


def _clause_start(text: str, lo: int, pos: int) -> int:
    for b in _CLAUSE_BREAK.finditer(text, lo, pos):
        lo = b.end()
    return lo
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]—–|]|\s-\s")


def _opens_clause(text: str, start: int) -> bool:
    """Whether the phrase at `start` begins its clause (and so can be the subject of what follows)."""
    lo, _ = _sentence(text, start, start)
    return bool(_OPENS_CLAUSE.search(text[max(lo, start - 40):start]))
_CLAUSE_STOP = re.compile(r"[;:—–]|\s-\s")


def _clause(text: str, start: int, end: int, stops: re.Pattern = _CLAUSE_STOP) -> tuple[int, int]:
    """The clause around text[start:end]: its sentence cut at a semicolon, a colon or a dash (or `stops`)."""
    lo, hi = _sentence(text, start, end)
    for b in stops.finditer(text, lo, start):
        lo = b.end()
    nxt = stops.search(text, end, hi)
    return lo, nxt.start() if nxt else hi
