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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from itertools import combinations
from math import comb

# A memory is filed under each pair of its three rarest hot words: three buckets per level, and a
# partner whose one differing word ranks first still shares a bucket with it.
ANCHORS = 3
# Levels of filing: the first buckets share two hot words, their sub-buckets four.
MAX_DEPTH = 2
# Partners per member in a final bucket too large to pair in full (near-identical memories).
WINDOW = 1

Pair = tuple[str, str]


def pair_bound(members: int) -> int:
    """The most pairs `hot_pairs` gives for `members` memories: each reaches at most
    C(ANCHORS, 2) ** MAX_DEPTH final buckets, where it gets at most WINDOW pairs of its own."""
    return members * comb(ANCHORS, 2) ** MAX_DEPTH * WINDOW


def hot_pairs(hot: Mapping[str, list[str]], words: Mapping[str, frozenset[str]]) -> set[Pair]:
    """Pairs (a < b) of one group's memories that share at least two of its hot words.

    `hot` maps each hot word of the group to its members' keys; `words` gives every member's words.
    """
    rank = {w: i for i, w in enumerate(sorted(hot, key=lambda w: (len(hot[w]), w)))}
    members = {k for keys in hot.values() for k in keys}
    # Each memory as the ranks of its hot words, rarest first.
    sigs = {k: tuple(sorted(rank[w] for w in words[k] if w in rank)) for k in members}
    return set(_file(sorted(k for k in members if len(sigs[k]) > 1), sigs, 1))


def _file(keys: list[str], sigs: Mapping[str, tuple[int, ...]], depth: int) -> Iterator[Pair]:
    """Pairs among `keys` (sorted) through the buckets of their rarest hot words left in `sigs`."""
    buckets: dict[tuple[int, int], list[str]] = defaultdict(list)
    for key in keys:
        for combo in combinations(sigs[key][:ANCHORS], 2):
            buckets[combo].append(key)
    for (x, y), members in sorted(buckets.items()):
        if len(members) <= WINDOW + 1:
            yield from combinations(members, 2)
            continue
        rest = {k: tuple(r for r in sigs[k] if r != x and r != y) for k in members}
        if depth < MAX_DEPTH:
            # A member with one hot word left shares only these two with the rest: not filed again.
            yield from _file([k for k in members if len(rest[k]) > 1], rest, depth + 1)
        else:
            yield from _neighbours(members, rest)


def _neighbours(keys: list[str], rest: Mapping[str, tuple[int, ...]]) -> Iterator[Pair]:
    """Each member with the next WINDOW in the order of its other hot words, rarest first."""
    ordered = sorted(keys, key=lambda k: (rest[k], k))
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 : i + 1 + WINDOW]:
            yield (a, b) if a < b else (b, a)
