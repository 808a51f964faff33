"""Order of steps: whether two statements put the same steps in opposite orders.

"Drain, then upgrade" / "upgrade first, then drain" contradict though every word is shared, which no
word-level flip sees; "add the label before merging" / "remove the label after merging" is two flips
that cancel. This module finds the orderings a text states and decides when two of them are crossed.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ....rules.text import STOPWORDS, normalize
from .needles import may_have
from .readings import Reading, clauses
from .words import ANTONYM_OF, MODALS, PRONOUNS, _stem


def _order_swapped(a: Reading, b: Reading) -> bool:
    """'lint before tests' / 'tests before lint': the same sequence word with its sides exchanged."""
    for word in ("before", "after", "then"):
        if word in a.words and word in b.words:
            ia, ib = a.words.index(word), b.words.index(word)
            la, ra = set(a.words[:ia]), set(a.words[ia + 1 :])
            lb, rb = set(b.words[:ib]), set(b.words[ib + 1 :])
            if (ra - STOPWORDS) & (lb - STOPWORDS) and (la - STOPWORDS) & (rb - STOPWORDS) - {w for w in la & lb}:
                return True
    return False


_SEQUENCE = re.compile(
    r"(?P<first>.+?)\s*,?\s+(?:first\s*,?\s*(?:and\s+)?then|first\s+and|,?\s*then)\s+(?P<second>.+)"
    r"|(?P<a1>.+?)\s+before\s+(?P<a2>.+)"
    r"|(?P<b2>.+?)\s+(?:only\s+)?(?:after|once)\s+(?P<b1>.+)",
    re.IGNORECASE,
)


# Every match of `_SEQUENCE` holds one of these (see `needles`): most sentences order nothing.
_SEQUENCE_WORDS = ("then", "first", "before", "after", "once")

_SENTENCE_BREAK = re.compile(r"[.;!?]\s+|\n")


def steps(text: str) -> list[tuple[frozenset[str], frozenset[str]]]:
    """(what comes first, what comes second) for each ordering the text states, as word sets."""
    return list(_steps(text))


@lru_cache(maxsize=2048)
def _steps(text: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    if not may_have(text, _SEQUENCE_WORDS):
        return ()  # none of its sentences holds one: the text is not split to test each
    out = []
    for sentence in _SENTENCE_BREAK.split(text):
        if not may_have(sentence, _SEQUENCE_WORDS):
            continue
        m = _SEQUENCE.match(sentence.strip())
        if not m:
            continue
        first = m.group("first") or m.group("a1") or m.group("b1")
        second = m.group("second") or m.group("a2") or m.group("b2")
        fw, sw = _event(first), _event(second)
        if fw and sw:
            out.append((fw, sw))
    return tuple(out)


def _event(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in normalize(text).split()
                     if w not in STOPWORDS and w not in PRONOUNS and w not in MODALS and not w.isdigit() and len(w) > 2
                     and w not in ("first", "then", "only", "once", "start"))


def _reversed_steps(text_a: str, text_b: str) -> bool:
    """Both texts order the same two steps, in opposite orders ('drain, then upgrade' / 'upgrade
    first, then drain')."""
    for fa, sa in steps(text_a):
        for fb, sb in steps(text_b):
            crossed = len(fa & sb) + len(sa & fb)
            straight = len(fa & fb) + len(sa & sb)
            if fa & sb and sa & fb and crossed > straight:
                return True
    return False


def _opposite_actions(a: Reading, b: Reading) -> bool:
    """'add the label before merging' / 'remove the label after merging': opposite actions in
    opposite order are two flips that cancel, not the same steps reordered."""
    order = {"before", "after", "first", "last"}
    return any(ANTONYM_OF[w] in b.antonyms and w not in b.antonyms for w in a.antonyms - order)


def _step_sentences(text_a: str, text_b: str) -> tuple[str, str]:
    """The two sentences that order the same steps oppositely."""
    for sa in _SENTENCE_BREAK.split(text_a):
        for sb in _SENTENCE_BREAK.split(text_b):
            if steps(sa) and steps(sb) and _reversed_steps(sa, sb):
                return sa.strip(), sb.strip()
    return clauses(text_a)[0].strip(), clauses(text_b)[0].strip()
