"""Pairs inside hot subjects: words shared by more memories than the index's frequency cap.

The first-level index (subject_pairs.py) pairs memories through every word shared by at most
`max_df` of their group, so the only pairs it cannot see are those whose shared words are all hot.
Two hot words together are a much rarer subject than either alone, so this second-level index files
each memory under every pair of hot words among its `ANCHORS` rarest (rarest by frequency in the
group, ties by the word: one order for every memory). A bucket of at most `WINDOW` + 1 members pairs
them all; a larger one files its members again by their remaining hot words (a sub-bucket's members
share four); one still too large at `MAX_DEPTH` pairs each member with the next `WINDOW` in the order
of its remaining hot words, rarest first. Nothing here compares all pairs of a hot subject.

What is certain: two memories each having at most one hot word the other lacks land in the same
bucket at every level (the one order puts their two rarest shared words among the first three of
each), so such a pair sharing four hot words meets in a sub-bucket; it is paired there when that
bucket is small or the two are neighbours in its order (tests/test_hot_subjects.py hides one pair
among 10,000 memories).

How it is computed: a member's buckets are ints made from the ranks at fixed positions of its
signature (its hot words' ranks, rarest first), so all members filed under the same positions (a
lane) get theirs in one C-level map, and buckets are counted in C; Python steps only over the members
of shared buckets (on a bank of 50k memories 85k of 420k filings at the last level).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Set as AbstractSet
from itertools import chain, combinations, compress, repeat
from math import comb
from operator import add, itemgetter, mul
from typing import Any, Generic, Protocol, TypeVar

# A memory is filed under each pair of its three rarest hot words: three buckets per level, and a
# partner whose one differing word ranks first still shares a bucket with it.
ANCHORS = 3
# Levels of filing: the first buckets share two hot words, their sub-buckets four.
MAX_DEPTH = 2
# Partners per member in a final bucket too large to pair in full (near-identical memories).
WINDOW = 1

# A memory's key, or any stand-in ordered as the keys are.
K = TypeVar("K", bound=Any)
K_in = TypeVar("K_in", contravariant=True)


class Words(Protocol[K_in]):
    """A member's words by its key: a dict by key, or a list by number."""

    def __getitem__(self, key: K_in, /) -> AbstractSet[str]: ...


def pair_bound(members: int) -> int:
    """The most pairs `hot_pairs` gives for `members` memories: each reaches at most
    C(ANCHORS, 2) ** MAX_DEPTH final buckets, where it gets at most WINDOW pairs of its own."""
    return members * comb(ANCHORS, 2) ** MAX_DEPTH * WINDOW


def hot_pairs(hot: Mapping[str, list[K]], words: Words[K]) -> set[tuple[K, K]]:
    """Pairs (a < b) of one group's memories that share at least two of its hot words.

    `hot` maps each hot word of the group to its members' keys; `words` gives every member's words.
    """
    return paired_by_hot_words({w: len(keys) for w, keys in hot.items()}, {k for keys in hot.values() for k in keys}, words)


