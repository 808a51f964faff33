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
member), unique among all filings: ranks are kept multiplied by a stride above every member's number,
so a place is a rank plus a member. One dict keys each bucket (its words' ranks) to the place of its
first filing, which is so the bucket's number: a filing given another's number is not its bucket's
first, and its bucket is shared. Most buckets hold one filing (on a bank of 50k memories, 197k buckets
of 248k filings; 75k filings in 24k shared buckets), so only the filings of shared buckets are
gathered, by number, into one list of places per bucket, each sorted (in C); the pairs are the
neighbours in each. Python steps once per member (its hot words' ranks) and never per filing: every
step over the filings is a C-level map.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence, Set as AbstractSet
from itertools import chain, compress, repeat
from operator import add, itemgetter, lt, mod, ne, not_
from typing import Any, Protocol, TypeVar

from . import native

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


def _words_at(positions: tuple[int, ...]) -> Callable[[tuple[int, ...]], tuple[int, ...]]:
    """What takes a bucket's words out of a member's: one slice when they are side by side (a member
    with exactly those words is its own bucket, no copy), else each word picked."""
    start, stop = positions[0], positions[-1] + 1
    return itemgetter(slice(start, stop)) if positions == tuple(range(start, stop)) else itemgetter(*positions)


# _BUCKETS with each bucket's words as what takes them out of a member's.
_FILINGS = {rarest: [(_words_at(kept), left_out) for kept, left_out in buckets] for rarest, buckets in _BUCKETS.items()}

# A memory's key, or any stand-in ordered as the keys are.
K = TypeVar("K", bound=Any)
K_in = TypeVar("K_in", contravariant=True)


class Words(Protocol[K_in]):
    """A member's words by its key: a dict by key, or a list by number."""

    def __getitem__(self, key: K_in, /) -> Collection[str]: ...


def pair_bound(members: int) -> int:
    """The most pairs `hot_pairs` gives for `members` memories: each is in at most RAREST buckets,
    with at most one pair of its own in each (a memory standing for others: one more per other)."""
    return members * RAREST


def hot_pairs(hot: Mapping[str, list[K]], words: Words[K]) -> AbstractSet[tuple[K, K]]:
    """Pairs (a < b) of one group's memories that share at least two of its hot words.

    `hot` maps each hot word of the group to its members' keys; `words` gives every member's words.
    """
    return paired_by_hot_words({w: len(keys) for w, keys in hot.items()}, {k for keys in hot.values() for k in keys}, words).keys()


def paired_by_hot_words(frequency: Mapping[str, int], members: Iterable[K], words: Words[K]) -> dict[tuple[K, K], None]:
    """`hot_pairs` from each hot word's frequency in the group and its members (those with fewer than
    two hot words are left out here: no need to find them first), as the keys of a dict the caller
    may keep (a set that keeps its order).

    Keys are anything ordered (subject_pairs.py passes numbers in the order of the keys). The pairs
    come in the order the buckets give them (the memories standing for others first): a bucket's
    pairs share members, so a caller that reads each pair's words finds many still in the cache (the
    overlaps of subject_pairs.py: 7 ms, a tenth, less CPU on a bank of 50k memories than in a set's
    order).
    """
    keys = sorted(set(members))
    # Ranks from 1, so that `filter(None, ...)` drops exactly the words that are not hot (None), each
    # times `stride`, above every member's number: a filing's place in its bucket's order (the rank
    # it is ordered by, the member) is then one addition (bucket_neighbours).
    stride = len(keys) or 1
    rarest_first = sorted(frequency, key=lambda w: (frequency[w], w))
    ranks = dict(zip(rarest_first, range(stride, (len(rarest_first) + 1) * stride, stride)))
    # Each memory's hot words as their ranks, rarest first; those with fewer than two left out.
    # (As tuples, which the C form reads: the search's words are tuples already, given as they are.)
    sigs = _hot_signatures(list(map(tuple, map(words.__getitem__, keys))), ranks)
    if min(map(len, sigs), default=2) < 2:
        fits = list(map((1).__lt__, map(len, sigs)))
        keys, sigs = list(compress(keys, fits)), list(compress(sigs, fits))
    out: dict[tuple[K, K], None] = {}
    first: dict[tuple[int, ...], K] = {}  # each set of hot words: its first member (keys are in order)
    stand_ins = list(map(first.setdefault, sigs, keys))
    if len(first) < len(keys):
        last: dict[tuple[int, ...], K] = {}
        for k, sig in compress(zip(keys, sigs), map(ne, keys, stand_ins)):
            out[last.get(sig, first[sig]), k] = None
            last[sig] = k
    # The firsts numbered in the order of their keys: the smaller number, the smaller key.
    found = _bucket_neighbours(list(first), stride, len(rarest_first), list(first.values()))
    if not out:
        return found
    out.update(found)
    return out


def hot_signatures(member_words: list[tuple[str, ...]], ranks: dict[str, int]) -> list[tuple[int, ...]]:
    """Each member's hot words as their ranks (`ranks`: those of the hot words; a rank is never 0),
    sorted. The reference of the C form in _pair_search.c, which native.py runs when it is built."""
    rank_of = ranks.get
    return [tuple(sorted(filter(None, map(rank_of, ws)))) for ws in member_words]


_hot_signatures = native.preferred(hot_signatures)


def _lanes(sigs: list[tuple[int, ...]]) -> Iterator[tuple[int, Sequence[int], Sequence[tuple[int, ...]]]]:
    """The members filed alike, by how many of their rarest hot words they are filed under (all of
    them up to RAREST): that number, their numbers (indexes in `sigs`; a list, not a range, which would
    make each int anew for each of the lane's buckets) and their hot words. When one lane has every
    member (on a bank: everyone has five or more hot words) its hot words are `sigs` itself, not a copy."""
    size = list(map(len, sigs))
    present = set(size)
    for rarest in _BUCKETS:
        sizes = {n for n in present if min(n, RAREST) == rarest}
        if not sizes:
            continue
        if sizes == present:
            yield rarest, list(range(len(sigs))), sigs
        else:
            chosen = list(map(sizes.__contains__, size))
            yield rarest, list(compress(range(len(sigs)), chosen)), list(compress(sigs, chosen))


def bucket_neighbours(sigs: list[tuple[int, ...]], stride: int, base: int, names: Sequence[K]) -> dict[tuple[K, K], None]:
    """The members (numbers: indexes in `sigs`, below `stride`; their ranks run from 1 to `base`, each
    times `stride`) that are neighbours in a bucket, as pairs of their `names` (the smaller number's
    first), the keys of a dict: every pair where the bucket's order rises, then those where it falls,
    each once. The reference of the C form in _pair_search.c, which native.py runs when it is built."""
    # A filing's place in its bucket's order, as one int: the rank it is ordered by + the member (rank
    # base + 1 when it has no other word: after every member that has one). No two filings share a
    # place (a member's filings are ordered by different ranks), so the place of a bucket's first
    # filing is the bucket's number.
    last = (base + 1) * stride
    number_of: dict[tuple[int, ...], int] = {}  # each bucket (its words' ranks): its number
    # The filings given another's number, so not their bucket's first: only such buckets, holding more
    # than one filing, give pairs (on a bank of 50k memories, 51k of 248k filings, in 24k buckets).
    later_numbers: list[int] = []
    later_places: list[int] = []
    for rarest, lane, lane_sigs in _lanes(sigs):
        for words_of, left_out in _FILINGS[rarest]:
            ranks = repeat(last) if left_out is None else map(itemgetter(left_out), lane_sigs)
            place = list(map(add, ranks, lane))
            number = list(map(number_of.setdefault, map(words_of, lane_sigs), place))
            later = list(map(ne, number, place))
            later_numbers += compress(number, later)
            later_places += compress(place, later)
    del number_of  # its buckets (197k on the bank) are freed before the shared ones' lists are made
    # Each shared bucket's filings, by its number: its first (whose place is the number) and the later
    # ones, sorted (places sort as the bucket orders its filings).
    buckets: dict[int, list[int]] = {}
    starts = map(list, zip(later_numbers))  # [number] for each later filing: its bucket keeps the first
    _run(map(list.append, map(buckets.setdefault, later_numbers, starts), later_places))
    shared = list(buckets.values())
    _run(map(list.sort, shared))
    # The neighbours: each filing but a bucket's last, and the next one.
    before = list(map(mod, chain.from_iterable(map(itemgetter(slice(None, -1)), shared)), repeat(stride)))
    after = list(map(mod, chain.from_iterable(map(itemgetter(slice(1, None)), shared)), repeat(stride)))
    # A bucket's order is by rank, not by number: each pair turned smaller first.
    rising = list(map(lt, before, after))
    falling = list(map(not_, rising))
    smaller = map(names.__getitem__, chain(compress(before, rising), compress(after, falling)))
    larger = map(names.__getitem__, chain(compress(after, rising), compress(before, falling)))
    return dict.fromkeys(zip(smaller, larger))


_bucket_neighbours = native.preferred(bucket_neighbours)


def _run(effects: Iterable[object]) -> None:
    """Steps through `effects` (a map called for what it does) in C, keeping nothing."""
    deque(effects, maxlen=0)
