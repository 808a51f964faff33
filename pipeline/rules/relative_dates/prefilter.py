"""The prefilter: whether a text might hold a relative or vague time phrase at all.

Most memories of a big store hold none, and a plan asks this of every one of them, so it is cheap
substring tests (and a regex only behind a substring that also occurs inside common words), and it
lives apart from the phrase grammar, whose patterns a plan compiles only when a text passes here.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WD = "|".join(WEEKDAYS)

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
