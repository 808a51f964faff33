"""Past against present: which statement is history, and when a clash is one fact superseding
another.

"We used to pin Node 16" says nothing about now, so it cannot contradict "pin Node 20" (`_PAST`, read
into `Reading.past`). Two statements that clash where either is dated ("as of", "no longer",
"raised") still clash, but as an update: `_dated` gives the verdict the kind "superseded". Kept
apart so that the judge's idea of time is in one place; imports nothing of the package.
"""

from __future__ import annotations

import re


# A statement about the past ("we used to", "we used Jenkins", "the old API") is history: it cannot
# contradict what is true now. "Redis is (widely) used" is the present passive, not the past, so
# "used" and "tried" count only after a person who did it.
_PAST = re.compile(
    r"\b(?:used to|(?:we|i|they|you|the team)\s+(?:\w+ly\s+|once\s+|also\s+)?(?:used|tried)"
    r"|previously|formerly|originally|in the past|back then|until (?:19|20)\d\d|the old|the legacy)\b",
    re.IGNORECASE,
)


_DATED_WORDS = re.compile(r"\b(as of|since|now|no longer|raised|lowered|was removed|replaced)\b", re.I)


def _dated(verdict: tuple[bool, str, str], text_a: str, text_b: str) -> tuple[bool, str, str]:
    if _DATED_WORDS.search(text_a + " " + text_b):
        return True, "superseded", verdict[2] + " (one supersedes the other)"
    return verdict
