"""Pairs of memories on the same subject, found through an inverted index (never all pairs).

Two memories in the same group are on the same subject when they share enough significant words
(or tags). Words shared by a large part of the group would make the index quadratic, so words above
a document-frequency cap are left out of it; the pairs that share only such hot words are found
inside each hot subject by its members' other hot words (hot_subjects.py), still through an index.

The search works on numbers, not keys: each memory is its key's rank among the keys (so comparing
two numbers orders them as their keys), and the pairs found through a rarer word are each memory's
set of partners of a higher number; those found in hot subjects, pairs of numbers. Only the pairs a
stage is offered are built as `SubjectPair`s; the rest are counted.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar
from itertools import chain, compress, count, islice, repeat
from operator import attrgetter, eq, lt, ne, not_

from ..model import Memory
from ..storage.gc_pause import gc_paused
from .duplicates import comparable_texts
from . import native
from .hot_subjects import paired_by_hot_words
from .pair_windows import Offer, places
from .text import normalized_body, significant_of_each


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
    # A million small acyclic containers, all freed by reference counting: the search's are freed as
    # `_offer` returns, before the collector is back, so its first collection walks only the offer
    # (it walked the whole search when it ran while the search was still alive: 30 ms on a bank of
    # 50k memories).
    with gc_paused():
        return _offer(memories, limit, turn, skip, min_overlap, min_shared, max_df, per_memory)


def _offer(memories: list[Memory], limit: int, turn: int, skip: Callable[[str, str], bool] | None,
           min_overlap: float, min_shared: int, max_df: int, per_memory: int) -> Offer[SubjectPair]:
    search = _Search(memories, max_df)
    ranked = search.ranked(min_overlap, min_shared, per_memory, skip)
    chosen = places(len(ranked), limit, turn)

    def built(at: Iterable[int]) -> list[SubjectPair]:
        return sorted((search.pair(*ranked[i]) for i in at), key=lambda p: (p.a, p.b))

    return Offer(built(chosen.strongest), built(chosen.turning), len(ranked), chosen.window, chosen.windows)


@lru_cache(maxsize=4096)
def _tag_word(tag: str) -> str:
    return f"#tag:{tag.lower()}"


T = TypeVar("T")


def _in_order(values: Sequence[T], order: Sequence[int]) -> Sequence[T]:
    """`values` in `order` (their places), a new list only when that is not their own order."""
    return values if order == range(len(values)) else list(map(values.__getitem__, order))


class _Search:
    """The index of one list of memories, and the pairs it discovers.

    Every step over all the memories is a C-level map; Python steps only over the postings of the
    rarer words and over the pairs found."""

    def __init__(self, memories: list[Memory], max_df: int) -> None:
        # (The lists as long as the store made here are let go as soon as they are used: the index
        # is built beside them.)
        # is_live None: every memory is comparable (the usual case, asked without a list).
        live, texts, is_live = comparable_texts(memories)
        # A memory's tags are words of its own ("#tag:..."; no word of a normal form has a "#"), after
        # its body's; the bodies' sizes are counted before them.
        own, body_sizes = significant_of_each(texts, list(map(attrgetter("tags"), live)), _tag_word)
        del texts
        live_keys = list(map(attrgetter("key"), live))
        # The memories in the order of their keys (a stable sort: a key seen twice lists its
        # memories in their order); each memory is numbered by its key's place. A range when they
        # come in that order already, each key once, as every reader lists them: nothing to reorder.
        chosen: Sequence[int] = range(len(live))
        if not all(map(lt, live_keys, islice(live_keys, 1, None))):
            chosen = sorted(chosen, key=live_keys.__getitem__)
        self.keys: Sequence[str] = _in_order(live_keys, chosen)
        self.memories = memories
        self.token_sets: dict[int, frozenset[str]] = {}
        # The pairs discovered through a rarer word: each memory's partners of a higher number (or its
        # own, for a key seen twice: a pair the same-token check then drops); the others, found in hot
        # subjects, as pairs (a, b), a < b, in the order hot_subjects.py gives them (a dict's keys).
        self.partners: dict[int, set[int]] = defaultdict(set)
        self.hot_pairs: dict[tuple[int, int], None] = {}
        groups: Sequence[str] = list(map(attrgetter("group"), live))
        several_groups = len(set(groups)) > 1
        numbers: Iterable[int]  # each memory's number, in the order of `words` and `groups`
        words: Sequence[tuple[str, ...]]
        if isinstance(chosen, range) or not any(map(eq, self.keys, islice(self.keys, 1, None))):
            # Every key once (the usual case): a memory's number is its place in `chosen`, the words
            # filed are those that count, and, when every memory is comparable, its own decide
            # whether a pair is a duplicate (no map of the keys is made).
            self.words = words = _in_order(own, chosen)
            self.body_size = _in_order(body_sizes, chosen)
            numbers = range(len(chosen))
            if several_groups:
                groups = _in_order(groups, chosen)
            if is_live is None:
                self.token_place = chosen
                self.odd: set[int] = set()
            else:
                self._token_places(is_live, chosen)
        else:
            # A key seen twice counts with its last memory's words; each memory files its own.
            last = dict(zip(live_keys, count()))
            self.keys = sorted(last)
            chosen = list(map(last.__getitem__, self.keys))
            self.words = list(map(own.__getitem__, chosen))
            self.body_size = list(map(body_sizes.__getitem__, chosen))
            number = dict(zip(self.keys, count()))
            numbers, words = list(map(number.__getitem__, live_keys)), own
            self._token_places(is_live, chosen)
            del last, number
        del own, body_sizes, chosen, is_live, live_keys, live
        if not several_groups:
            self._discover(numbers, words, max_df)
        else:
            filed: dict[str, tuple[list[int], list[tuple[str, ...]]]] = defaultdict(lambda: ([], []))
            for i, ws, group in zip(numbers, words, groups):
                filed[group][0].append(i)
                filed[group][1].append(ws)
            for group in sorted(filed):
                self._discover(*filed[group], max_df)
        # A pair found both ways is kept once, as a partner: the hot pairs are looked up in the
        # partners, or the partners' pairs taken out of them, whichever walks fewer pairs.
        partners = self.partners
        if partners and self.hot_pairs:
            if len(self.hot_pairs) < sum(map(len, partners.values())):
                self.hot_pairs = {p: None for p in self.hot_pairs if p[1] not in partners.get(p[0], ())}
            else:  # the partners' pairs taken out of them, by a C-level map
                deque(map(self.hot_pairs.pop, self._partner_pairs(), repeat(None)), maxlen=0)

    def _token_places(self, is_live: list[bool] | None, chosen: Sequence[int]) -> None:
        """Whose words decide whether a pair is a duplicate or a reordering: the last memory of a key
        among them all (comparable or not); "odd" where that is not the one whose words count (the
        memory `chosen` for the key, of those comparable: `is_live`, None when all are)."""
        last_of_all = dict(zip(map(attrgetter("key"), self.memories), count()))
        self.token_place = list(map(last_of_all.__getitem__, self.keys))
        del last_of_all
        live_place = range(len(self.memories)) if is_live is None else list(compress(count(), is_live))
        self.odd = set(compress(count(), map(ne, self.token_place, map(live_place.__getitem__, chosen))))

    def _same_tokens(self, a: int, b: int) -> bool:
        """Whether the two texts have the same set of words (a duplicate or a reordering, judged
        elsewhere), each text's set made once and only when asked."""
        sets = self.token_sets
        for i in (a, b):
            if i not in sets:
                sets[i] = frozenset(normalized_body(self.memories[self.token_place[i]]).split())
        return sets[a] == sets[b]

    def _discover(self, numbers: Iterable[int], words: Sequence[tuple[str, ...]], max_df: int) -> None:
        """One group's pairs, through its rarer words only (their overlap is then measured on every
        word): all pairs of each word at most `max_df` memories have, and those hot_subjects.py
        finds among the memories sharing hotter ones."""
        by_frequency = _document_frequencies(list(words))
        hot_end = bisect_left(by_frequency, -max_df, key=lambda wc: -wc[1])
        cold = frozenset(w for w, _ in by_frequency[hot_end : bisect_left(by_frequency, -1, key=lambda wc: -wc[1])])
        if cold:
            postings: dict[str, list[int]] = defaultdict(list)
            # Most memories may have no cold word: asked first, without making a set for each.
            having = map(not_, map(cold.isdisjoint, words))
            for i, ws in compress(zip(numbers, words), having):
                for w in cold.intersection(ws):
                    postings[w].append(i)
            partners = self.partners
            for ids in postings.values():
                ids.sort()
                for at in range(len(ids) - 1):
                    partners[ids[at]].update(ids[at + 1 :])
            del postings
        if hot_end:
            # Every member: those without two hot words are left out as their hot words are looked up
            # (a pass to find first those having one cost 11 ms on a bank of 50k memories, all having).
            found = paired_by_hot_words(dict(by_frequency[:hot_end]), numbers, self.words)
            if self.hot_pairs:  # a group before this one had some
                self.hot_pairs.update(found)
            else:
                self.hot_pairs = found

    def _partner_pairs(self) -> Iterator[tuple[int, int]]:
        """The pairs of `partners`, (a, b), each memory's together."""
        return chain.from_iterable(map(zip, map(repeat, self.partners), self.partners.values()))

    def ranked(self, min_overlap: float, min_shared: int, per_memory: int,
               skip: Callable[[str, str], bool] | None = None) -> list[tuple[int, int, float]]:
        """(a, b, overlap) of the pairs kept: strongest first, then by keys; each memory with at most
        `per_memory` partners, the strongest of those `skip(key a, key b)` does not refuse (a pair
        refused after the choice would have taken the place of one that is not).

        One Python step per pair, not C-level maps over all of them: most pairs fail `min_shared`
        after one intersection, and this loop leaves them there (on a store of natural text, maps
        over every pair took 1.3-3x its CPU and more memory)."""
        words, n = list(self.words), len(self.keys)
        # Each memory's partners one after the other, so its words stay in the cache (a fifth less
        # CPU than in a set's order on the crux bench store: 1,000 memories of some 30 words).
        by_ratio = _scored_pairs(
            chain(self._partner_pairs(), self.hot_pairs), words, list(map(len, words)), list(self.body_size),
            self.odd, n, min_shared, min_overlap, self._same_tokens)
        if skip is not None:
            keys = self.keys
            for ratio, codes in by_ratio.items():
                by_ratio[ratio] = [c for c in codes if not skip(keys[c // n], keys[c % n])]
        by_overlap: dict[float, list[int]] = defaultdict(list)
        for ratio, codes in by_ratio.items():
            by_overlap[round(ratio, 4)] += codes
        del by_ratio
        taken = [0] * n
        out = []
        for overlap in sorted(by_overlap, reverse=True):
            for a, b in map(divmod, sorted(by_overlap[overlap]), repeat(n)):
                if taken[a] >= per_memory or taken[b] >= per_memory:
                    continue
                taken[a] += 1
                taken[b] += 1
                out.append((a, b, overlap))
        return out

    def pair(self, a: int, b: int, overlap: float) -> SubjectPair:
        # (The words as a set only here, for the few pairs offered: each memory's are a tuple.)
        return SubjectPair(self.keys[a], self.keys[b], overlap, tuple(sorted(set(self.words[a]).intersection(self.words[b]))))


def scored_pairs(pairs: Iterable[tuple[int, int]], words: list[tuple[str, ...]], sizes: list[int], body_size: list[int],
                 odd: set[int], n: int, min_shared: int, min_overlap: float,
                 same_tokens: Callable[[int, int], bool]) -> dict[float, list[int]]:
    """The pairs (a, b) kept, by their overlap before rounding (shared words / the smaller set), each
    as one int, a * n + b (ordered as (a, b)): `round` (a slow call) is then made once per distinct
    fraction, not per pair, and a sort compares ints, not tuples of a float and two ints.

    A pair is kept when it shares at least `min_shared` words and its overlap is at least
    `min_overlap`, unless `same_tokens(a, b)` finds it a duplicate or a reordering (asked only when it
    may be one: its body words are all shared, or one of it is `odd`). The reference of the C form in
    _pair_search.c, which native.py runs when it is built.
    """
    by_ratio: dict[float, list[int]] = defaultdict(list)
    for a, b in pairs:
        shared = len(set(words[a]).intersection(words[b]))
        if shared < min_shared:
            continue
        ratio = shared / (sa if (sa := sizes[a]) < (sb := sizes[b]) else sb)
        if ratio < min_overlap:
            continue
        # Equal token sets have equal body words, all shared: fewer shared words cannot be.
        if (shared >= body_size[a] == body_size[b] or (odd and (a in odd or b in odd))) and same_tokens(a, b):
            continue
        by_ratio[ratio].append(a * n + b)
    return dict(by_ratio)


def document_frequencies(memories: list[tuple[str, ...]]) -> list[tuple[str, int]]:
    """Each word with how many of `memories` (each one's words) hold it, most first, then in the order first met
    (`Counter.most_common`). The reference of the C form in _pair_search.c, which native.py runs
    when it is built."""
    return Counter(chain.from_iterable(memories)).most_common()


_scored_pairs = native.preferred(scored_pairs)
_document_frequencies = native.preferred(document_frequencies)
