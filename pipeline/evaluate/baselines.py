"""The seeds' own heuristics, scored on the same cases in the same run.

- dream's duplicate rule (seed 001 STEP 3): >= 60 % of significant words shared -> duplicate. As a
  reorder judge it says "same meaning" for every pair of reordered words.
- dream's contradiction rule (seed 001 STEP 4): overlap in [0.4, 0.6) plus a negation pair.
- iii's token-set rule (seed 003): equal token sets -> duplicate ("same meaning").
"""

from __future__ import annotations

from typing import Any, Callable

# dream's own definitions, verbatim: split on whitespace, its stopword list, words longer than 2.
_DREAM_STOPWORDS = {
    "the", "a", "an", "is", "are", "was", "were", "be", "been", "have", "has", "had", "do", "does", "did", "will",
    "would", "could", "should", "may", "might", "can", "shall", "to", "of", "in", "for", "on", "with", "at", "by",
    "from", "as", "into", "through", "during", "before", "after", "this", "that", "it", "not", "no", "but", "or",
    "and", "if", "then", "than", "so",
}
_NEGATION_PAIRS = [
    ("do ", "do not "), ("do ", "don't "), ("use ", "avoid "), ("use ", "stop using "),
    ("prefer ", "don't prefer "), ("always ", "never "),
]


def dream_significant_words(text: str) -> set[str]:
    return {w for w in set(text.lower().split()) - _DREAM_STOPWORDS if len(w) > 2}


def dream_overlap(a: str, b: str) -> float:
    wa, wb = dream_significant_words(a), dream_significant_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def dream_duplicate(a: str, b: str) -> bool:
    return dream_overlap(a, b) >= 0.6


def dream_contradiction(a: str, b: str) -> bool:
    if not 0.4 <= dream_overlap(a, b) < 0.6:
        return False
    la, lb = a.lower(), b.lower()
    return any((x in la and y in lb) or (y in la and x in lb) for x, y in _NEGATION_PAIRS)


def iii_token_set(a: str, b: str) -> bool:
    from ..rules.text import token_set

    return token_set(a) == token_set(b)


PAIR_BASELINES: dict[str, dict[str, Callable[[str, str], bool]]] = {
    "reorder": {"dream_overlap_60": dream_duplicate, "iii_token_set": iii_token_set},
    "conflict": {"dream_negation_pairs": dream_contradiction},
}


def run_pair_baselines(stage: str, cases: list[dict[str, Any]]) -> dict[str, dict[str, bool]]:
    return {
        name: {c["id"]: fn(c["a"], c["b"]) for c in cases}
        for name, fn in PAIR_BASELINES.get(stage, {}).items()
    }


def majority(cases: list[dict[str, Any]]) -> dict[str, bool]:
    """Always the most common label: the floor any judge must beat."""
    positives = sum(1 for c in cases if c["label"])
    guess = positives * 2 >= len(cases)
    return {c["id"]: guess for c in cases}