def paired_by_hot_words(frequency: Mapping[str, int], members: Iterable[K], words: Words[K]) -> set[tuple[K, K]]:
    """`hot_pairs` from each hot word's frequency in the group and the memories having one.

    Keys are anything ordered (subject_pairs.py passes numbers in the order of the keys).
    """
    rank = {w: i for i, w in enumerate(sorted(frequency, key=lambda w: (frequency[w], w)))}
    hot_words = frozenset(rank)
    base = len(rank)
    # Each memory as the ranks of its hot words, rarest first, in the order of the keys; all in one
    # bucket (0) before the first level.
    filed = [(k, sig) for k in sorted(members) if len(sig := tuple(sorted(map(rank.__getitem__, words[k] & hot_words)))) > 1]
    keys, sigs = [k for k, _ in filed], [sig for _, sig in filed]
    lanes = [_Lane((), keys, sigs, [0] * len(keys))]
    out: set[tuple[K, K]] = set()
    small, crowded = range(2, WINDOW + 2).__contains__, (WINDOW + 1).__lt__  # by a bucket's size
    for _ in range(1, MAX_DEPTH):
        filings = [child for lane in lanes for child in lane.filed(base)]
        size = Counter(chain.from_iterable(lane.buckets for lane in filings))  # counted in C
        # One bucket may gather members of several lanes (equal ranks at other positions): its
        # members are gathered over every lane of the level.
        together: dict[int, list[K]] = defaultdict(list)
        lanes = []
        for lane in filings:
            sizes = list(map(size.__getitem__, lane.buckets))
            chosen = list(map(small, sizes))
            for bucket, key in zip(compress(lane.buckets, chosen), compress(lane.keys, chosen)):
                together[bucket].append(key)
            lanes.append(lane.chosen(list(map(crowded, sizes))))
        for members_of in together.values():
            out.update(combinations(sorted(members_of), 2))
    last = _LastLevel(lanes, base)
    for numbers in last.shared_buckets():
        if len(numbers) <= WINDOW + 1:
            out.update(combinations(sorted(map(last.key, numbers)), 2))
        else:
            out.update(_neighbours(sorted(map(last.entry, numbers))))
    return out


# The positions of two anchors among the ANCHORS rarest: (0, 1), (0, 2), (1, 2).
_ANCHOR_PAIRS = tuple(combinations(range(ANCHORS), 2))


def _next_anchors(anchors: tuple[int, ...]) -> list[tuple[int, int]]:
    """The positions in a signature of the pairs of hot words a member filed under these positions
    (two a level) is filed under next: each pair of its ANCHORS rarest hot words left."""
    left = [i for i in range(len(anchors) + ANCHORS) if i not in anchors]
    return [(left[i], left[j]) for i, j in _ANCHOR_PAIRS]


class _Lane(Generic[K]):
    """The members filed under one choice of anchor positions (one of the three a level gives each
    memory, level after level), each with its bucket: one int, the ranks of its anchors at every
    level up to this one (so a sub-bucket holds members of one bucket only; equal ints from two
    lanes are one bucket, as ranks at other positions can be equal).

    A lane's buckets and the filter of who goes on are each one C-level map over the lane, not a
    Python step per member and pair of anchors."""

    def __init__(self, anchors: tuple[int, ...], keys: list[K], sigs: list[tuple[int, ...]], buckets: list[int]) -> None:
        self.anchors, self.keys, self.sigs, self.buckets = anchors, keys, sigs, buckets

    def filed(self, base: int) -> list[_Lane[K]]:
        """This lane's members filed again under each next pair of anchors (those having both)."""
        out = []
        for i, j in _next_anchors(self.anchors):
            keys, sigs, buckets = self.keys, self.sigs, self.buckets
            if sigs and min(map(len, sigs)) <= j:  # a member with no hot word at j is not filed here
                fits = list(map(j.__lt__, map(len, sigs)))
                keys, sigs, buckets = list(compress(keys, fits)), list(compress(sigs, fits)), list(compress(buckets, fits))
            # (bucket * base + sig[i]) * base + sig[j], for every member at once
            rank_i, rank_j = map(itemgetter(i), sigs), map(itemgetter(j), sigs)
            codes = list(map(add, map(mul, map(add, map(mul, buckets, repeat(base)), rank_i), repeat(base)), rank_j))
            out.append(_Lane((*self.anchors, i, j), keys, sigs, codes))
        return out

    def chosen(self, which: list[bool]) -> _Lane[K]:
        return _Lane(self.anchors, list(compress(self.keys, which)), list(compress(self.sigs, which)), list(compress(self.buckets, which)))


