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

import sys
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, compress, count, repeat
from operator import attrgetter, ne, not_

from ..model import Memory
from ..storage.gc_pause import gc_paused
from .duplicates import comparable
from .hot_subjects import paired_by_hot_words
from .pair_windows import Offer, places
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
    every later stage linearly in the size of the store. Sorted by keys: `pairs_to_offer` under no
    limit.
    """
    return pairs_to_offer(memories, sys.maxsize, min_overlap=min_overlap, min_shared=min_shared, max_df=max_df,
                          per_memory=per_memory).pairs


def pairs_to_offer(
    memories: list[Memory],
    limit: int,
    turn: int = 0,
    skip: Callable[[str, str], bool] | None = None,
    min_overlap: float = 0.4,
    min_shared: int = 2,
    max_df: int = 50,
    per_memory: int = 5,
) -> Offer[SubjectPair]:
    """Of the pairs `subject_pairs` keeps, leaving out those `skip(a, b)` refuses (before each
    memory's `per_memory` are chosen), the ones a run offers: at most `limit`, chosen by `turn`
    (pair_windows.py). Each part of the offer is sorted by keys.

    Only the pairs offered are built; the rest are counted, so a store with 50k candidate pairs
    and a cap of 400 builds 400.
    """
    with gc_paused():  # a million small acyclic containers, all freed by reference counting
        search = _Search(memories, max_df)
        ranked = search.ranked(min_overlap, min_shared, per_memory, skip)
        chosen = places(len(ranked), limit, turn)

        def built(at: Iterable[int]) -> list[SubjectPair]:
            return sorted((search.pair(*ranked[i]) for i in at), key=lambda p: (p.a, p.b))

        return Offer(built(chosen.strongest), built(chosen.turning), len(ranked), chosen.window, chosen.windows)


@lru_cache(maxsize=4096)
def _tag_word(tag: str) -> str:
    return f"#tag:{tag.lower()}"


class _Search:
    """The index of one list of memories, and the pairs it discovers (each memory's partners).

    Every step over all the memories is a C-level map; Python steps only over the postings of the
    rarer words and over the pairs found."""

    def __init__(self, memories: list[Memory], max_df: int) -> None:
        # (The lists as long as the store made here are let go as soon as they are used: the index
        # is built beside them.)
        is_live = list(map(comparable, memories))
        live = list(compress(memories, is_live))
        body_words = list(map(significant_of_normalized, map(normalized_body, live)))
        tags = list(map(attrgetter("tags"), live))
        own = list(map(frozenset.union, body_words, map(map, repeat(_tag_word), tags))) if any(tags) else body_words
        del tags
        live_keys = list(map(attrgetter("key"), live))
        # A key seen twice counts with its last memory's words; each memory files its own.
        last = dict(zip(live_keys, range(len(live))))
        self.keys: list[str] = sorted(last)
        chosen = list(map(last.__getitem__, self.keys))
        self.words = list(map(own.__getitem__, chosen))
        self.body_size = list(map(len, map(body_words.__getitem__, chosen)))
        del body_words
        # Whose words decide whether a pair is a duplicate or a reordering: the last memory of a key
        # among them all (comparable or not); "odd" where that is not the one whose words count.
        last_of_all = dict(zip(map(attrgetter("key"), memories), count()))
        self.token_place = list(map(last_of_all.__getitem__, self.keys))
        del last_of_all
        live_place = list(compress(count(), is_live))
        self.odd = set(compress(count(), map(ne, self.token_place, map(live_place.__getitem__, chosen))))
        self.memories = memories
        self.token_sets: dict[int, frozenset[str]] = {}
        # The pairs discovered: each memory's partners of a higher number (or its own, for a key seen
        # twice: a pair the same-token check then drops).
        self.partners: dict[int, set[int]] = defaultdict(set)
        number = dict(zip(self.keys, count()))
        numbers = list(map(number.__getitem__, live_keys))
        groups = list(map(attrgetter("group"), live))
        del last, chosen, is_live, live_place, number, live_keys, live
        if len(set(groups)) <= 1:
            self._discover(numbers, own, max_df)
            return
        filed: dict[str, tuple[list[int], list[frozenset[str]]]] = defaultdict(lambda: ([], []))
        for i, ws, group in zip(numbers, own, groups):
            filed[group][0].append(i)
            filed[group][1].append(ws)
        for group in sorted(filed):
            self._discover(*filed[group], max_df)

    def _same_tokens(self, a: int, b: int) -> bool:
        """Whether the two texts have the same set of words (a duplicate or a reordering, judged
        elsewhere), each text's set made once and only when asked."""
        sets = self.token_sets
        for i in (a, b):
            if i not in sets:
                sets[i] = frozenset(normalized_body(self.memories[self.token_place[i]]).split())
        return sets[a] == sets[b]

    def _discover(self, numbers: list[int], words: list[frozenset[str]], max_df: int) -> None:
        """One group's pairs, through its rarer words only (their overlap is then measured on every
        word): all pairs of each word at most `max_df` memories have, and those hot_subjects.py
        finds among the memories sharing hotter ones."""
        by_frequency = Counter(chain.from_iterable(words)).most_common()
        hot_end = bisect_left(by_frequency, -max_df, key=lambda wc: -wc[1])
        cold = frozenset(w for w, _ in by_frequency[hot_end : bisect_left(by_frequency, -1, key=lambda wc: -wc[1])])
        if cold:
            postings: dict[str, list[int]] = defaultdict(list)
            cold_words = list(map(cold.intersection, words))
            for i, ws in compress(zip(numbers, cold_words), cold_words):
                for w in ws:
                    postings[w].append(i)
            del cold_words
            partners = self.partners
            for ids in postings.values():
                ids.sort()
                for at in range(len(ids) - 1):
                    partners[ids[at]].update(ids[at + 1 :])
            del postings
        if hot_end:
            hot = dict(by_frequency[:hot_end])
            having = list(map(not_, map(frozenset(hot).isdisjoint, words)))  # each memory having a hot word
            for a, b in paired_by_hot_words(hot, set(compress(numbers, having)), self.words):
                self.partners[a].add(b)

    def ranked(self, min_overlap: float, min_shared: int, per_memory: int,
               skip: Callable[[str, str], bool] | None = None) -> list[tuple[int, int, float]]:
        """(a, b, overlap) of the pairs kept: strongest first, then by keys; each memory with at most
        `per_memory` partners, the strongest of those `skip(key a, key b)` does not refuse (a pair
        refused after the choice would have taken the place of one that is not).

        One Python step per pair, not C-level maps over all of them: most pairs fail `min_shared`
        after one intersection, and this loop leaves them there (on a store of natural text, maps
        over every pair took 1.3-3x its CPU and more memory)."""
        words, body_size, odd = self.words, self.body_size, self.odd
        sizes = list(map(len, words))
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
        if skip is not None:
            keys = self.keys
            scored = [s for s in scored if not skip(keys[s[1]], keys[s[2]])]
        scored.sort()
        taken = [0] * len(self.keys)
        out = []
        for neg_overlap, a, b in scored:
            if taken[a] >= per_memory or taken[b] >= per_memory:
                continue
            taken[a] += 1
            taken[b] += 1
            out.append((a, b, -neg_overlap))
        return out

    def pair(self, a: int, b: int, overlap: float) -> SubjectPair:
        return SubjectPair(self.keys[a], self.keys[b], overlap, tuple(sorted(self.words[a] & self.words[b])))

