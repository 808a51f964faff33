"""The values a statement carries: durations in seconds, frequencies as periods in hours, weekdays,
and what a number counts or is per.

"60 seconds" and "1 minute", "nightly" and "every 24 hours" must compare equal, and "3 replicas" /
"5 retries" must not compare at all: a number clash is one only about the same measure. Read once per
clause by `readings.read`.
"""

from __future__ import annotations

import re

from ....rules.text import STOPWORDS
from ....text.matched import matched_key
from .needles import has_number, may_have_word
from .words import UNITS, _stem


_MEASURE = re.compile(r"\bper\s+(?:the\s+|a\s+|an\s+)?([A-Za-z]\w+)|\b\d+(?:\.\d+)?\s+([A-Za-z]\w+)")
_PER = frozenset(("per",))


def _measures(clause: str) -> frozenset[str]:
    """What the numbers of a clause are of: the thing a number counts ("4 replicas") and what a rate
    is per ("per user"). Units of time and size say how much, not of what."""
    if not has_number(clause) and not may_have_word(clause, _PER):
        return frozenset()  # every match of `_MEASURE` has a number starting a word or a "per"
    out = set()
    for per, counted in _MEASURE.findall(clause):
        w = (per or counted).lower()
        if w in UNITS or w in STOPWORDS or w.rstrip("s") in UNITS or w in _SECONDS or w.rstrip("s") in _SECONDS:
            continue
        out.add(("per " if per else "") + _stem(w))
    return frozenset(out)


_WEEKDAY_RE = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b", re.IGNORECASE)


_DURATION = re.compile(r"\b(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?)\b", re.I)
_SECONDS = {"ms": 0.001, "millisecond": 0.001, "s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600,
            "hr": 3600, "hour": 3600, "day": 86400, "week": 604800, "month": 2592000, "year": 31536000}


_PERIOD_WORDS = {"hourly": 1.0, "daily": 24.0, "nightly": 24.0, "weekly": 168.0, "monthly": 720.0, "yearly": 8760.0,
                 "annually": 8760.0, "quarterly": 2190.0}
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_EVERY = re.compile(
    r"\b(?:every|each)\s+(\d+)\s*(minutes?|hours?|days?|weeks?|months?)\b|\b(?:every|each)\s+(minute|hour|day|night|week|month|"
    + _WEEKDAY + r")\b|\b(once|twice)\s+(?:a|an|per)\s+(hour|day|week|month)\b|\b(hourly|daily|nightly|weekly|monthly|yearly|"
    r"annually|quarterly)\b|\bon\s+" + _WEEKDAY + r"s\b",
    re.IGNORECASE,
)
# Every match of `_EVERY` holds one of these words: "every"/"each", "once"/"twice", an adverb in -ly,
# a weekday in the plural ("on Sundays").
_EVERY_NEEDLES = frozenset("""every each once twice hourly daily nightly weekly monthly yearly annually quarterly mondays tuesdays
    wednesdays thursdays fridays saturdays sundays""".split())
_HOURS = {"minute": 1 / 60, "hour": 1.0, "day": 24.0, "night": 24.0, "week": 168.0, "month": 720.0}


def frequencies(text: str) -> tuple[set[float], str]:
    """How often something happens, as a period in hours, and the text without those phrases."""
    found: set[float] = set()
    if not may_have_word(text, _EVERY_NEEDLES):
        return found, text

    def take(m: re.Match) -> str:
        n, unit, single, times, per, word = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)
        # each word as the tables know it ("mınutes" matched "minutes": see text/matched.py)
        if n:
            found.add(float(n) * _HOURS[matched_key(unit).rstrip("s")])
        elif single:
            found.add(_HOURS.get(matched_key(single), 168.0))  # a weekday: weekly
        elif times:
            found.add(_HOURS[matched_key(per)] / (2 if matched_key(times) == "twice" else 1))
        elif word:
            found.add(_PERIOD_WORDS[matched_key(word)])
        else:
            found.add(168.0)  # "on Sundays"
        return " "

    return found, _EVERY.sub(take, text)


def durations(text: str) -> tuple[set[float], str]:
    """Durations in seconds, and the text without them (one pass, as `frequencies` does)."""
    out: set[float] = set()
    if not has_number(text):
        return out, text  # every duration starts with a number, which starts a word

    def take(m: re.Match) -> str:
        value, unit = m.group(1), m.group(2)
        u = unit.lower().rstrip("s") if unit.lower() not in ("s", "ms") else unit.lower()
        out.add(float(value) * _SECONDS.get(u, 1))
        return " "

    return out, _DURATION.sub(take, text)
