"""Cheap tests that let a clause skip a regex that cannot match it.

A clause is read once per process but every reading runs some twenty case-insensitive patterns, and
most clauses hold none of what they look for; a substring test is a small part of a regex search.
Each test is a necessary condition only: it may pass a clause the regex then does not match, never
the other way. Imports nothing of the package (the bottom of its order, beside words.py).
"""

from __future__ import annotations

import re

_DIGIT = re.compile(r"\d")


def has_digit(text: str) -> bool:
    """Whether a pattern that needs a digit (`\\d`) could match."""
    return _DIGIT.search(text) is not None


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
