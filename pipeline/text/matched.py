"""The key of a word a case-insensitive pattern matched, for the tables it is then looked up in.

With `re.IGNORECASE`, Python's Unicode patterns let four letters outside ASCII match ASCII ones:
'İ' (U+0130) and 'ı' (U+0131) match i, 'ſ' (U+017F) matches s, and the Kelvin sign 'K' (U+212A)
matches k. So "fıve days ago" is a match of "five days ago", but lowered it is "fıve", which no table
of number or unit words holds: looked up as it was, one such memory failed a whole plan (KeyError).
"""

from __future__ import annotations

_AS_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def matched_key(word: str) -> str:
    """`word` lowered, each of the four letters that match ASCII ones made that ASCII letter."""
    return word.translate(_AS_ASCII).lower()