class _LastLevel(Generic[K]):
    """The last level's buckets, of the members of `lanes` (each filed under each next pair of
    anchors), listed only when shared; a member of a bucket is a number (its place in its lane *
    `stride` + its lane * len(_ANCHOR_PAIRS) + the anchor pair), turned back into what it is only
    for the shared buckets. On a bank of 50k memories 350k of 380k buckets hold one member."""

    def __init__(self, lanes: list[_Lane[K]], base: int) -> None:
        self.lanes = [lane for lane in lanes if lane.keys]
        self.base = base
        self.stride = len(self.lanes) * len(_ANCHOR_PAIRS)  # a member's number: place * stride + lane * pairs + pair
        self.anchors = [_next_anchors(lane.anchors) for lane in self.lanes]
        # Per lane and anchor pair: the positions a member's hot words left after its bucket's are at
        # (those below the last anchor that are none, then all from it on).
        self.left = [[_left_of({*lane.anchors, i, j}) for i, j in pairs] for lane, pairs in zip(self.lanes, self.anchors)]

    def shared_buckets(self) -> Iterable[list[int]]:
        """The members of each bucket shared by two or more, as numbers (in no particular order)."""
        columns = list(self._columns())
        size = Counter(chain.from_iterable(codes for codes, _ in columns))  # counted in C
        more: dict[int, list[int]] = defaultdict(list)
        for codes, numbers in columns:
            shared = list(map((1).__lt__, map(size.__getitem__, codes)))
            for code, x in zip(compress(codes, shared), compress(numbers, shared)):
                more[code].append(x)
        return more.values()

    def _columns(self) -> Iterator[tuple[list[int], Iterable[int]]]:
        """Per lane and next pair of anchors (i, j): the bucket of each member having a hot word at
        j, (bucket * base + sig[i]) * base + sig[j], and its number; each a C-level map over the lane."""
        base = self.base
        for at, (lane, anchors) in enumerate(zip(self.lanes, self.anchors)):
            for pair, (i, j) in enumerate(anchors):
                buckets, sigs = lane.buckets, lane.sigs
                numbers: Iterable[int] = range(at * len(_ANCHOR_PAIRS) + pair, len(sigs) * self.stride, self.stride)
                if min(map(len, sigs)) <= j:
                    fits = list(map(j.__lt__, map(len, sigs)))
                    buckets, sigs, numbers = list(compress(buckets, fits)), list(compress(sigs, fits)), list(compress(numbers, fits))
                rank_i, rank_j = map(itemgetter(i), sigs), map(itemgetter(j), sigs)
                yield list(map(add, map(mul, map(add, map(mul, buckets, repeat(base)), rank_i), repeat(base)), rank_j)), numbers

    def _where(self, x: int) -> tuple[int, int, int]:
        place, at = divmod(x, self.stride)
        lane, pair = divmod(at, len(_ANCHOR_PAIRS))
        return lane, place, pair

    def key(self, x: int) -> K:
        lane, place, _ = self._where(x)
        return self.lanes[lane].keys[place]

    def entry(self, x: int) -> tuple[tuple[int, ...], K]:
        """(the hot words it has left after the bucket's, its key): what orders a crowded bucket."""
        lane, place, pair = self._where(x)
        below, top = self.left[lane][pair]
        sig = self.lanes[lane].sigs[place]
        return tuple(map(sig.__getitem__, below)) + sig[top:], self.lanes[lane].keys[place]


def _left_of(used: set[int]) -> tuple[list[int], int]:
    top = max(used) + 1
    return [at for at in range(top) if at not in used], top


def _neighbours(ordered: list[tuple[tuple[int, ...], K]]) -> Iterator[tuple[K, K]]:
    """Each member with the next WINDOW in the order of its other hot words, rarest first (then its
    key): `ordered` is (hot words left, key) of the bucket's members, sorted."""
    keys = [k for _, k in ordered]
    for i, a in enumerate(keys):
        for b in keys[i + 1 : i + 1 + WINDOW]:
            yield (a, b) if a < b else (b, a)
