"""The phrase grammar and what a scan returns.

Decides which stretches of text are candidate phrases at all: `PHRASE` (the relative expressions the
contract can date: "yesterday", "3 days ago", "last Tuesday", "next week", ...) and `VAGUE` (the
ones it never can: "recently", "soon"), each one precompiled pattern, behind `might_have_dates`, a
substring prefilter that rejects most memories before any regex runs (`prefilter.py`, which a plan
imports without these patterns). Whether a match is then rewritten is decided above this module;
the result records (`Replacement`, `Mention`, `DateScan`) live here because every other module of
the package builds or reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .prefilter import _WD, WEEKDAYS as WEEKDAYS  # the package reads the weekdays here


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

# Whitespace inside a phrase: spaces, or one line break of a hard-wrapped paragraph (never a blank line).
_S = r"(?:[ \t]+(?:\r?\n[ \t]*)?|\r?\n[ \t]*)"
_NUM = r"(?:\d{1,3}|" + "|".join(sorted((re.escape(w).replace(r"\ ", _S) for w in _NUMBERS), key=len, reverse=True)) + ")"
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
