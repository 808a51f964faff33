"""Pairs inside hot subjects: words shared by more memories than the index's frequency cap.

The first-level index (subject_pairs.py) pairs memories through every word shared by at most
`max_df` of their group, so the only pairs it cannot see are those whose shared words are all hot.
Several hot words together are a much rarer subject than any one alone, so this second index files
each memory under sets of its `RAREST` rarest hot words (rarest by frequency in the group, ties by
the word: one order for every memory) and pairs the members of each bucket, each with the next in
the bucket's order (the rarest of its hot words the bucket leaves out, then its key). Nothing here
compares all pairs of a hot subject, and each memory gets at most one pair of its own per bucket.

A memory with five or more hot words is filed under each four of its five rarest; one with four,
under all four and each three of them; one with three, under all three and each two; one with two,
under both. Memories with the very same hot words stand for each other: the first (by key) is filed,
and each of the others is paired with the one before it.

What is certain: two memories sharing at least two hot words, each having at most one the other
lacks, meet in a bucket (the rarest four, three or two of the words they share are among the rarest
five of each, and a bucket of each of them), or their stand-ins do (the first of those with the same
hot words as each); they are paired when that bucket holds only them or they are neighbours in its
order (tests/test_hot_subjects.py hides one pair among 10,000 memories). A memory standing for others
is the only one of them paired through a bucket: the others reach a third memory through it alone.

How it is computed: each filing is one int, (bucket, the rank it is ordered by, the member) packed
so that sorting the ints (in C) lays each bucket out in order; the pairs are the neighbours with the
same bucket. Python steps once per member (its hot words' ranks) and never per filing: every step
over the filings is a C-level map (on a bank of 50k memories, 250k filings).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set as AbstractSet
from itertools import compress, count, islice, repeat
from operator import add, eq, floordiv, itemgetter, mod, mul, ne
from typing import Any, Protocol, TypeVar

# How many of a memory's rarest hot words its buckets are made of.
RAREST = 5


def _buckets_of(rarest: int) -> list[tuple[tuple[int, ...], int | None]]:
    """The buckets of a member with `rarest` rarest hot words: the positions of each bucket's words,
    and the position of the word that orders it there (None: it has no other). All of them when
    fewer than RAREST; each but one when more than two."""
    buckets: list[tuple[tuple[int, ...], int | None]] = [(tuple(range(rarest)), None)] if rarest < RAREST else []
    if rarest > 2:
        buckets += [(tuple(i for i in range(rarest) if i != left_out), left_out) for left_out in range(rarest)]
    return buckets


_BUCKETS = {rarest: _buckets_of(rarest) for rarest in range(RAREST, 1, -1)}

# A memory's key, or any stand-in ordered as the keys are.
K = TypeVar("K", bound=Any)
K_in = TypeVar("K_in", contravariant=True)


class Words(Protocol[K_in]):
    """A member's words by its key: a dict by key, or a list by number."""

    def __getitem__(self, key: K_in, /) -> AbstractSet[str]: ...


def pair_bound(members: int) -> int:
    """The most pairs `hot_pairs` gives for `members` memories: each is in at most RAREST buckets,
    with at most one pair of its own in each (a memory standing for others: one more per other)."""
    return members * RAREST


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
    keys = sorted(set(members))
    # Each memory's hot words as their ranks, rarest first; those with fewer than two left out.
    sigs = [tuple(sorted(map(rank.__getitem__, hot_words.intersection(words[k])))) for k in keys]
    if min(map(len, sigs), default=2) < 2:
        fits = list(map((1).__lt__, map(len, sigs)))
        keys, sigs = list(compress(keys, fits)), list(compress(sigs, fits))
    out: set[tuple[K, K]] = set()
    first = dict(zip(reversed(sigs), reversed(keys)))  # each set of hot words: its first member
    if len(first) < len(keys):
        last = dict(first)
        for k, sig in compress(zip(keys, sigs), map(ne, keys, map(first.__getitem__, sigs))):
            out.add((last[sig], k))
            last[sig] = k
    filed = list(dict.fromkeys(sigs))  # in the order of their first members' keys
    firsts = list(map(first.__getitem__, filed))
    pairs = _bucket_neighbours(filed, len(rank))
    out.update(zip(map(firsts.__getitem__, map(min, pairs)), map(firsts.__getitem__, map(max, pairs))))
    return out


def _bucket_neighbours(sigs: list[tuple[int, ...]], base: int) -> list[tuple[int, int]]:
    """The members (numbers: places in `sigs`) that are neighbours in a bucket, each pair in the
    bucket's order."""
    stride = len(sigs)
    unit = (base + 1) * stride  # a filing: bucket * unit + order * stride + member
    bucket_of: dict[tuple[int, ...], int] = {}
    # A bucket's number (times unit): the place of its first filing (setdefault takes the next of
    # `numbers` at every filing, so the numbers are not consecutive; only equal or not matters).
    numbers = count(0, unit)
    filings: list[int] = []
    size = list(map(min, map(len, sigs), repeat(RAREST)))
    for rarest, buckets in _BUCKETS.items():
        chosen = list(map(rarest.__eq__, size))
        lane = list(compress(range(stride), chosen))
        if not lane:
            continue
        lane_sigs = list(compress(sigs, chosen))
        for kept, left_out in buckets:
            bucket = map(bucket_of.setdefault, map(itemgetter(*kept), lane_sigs), numbers)
            if left_out is None:  # no other word: ordered after every member that has one
                within = map(add, lane, repeat(base * stride))
            else:
                within = map(add, map(mul, map(itemgetter(left_out), lane_sigs), repeat(stride)), lane)
            filings.extend(map(add, bucket, within))
    filings.sort()
    buckets_in_order = list(map(floordiv, filings, repeat(unit)))
    members = list(map(mod, filings, repeat(stride)))
    together = map(eq, buckets_in_order, islice(buckets_in_order, 1, None))
    return list(compress(zip(members, islice(members, 1, None)), together))
