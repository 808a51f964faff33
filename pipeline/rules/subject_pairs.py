"""Pairs of memories on the same subject, found through an inverted index (never all pairs).

Two memories in the same group are on the same subject when they share enough significant words
(or tags). Words shared by a large part of the group say nothing about the subject and would make
the index quadratic, so words above a document-frequency cap are left out of it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from ..model import Memory
from .duplicates import comparable
from .text import normalized_body, significant_words


@dataclass(frozen=True)
class SubjectPair:
    a: str
    b: str
    overlap: float  # shared significant words / the smaller set
    shared: tuple[str, ...]


def subject_pairs(
    memories: list[Memory],
    min_overlap: float = 0.4,
    min_shared: int = 2,
    max_df: int = 50,
    per_memory: int = 5,
) -> list[SubjectPair]:
    """Same-group pairs above `min_overlap`, excluding exact duplicates and pure reorderings.

    Each memory keeps at most `per_memory` partners (highest overlap first), which bounds the work of
    every later stage linearly in the size of the store.
    """
    words: dict[str, frozenset[str]] = {}
    index: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m in memories:
        if not comparable(m):
            continue
        ws = significant_words(m.body) | frozenset(f"#tag:{t.lower()}" for t in m.tags)
        words[m.key] = ws
        for w in ws:
            index[(m.group, w)].append(m.key)
    # Pairs are discovered through the rarer words only; their overlap is then measured on every word.
    discovered: set[tuple[str, str]] = set()
    for (_, w), keys in index.items():
        if len(keys) < 2 or len(keys) > max_df:
            continue
        keys = sorted(keys)
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                discovered.add((a, b))
    by_key = {m.key: m for m in memories}
    scored: list[SubjectPair] = []
    for a, b in discovered:
        ws = words[a] & words[b]
        if len(ws) < min_shared:
            continue
        ratio = len(ws) / min(len(words[a]), len(words[b]))
        if ratio < min_overlap:
            continue
        na, nb = normalized_body(by_key[a]), normalized_body(by_key[b])
        if na == nb or frozenset(na.split()) == frozenset(nb.split()):
            continue
        scored.append(SubjectPair(a, b, round(ratio, 4), tuple(sorted(ws))))
    scored.sort(key=lambda p: (-p.overlap, p.a, p.b))
    taken: Counter[str] = Counter()
    kept = []
    for p in scored:
        if taken[p.a] >= per_memory or taken[p.b] >= per_memory:
            continue
        taken[p.a] += 1
        taken[p.b] += 1
        kept.append(p)
    return sorted(kept, key=lambda p: (p.a, p.b))
