"""The phrase grammar and what a scan returns.

Decides which stretches of text are candidate phrases at all: `PHRASE` (the relative expressions the
contract can date: "yesterday", "3 days ago", "last Tuesday", "next week", ...) and `VAGUE` (the
ones it never can: "recently", "soon"), each one precompiled pattern, behind `might_have_dates`, a
substring prefilter that rejects most memories before any regex runs. Whether a match is then
rewritten is decided above this module; the result records (`Replacement`, `Mention`, `DateScan`)
live here because every other module of the package builds or reads them.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from dataclasses import dataclass


# --- results ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replacement:
    start: int  # character offsets into the scanned text
    end: int
    phrase: str  # text[start:end]
    replacement: str


@dataclass(frozen=True)
class Mention:
    """A phrase found and deliberately not rewritten."""

    start: int
    end: int
    phrase: str
    why: str  # "vague", "possessive", "ambiguous", "no date", ...


@dataclass(frozen=True)
class DateScan:
    replacements: tuple[Replacement, ...] = ()
    vague: tuple[Mention, ...] = ()
    held: tuple[Mention, ...] = ()


EMPTY = DateScan()

# --- the grammar -----------------------------------------------------------------------------------

_WORD_NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                 "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
_NUMBERS = {w: i for i, w in enumerate(_WORD_NUMBERS, start=1)}
for _i, _unit in enumerate(["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"], start=1):
    _NUMBERS[f"twenty-{_unit}"] = 20 + _i
    _NUMBERS[f"twenty {_unit}"] = 20 + _i
_NUMBERS["thirty"] = 30
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

# Whitespace inside a phrase: spaces, or one line break of a hard-wrapped paragraph (never a blank line).
_S = r"(?:[ \t]+(?:\r?\n[ \t]*)?|\r?\n[ \t]*)"
_NUM = r"(?:\d{1,3}|" + "|".join(sorted((re.escape(w).replace(r"\ ", _S) for w in _NUMBERS), key=len, reverse=True)) + ")"
_WD = "|".join(WEEKDAYS)
_PARTS = "morning|afternoon|evening"

# `\b(?=...)` first: the engine tries the lookbehind and the alternatives only where a phrase can start.
PHRASE = re.compile(
    r"\b(?=[tyelinaofs0-9])(?<![\w/\\.\-=@$<{#~+'’])(?:"
    rf"(?P<dby>the{_S}day{_S}before{_S}yesterday)"
    rf"|(?P<dat>the{_S}day{_S}after{_S}tomorrow)"
    rf"|(?P<yt>yesterday|tomorrow)(?:{_S}(?P<ytpart>{_PARTS}|night))?"
    rf"|(?P<earlier>earlier{_S}|later{_S})?(?P<today>today)"
    rf"|this{_S}(?P<thispart>{_PARTS})"
    r"|(?P<tonight>tonight)"
    rf"|(?P<agon>{_NUM}|an?){_S}(?P<agounit>days?|weeks?|months?){_S}ago"
    rf"|in{_S}(?P<inn>{_NUM}){_S}days?"
    rf"|(?P<rel>last|next|this){_S}(?P<what>week|month|year|{_WD})"
    r")(?P<poss>['’]s(?!\w))?(?![\w/\\\-=@>}'’]|\.\w)",
    re.IGNORECASE,
)

VAGUE = re.compile(
    r"\b(?=[rslatmenc])(?<![\w/\\.\-=@$<{#~'’])(?:recently|soon|lately|a{S}while{S}ago|the{S}other{S}day|"
    r"(?:a{S}few|several|a{S}couple{S}of|some|many){S}(?:days|weeks|months|years){S}ago|some{S}time{S}ago|"
    r"earlier(?!{S}(?:today|than)\b)|nowadays|these{S}days|currently|now)(?![\w/\\\-=@>}]|\.\w)".replace("{S}", _S),
    re.IGNORECASE,
)

# Cheap test first: most memories contain none of these words. Substring tests on the lowered text
# are C-speed; a regex runs only behind a substring that also occurs inside common words ("know").
_STRONG = ("yesterday", "today", "tonight", "tomorrow", " ago", "recently", "soon", "lately", "other day",
           "earlier", "nowadays", "currently", "these days")
_NOW = re.compile(r"\bnow\b")
_RELATIVE_WORD = re.compile(r"\b(?:last|next|this)\s+(?:week|month|year|morning|afternoon|evening|" + _WD + r")")
_IN_DAYS = re.compile(r"\bin\s+\S+\s+days?\b")


# Every text `might_have_dates` passes holds one of these: its substring tests' words, and the words
# behind which its patterns run.
_TRIGGERS = (*_STRONG, "now", "last", "next", "this", " day")


def texts_might_have_dates(texts: list[str]) -> list[int]:
    """The places of the texts that `might_have_dates` passes, in order, for many texts at once.

    The trigger words are searched in the texts joined, lowered once (C loops over one string instead
    of a dozen tests for each of 200k texts), and `might_have_dates` itself is asked only of the texts
    a trigger was found in: the same answer, text by text. Joined a few thousand at a time, so the
    copies stay small beside a big store.
    """
    return [first + place for first in range(0, len(texts), _JOINED) for place in _might_in(texts[first:first + _JOINED])]


_JOINED = 4096


def _might_in(texts: list[str]) -> list[int]:
    joined = "\x00".join(texts)
    if joined.isascii():  # lowering keeps every text's length: its start in the joined text is known
        low, lengths = joined.lower(), map(len, texts)
    else:
        parts = [t.lower() for t in texts]
        low, lengths = "\x00".join(parts), map(len, parts)
    starts = list(accumulate((n + 1 for n in lengths), initial=0))  # of each text, then past the end
    found: set[int] = set()
    for word in _TRIGGERS:
        at = low.find(word)
        while at >= 0:
            place = bisect_right(starts, at) - 1
            found.add(place)
            at = low.find(word, starts[place + 1])  # one hit a text is enough
    return [place for place in sorted(found) if might_have_dates(texts[place])]


def might_have_dates(text: str) -> bool:
    """False when `text` surely holds no relative or vague time phrase."""
    low = text.lower()
    # `any(k in low for k in _STRONG)` written out: the generator's steps cost more than the tests.
    if ("yesterday" in low or "today" in low or "tonight" in low or "tomorrow" in low or " ago" in low
            or "recently" in low or "soon" in low or "lately" in low or "other day" in low or "earlier" in low
            or "nowadays" in low or "currently" in low or "these days" in low):
        return True
    if "now" in low and _NOW.search(low):
        return True
    if ("last" in low or "next" in low or "this" in low) and _RELATIVE_WORD.search(low):
        return True
    return " day" in low and bool(_IN_DAYS.search(low))
