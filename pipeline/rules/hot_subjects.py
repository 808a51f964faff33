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

How it is computed: a filing's place in its bucket is one int, (the rank it is ordered by, the
member), unique among all filings. One dict keys each bucket (its words' ranks) to the place of its
first filing, which is so the bucket's number: a filing given another's number is not its bucket's
first, and its bucket is shared. Most buckets hold one filing (on a bank of 50k memories, 197k buckets
of 248k filings; 75k filings in shared buckets), so only the filings of shared buckets are laid out
as ints (bucket, place) and sorted (in C); the pairs are the neighbours with the same bucket. Python
steps once per member (its hot words' ranks) and never per filing: every step over the filings is a
C-level map.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence, Set as AbstractSet
from itertools import compress, islice, repeat
from operator import add, eq, floordiv, itemgetter, lt, mod, mul, ne, not_
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
    # Ranks from 1, so that `filter(None, ...)` drops exactly the words that are not hot (None).
    rank = {w: i for i, w in enumerate(sorted(frequency, key=lambda w: (frequency[w], w)), 1)}
    keys = sorted(set(members))
    # Each memory's hot words as their ranks, rarest first; those with fewer than two left out.
    sigs = [tuple(sorted(filter(None, map(rank.get, words[k])))) for k in keys]
    if min(map(len, sigs), default=2) < 2:
        fits = list(map((1).__lt__, map(len, sigs)))
        keys, sigs = list(compress(keys, fits)), list(compress(sigs, fits))
    out: set[tuple[K, K]] = set()
    first: dict[tuple[int, ...], K] = {}  # each set of hot words: its first member (keys are in order)
    stand_ins = list(map(first.setdefault, sigs, keys))
    if len(first) < len(keys):
        last: dict[tuple[int, ...], K] = {}
        for k, sig in compress(zip(keys, sigs), map(ne, keys, stand_ins)):
            out.add((last.get(sig, first[sig]), k))
            last[sig] = k
    firsts = list(first.values())  # numbered in the order of their keys: the smaller number, the smaller key
    smaller, larger = _bucket_neighbours(list(first), len(rank))
    out.update(zip(map(firsts.__getitem__, smaller), map(firsts.__getitem__, larger)))
    return out


def _lanes(sigs: list[tuple[int, ...]]) -> Iterator[tuple[int, Sequence[int], Sequence[tuple[int, ...]]]]:
    """The members filed alike, by how many of their rarest hot words they are filed under (all of
    them up to RAREST): that number, their numbers (indexes in `sigs`) and their hot words. When one
    lane has every member (on a bank: everyone has five or more hot words) it is `sigs` itself, not a copy."""
    size = list(map(len, sigs))
    present = set(size)
    for rarest in _BUCKETS:
        sizes = {n for n in present if min(n, RAREST) == rarest}
        if not sizes:
            continue
        if sizes == present:
            yield rarest, range(len(sigs)), sigs
        else:
            chosen = list(map(sizes.__contains__, size))
            yield rarest, list(compress(range(len(sigs)), chosen)), list(compress(sigs, chosen))


def _bucket_neighbours(sigs: list[tuple[int, ...]], base: int) -> tuple[list[int], list[int]]:
    """The members (numbers: indexes in `sigs`, whose ranks run from 1 to `base`) that are neighbours
    in a bucket: the smaller number of each pair, and the larger."""
    stride = len(sigs)
    # A filing's place in its bucket's order, as one int: the rank it is ordered by * stride + the
    # member (rank base + 1 when it has no other word: after every member that has one). No two
    # filings share a place (a member's filings are ordered by different ranks), so the place of a
    # bucket's first filing is the bucket's number.
    unit = (base + 2) * stride  # above every place
    number_of: dict[tuple[int, ...], int] = {}  # each bucket (its words' ranks): its number
    numbers: list[int] = []  # each filing: its bucket's number
    places: list[int] = []  # each filing: its place
    for rarest, lane, lane_sigs in _lanes(sigs):
        for kept, left_out in _BUCKETS[rarest]:
            if left_out is None:
                place = list(map(add, lane, repeat((base + 1) * stride)))
            else:
                place = list(map(add, map(mul, map(itemgetter(left_out), lane_sigs), repeat(stride)), lane))
            numbers += map(number_of.setdefault, map(itemgetter(*kept), lane_sigs), place)
            places += place
    # A filing numbered by another's place is not its bucket's first: only such buckets, holding
    # more than one filing, give pairs (on a bank of 50k memories, 75k of 248k filings). Each of their
    # filings becomes one int, number * unit + place, so that sorting lays each bucket out in order.
    later = list(map(ne, numbers, places))
    filings = list(map(add, map(mul, compress(numbers, later), repeat(unit)), compress(places, later)))
    filings += map(mul, set(compress(numbers, later)), repeat(unit + 1))  # their first filings: place == number
    filings.sort()
    buckets_in_order = list(map(floordiv, filings, repeat(unit)))
    members = list(map(mod, filings, repeat(stride)))
    together = list(map(eq, buckets_in_order, islice(buckets_in_order, 1, None)))
    before, after = list(compress(members, together)), list(compress(islice(members, 1, None), together))
    # A bucket's order is by rank, not by number: each pair turned smaller first.
    rising = list(map(lt, before, after))
    falling = list(map(not_, rising))
    return (list(compress(before, rising)) + list(compress(after, falling)),
            list(compress(after, rising)) + list(compress(before, falling)))
