"""Reading a match into a date and writing it out.

`_read` turns a match into a `_Reading` - a day, a week (its Monday), a month or a year relative to
the memory's date - or says why it has none ("this Friday", "last night"); `_write` and
`_replacement` spell it the way docs/relative-dates.md fixes ("on 2026-03-31", "the week of
2026-03-23", "in 2026-03", "the 2026-03-31 deploy"), dropping the leading preposition when the text
already has one ("since yesterday" -> "since 2026-03-31") and keeping a sentence-initial capital.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from ...text.matched import matched_key
from .grammar import WEEKDAYS, _NUMBERS, Mention, Replacement
from .sentences import _at_sentence_start


_DROP_ON = re.compile(
    r"\b(?:as[ \t]+of|up[ \t]+to|since|until|till|by|before|after|from|on|for|to|through|thru|during)\s+\Z", re.IGNORECASE)


def _monday(d: dt.date) -> dt.date:
    return d - dt.timedelta(days=d.weekday())


def _month(d: dt.date, delta: int) -> str:
    index = d.year * 12 + d.month - 1 + delta
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _number(token: str) -> int:
    token = re.sub(r"\s+", " ", matched_key(token))
    if token in ("a", "an"):
        return 1
    return int(token) if token.isdigit() else _NUMBERS[token]


@dataclass(frozen=True)
class _Reading:
    """What a phrase means before it is written out: a day, a week, a month or a year."""

    grain: str  # "day", "week", "month", "year"
    lead: str  # "on" / "in" / "" - the preposition the replacement starts with
    value: str
    part: str = ""  # "morning", "afternoon", "evening" for a day


def _read(m: re.Match, d: dt.date) -> _Reading | str:
    """The reading of one match on day `d`, or why it has none."""
    # Each group as the key its tables know it by ("fıve" matched "five": see text/matched.py).
    g = {name: matched_key(text) if text else text for name, text in m.groupdict().items()}
    day = dt.timedelta(days=1)
    if g["dby"]:
        return _Reading("day", "on", (d - 2 * day).isoformat())
    if g["dat"]:
        return _Reading("day", "on", (d + 2 * day).isoformat())
    if g["yt"]:
        part = (g["ytpart"] or "").lower()
        if part == "night":
            return "ambiguous"  # "last night" / "yesterday night": not in the contract
        when = d - day if g["yt"].lower() == "yesterday" else d + day
        return _Reading("day", "on", when.isoformat(), part)
    if g["today"]:
        if g["earlier"] and g["earlier"].lower().startswith("later"):
            return "ambiguous"
        return _Reading("day", "on", d.isoformat())
    if g["thispart"]:
        return _Reading("day", "on", d.isoformat(), g["thispart"].lower())
    if g["tonight"]:
        return _Reading("day", "on", d.isoformat(), "evening")
    if g["agon"]:
        n, unit = _number(g["agon"]), g["agounit"].lower().rstrip("s")
        if n < 1:
            return "ambiguous"
        if unit == "day":
            return _Reading("day", "on", (d - n * day).isoformat())
        if unit == "week":
            return _Reading("week", "", _monday(d - 7 * n * day).isoformat())
        return _Reading("month", "in", _month(d, -n))
    if g["inn"]:
        n = _number(g["inn"])
        return _Reading("day", "on", (d + n * day).isoformat()) if n >= 1 else "ambiguous"
    rel, what = g["rel"].lower(), g["what"].lower()
    step = {"last": -1, "this": 0, "next": 1}[rel]
    if what == "week":
        return _Reading("week", "", _monday(d + 7 * step * day).isoformat())
    if what == "month":
        return _Reading("month", "in", _month(d, step))
    if what == "year":
        return _Reading("year", "in", f"{d.year + step:04d}")
    if rel == "this":
        return "ambiguous"  # "this Friday": this week's or the coming one
    target = WEEKDAYS.index(what)
    if rel == "last":  # the latest such weekday strictly before d
        return _Reading("day", "on", (d - ((d.weekday() - target) % 7 or 7) * day).isoformat())
    return _Reading("day", "on", (d + ((target - d.weekday()) % 7 or 7) * day).isoformat())


def _write(r: _Reading, possessive: bool, drop_lead: bool) -> str | None:
    if possessive:
        # "yesterday's deploy" -> "the 2026-03-31 deploy"; anything coarser than a day is too clever.
        return f"the {r.value}" if r.grain == "day" and not r.part else None
    if r.grain == "week":
        return f"the week of {r.value}"
    core = f"the {r.part} of {r.value}" if r.part else r.value
    return core if drop_lead else f"{r.lead} {core}"


def _replacement(text: str, m: re.Match, reading: _Reading) -> Replacement | Mention:
    start, end = m.span()
    phrase = m.group(0)
    drop = bool(_DROP_ON.search(text[max(0, start - 12):start]))
    out = _write(reading, bool(m.group("poss")), drop)
    if out is None:
        return Mention(start, end, phrase, "possessive")
    if phrase[:1].isupper() or _at_sentence_start(text, start):
        out = out[:1].upper() + out[1:]
    return Replacement(start, end, phrase, out)
