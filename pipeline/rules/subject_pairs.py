"""Pairs of memories on the same subject, found through an inverted index (never all pairs).

Two memories in the same group are on the same subject when they share enough significant words
(or tags). Words shared by a large part of the group would make the index quadratic, so words above
a document-frequency cap are left out of it; the pairs that share only such hot words are found
inside each hot subject by its members' other hot words (hot_subjects.py), still through an index.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from ..model import Memory
from .duplicates import comparable
from .hot_subjects import hot_pairs
from .text import normalized_body, significant_of_normalized


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
        ws = significant_of_normalized(normalized_body(m)) | frozenset(f"#tag:{t.lower()}" for t in m.tags)
        words[m.key] = ws
        for w in ws:
            index[(m.group, w)].append(m.key)
    # Pairs are discovered through the rarer words only; their overlap is then measured on every word.
    discovered: set[tuple[str, str]] = set()
    hot: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for (group, w), keys in index.items():
        if len(keys) > max_df:
            hot[group][w] = keys
            continue
        if len(keys) < 2:
            continue
        keys = sorted(keys)
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                discovered.add((a, b))
    for group in sorted(hot):
        discovered |= hot_pairs(hot[group], words)
    # A pair with equal token sets is a duplicate or a reordering, judged elsewhere: each distinct
    # token set gets a number once, so a pair compares two ints.
    token_set_ids: dict[frozenset[str], int] = {}
    token_set = {m.key: token_set_ids.setdefault(frozenset(normalized_body(m).split()), len(token_set_ids)) for m in memories if m.key in words}
    sizes = {k: len(ws) for k, ws in words.items()}
    scored: list[tuple[float, str, str]] = []
    for a, b in discovered:
        shared = len(words[a] & words[b])
        if shared < min_shared:
            continue
        ratio = shared / (sa if (sa := sizes[a]) < (sb := sizes[b]) else sb)
        if ratio < min_overlap or token_set[a] == token_set[b]:
            continue
        scored.append((-round(ratio, 4), a, b))
    scored.sort()  # strongest first, then by keys
    taken: Counter[str] = Counter()
    kept = []
    for neg_overlap, a, b in scored:
        if taken[a] >= per_memory or taken[b] >= per_memory:
            continue
        taken[a] += 1
        taken[b] += 1
        kept.append(SubjectPair(a, b, -neg_overlap, tuple(sorted(words[a] & words[b]))))
    return sorted(kept, key=lambda p: (p.a, p.b))
