"""Pairs of memories on the same subject, found through an inverted index (never all pairs).

Two memories in the same group are on the same subject when they share enough significant words
(or tags). Words shared by a large part of the group would make the index quadratic, so words above
a document-frequency cap are left out of it; the pairs that share only such hot words are found
inside each hot subject by its members' other hot words (hot_subjects.py), still through an index.

The search works on numbers, not keys: each memory is its key's rank among the keys (so comparing
two numbers orders them as their keys), and the pairs found are each memory's set of partners of a
higher number. Only the pairs a stage is offered are built as `SubjectPair`s; the rest are counted.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

from ..model import Memory
from ..storage.gc_pause import gc_paused
from .duplicates import comparable
from .hot_subjects import paired_by_hot_words
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
    with gc_paused():  # a million small acyclic containers, all freed by reference counting
        search = _Search(memories, max_df)
        kept = [search.pair(*ranked) for ranked in search.ranked(min_overlap, min_shared, per_memory)]
    return sorted(kept, key=lambda p: (p.a, p.b))


def strongest_pairs(
    memories: list[Memory],
    limit: int,
    skip: Callable[[str, str], bool] | None = None,
    min_overlap: float = 0.4,
    min_shared: int = 2,
    max_df: int = 50,
    per_memory: int = 5,
) -> tuple[list[SubjectPair], int]:
    """The `limit` strongest of the pairs `subject_pairs` keeps (by overlap, then keys), leaving out
    those `skip(a, b)` refuses, and how many more of them there are.

    Only the pairs returned are built; the rest are counted, so a store with 50k candidate pairs
    and a cap of 400 builds 400.
    """
    out: list[SubjectPair] = []
    more = 0
    with gc_paused():  # a million small acyclic containers, all freed by reference counting
        search = _Search(memories, max_df)
        for a, b, overlap in search.ranked(min_overlap, min_shared, per_memory):
            if skip is not None and skip(search.keys[a], search.keys[b]):
                continue
            if len(out) < limit:
                out.append(search.pair(a, b, overlap))
            else:
                more += 1
    return out, more


@lru_cache(maxsize=4096)
def _tag_word(tag: str) -> str:
    return f"#tag:{tag.lower()}"


def _significant(m: Memory) -> tuple[frozenset[str], int]:
    """A memory's words here: `significant_of_normalized(normalized_body(m))` and its tags; and how
    many of them are the body's."""
    body = significant_of_normalized(normalized_body(m))
    return (body.union(map(_tag_word, m.tags)) if m.tags else body), len(body)


class _Search:
    """The index of one list of memories, and the pairs it discovers (each as one int)."""

    def __init__(self, memories: list[Memory], max_df: int) -> None:
        live = [m for m in memories if comparable(m)]
        by_key = {m.key: m for m in live}
        # A key seen twice counts with its last memory's words; each memory files its own words.
        self.keys: list[str] = sorted(by_key)
        number = {k: i for i, k in enumerate(self.keys)}
        found = [_significant(by_key[k]) for k in self.keys]
        self.words = [ws for ws, _ in found]
        self.body_size = [size for _, size in found]
        groups: dict[str, list[tuple[int, frozenset[str]]]] = defaultdict(list)
        for m in live:
            i = number[m.key]
            groups[m.group].append((i, self.words[i] if by_key[m.key] is m else _significant(m)[0]))
        # Whose words decide whether a pair is a duplicate or a reordering (the last memory of a key).
        self.token_memory = {number[m.key]: m for m in memories if m.key in number}
        self.odd = {i for i, m in self.token_memory.items() if m is not by_key[self.keys[i]]}
        self.token_sets: dict[int, frozenset[str]] = {}
        # The pairs discovered: each memory's partners of a higher number.
        self.partners: dict[int, set[int]] = defaultdict(set)
        for group in sorted(groups):
            self._discover(groups[group], max_df)

    def _same_tokens(self, a: int, b: int) -> bool:
        """Whether the two texts have the same set of words (a duplicate or a reordering, judged
        elsewhere), each text's set made once and only when asked."""
        sets = self.token_sets
        for i in (a, b):
            if i not in sets:
                sets[i] = frozenset(normalized_body(self.token_memory[i]).split())
        return sets[a] == sets[b]

    def _discover(self, filed: list[tuple[int, frozenset[str]]], max_df: int) -> None:
        """One group's pairs, through its rarer words only (their overlap is then measured on every
        word): all pairs of each word at most `max_df` memories have, and those hot_subjects.py
        finds among the memories sharing hotter ones."""
        by_frequency = Counter(chain.from_iterable(ws for _, ws in filed)).most_common()
        hot_end = bisect_left(by_frequency, -max_df, key=lambda wc: -wc[1])
        cold = frozenset(w for w, _ in by_frequency[hot_end : bisect_left(by_frequency, -1, key=lambda wc: -wc[1])])
        if cold:
            postings: dict[str, list[int]] = defaultdict(list)
            for i, ws in filed:
                for w in ws & cold:
                    postings[w].append(i)
            for ids in postings.values():
                ids.sort()
                for at in range(len(ids) - 1):
                    self.partners[ids[at]].update(ids[at + 1 :])
        if hot_end:
            hot = dict(by_frequency[:hot_end])
            members = {i for i, ws in filed if not ws.isdisjoint(hot)}  # each memory having a hot word
            for a, b in paired_by_hot_words(hot, members, self.words):
                self.partners[a].add(b)

    def ranked(self, min_overlap: float, min_shared: int, per_memory: int) -> Iterator[tuple[int, int, float]]:
        """(a, b, overlap) of the pairs kept: strongest first, then by keys; each memory with at most
        `per_memory` partners, the strongest ones."""
        words, body_size, odd = self.words, self.body_size, self.odd
        sizes = [len(ws) for ws in words]
        scored: list[tuple[float, int, int]] = []
        for a, partners in self.partners.items():
            wa, sa = words[a], sizes[a]
            for b in partners:
                shared = len(wa & words[b])
                if shared < min_shared:
                    continue
                ratio = shared / (sa if sa < (sb := sizes[b]) else sb)
                if ratio < min_overlap:
                    continue
                # Equal token sets have equal body words, all shared: fewer shared words cannot be.
                if (shared >= body_size[a] == body_size[b] or (odd and (a in odd or b in odd))) and self._same_tokens(a, b):
                    continue
                scored.append((-round(ratio, 4), a, b))
        scored.sort()
        taken = [0] * len(self.keys)
        for neg_overlap, a, b in scored:
            if taken[a] >= per_memory or taken[b] >= per_memory:
                continue
            taken[a] += 1
            taken[b] += 1
            yield a, b, -neg_overlap

    def pair(self, a: int, b: int, overlap: float) -> SubjectPair:
        return SubjectPair(self.keys[a], self.keys[b], overlap, tuple(sorted(self.words[a] & self.words[b])))

