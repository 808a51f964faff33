"""Cheap tests that let a clause skip a regex that cannot match it.

A clause is read once per process but every reading runs some twenty case-insensitive patterns, and
most clauses hold none of what they look for; a substring test is a small part of a regex search.
Each test is a necessary condition only: it may pass a clause the regex then does not match, never
the other way. Imports nothing of the package (the bottom of its order, beside words.py); words are
the runs `rules.text.normalize` splits a text into.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ....rules.text import normalize

_DIGIT = re.compile(r"\d")
_NUMBER = re.compile(r"\b\d")


def has_digit(text: str) -> bool:
    """Whether a pattern that needs a digit (`\\d`) could match."""
    return _DIGIT.search(text) is not None


@lru_cache(maxsize=8192)
def has_number(text: str) -> bool:
    """Whether a pattern that needs a number starting a word (`\\b\\d`: "6 replicas", "#412",
    "2026-01-02", not the "2" of "v2") could match. Cached: a reading asks it of one clause for
    several patterns."""
    return _NUMBER.search(text) is not None


def may_match(text: str, hint: re.Pattern[str]) -> bool:
    """Whether a pattern each of whose matches holds a match of `hint` could match: a short pattern
    the engine finds fast (one that starts with a character class, "[rR]\\d") standing in for a slow
    one (words and `\\b`s tried at every place)."""
    return hint.search(text) is not None


def may_have(text: str, needles: tuple[str, ...]) -> bool:
    """Whether a case-insensitive pattern each of whose matches holds one of `needles` (lowercase
    ASCII) could match. Text that is not ASCII is always tried: case-insensitive matching folds a
    few letters that lower() keeps apart ("ſ" matches "s", "K" matches "k")."""
    if not text.isascii():
        return True
    low = text.lower()
    for n in needles:  # a loop, not any(...): a generator costs more than the tests it runs
        if n in low:
            return True
    return False


def may_have_word(text: str, words: frozenset[str]) -> bool:
    """Whether a case-insensitive pattern each of whose matches holds one of `words` (lowercase ASCII
    letters and digits) as a whole word could match: a word the pattern bounds on both sides by `\\b`
    or by a character that is no letter, digit or "_" (a space, '#', '-'). Stricter than `may_have`
    where a needle is part of common words ("per" of "upper", "pr" of "production", "day" of
    "Fridays"). Text that is not ASCII is always tried."""
    if not text.isascii():
        return True
    return not words.isdisjoint(_words(text))


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    # An ASCII text's runs of letters and digits, lowered: a word bounded as above has on each side
    # the text's edge or a character that is no letter, digit or "_", where `normalize` splits too.
    # Cached: a reading tests one clause for several patterns.
    return frozenset(normalize(text).split())
