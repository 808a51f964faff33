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
from collections.abc import Iterable, Iterator, Mapping, Set as AbstractSet
from itertools import combinations, repeat
from math import comb
from typing import Any, Protocol, TypeVar

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
    # Each memory as the ranks of its hot words, rarest first; all in one first-level bucket (0).
    level = [(0, k, sig) for k in sorted(members) if len(sig := tuple(sorted(map(rank.__getitem__, words[k] & hot_words)))) > 1]
    out: set[tuple[K, K]] = set()
    for _ in range(1, MAX_DEPTH):
        next_level: list[tuple[int, K, tuple[int, ...]]] = []
        for bucket, entries in _buckets(level, len(rank)).items():
            if len(entries) <= WINDOW + 1:
                out.update(combinations([k for k, _ in entries], 2))
            else:
                # A member with one hot word left shares only these two with the rest: not filed again.
                next_level.extend((bucket, k, rest) for k, rest in entries if len(rest) > 1)
        level = next_level
    width = len(_ANCHOR_PAIRS)
    for numbers in _shared_buckets(level, len(rank)):
        if len(numbers) <= WINDOW + 1:
            out.update(combinations([level[x // width][1] for x in numbers], 2))
        else:
            out.update(_neighbours(sorted(map(_entry, repeat(level), numbers))))
    return out


# The positions of two anchors among the ANCHORS rarest: (0, 1), (0, 2), (1, 2).
_ANCHOR_PAIRS = tuple(combinations(range(ANCHORS), 2))
Entry = tuple[int, K, tuple[int, ...]]  # (its bucket, a member, the ranks of its hot words left)


def _filed(sig: tuple[int, ...], i: int, j: int) -> tuple[int, ...]:
    # A signature has no repeated rank: dropping positions i and j drops those two words.
    return sig[:i] + sig[i + 1 : j] + sig[j + 1 :]


def _buckets(level: list[Entry[K]], base: int) -> dict[int, list[tuple[K, tuple[int, ...]]]]:
    """Each member of each bucket of `level` filed under each pair of its rarest hot words left, with
    the hot words left after that pair; members in the order of `level` (by key within a bucket).

    A bucket is one int, the ranks of the anchors of every level up to it (so a sub-bucket holds
    members of one bucket only)."""
    buckets: dict[int, list[tuple[K, tuple[int, ...]]]] = defaultdict(list)
    for bucket, key, sig in level:
        for i, j in _ANCHOR_PAIRS:
            if j < len(sig):
                buckets[(bucket * base + sig[i]) * base + sig[j]].append((key, _filed(sig, i, j)))
    return buckets


def _shared_buckets(level: list[Entry[K]], base: int) -> Iterator[list[int]]:
    """`_buckets` of the last level, only those with two members or more, each member as its number
    (its entry's index * len(_ANCHOR_PAIRS) + the anchor pair's; `_entry` gives it back). Most of
    these buckets hold one member (on a bank of 50k memories 350k of 380k): a member is remembered
    by its number and a list made only for a bucket seen twice."""
    first: dict[int, int] = {}
    more: dict[int, list[int]] = {}
    remember = first.setdefault
    x = 0
    for bucket, _, sig in level:
        for i, j in _ANCHOR_PAIRS:
            if j < len(sig):
                code = (bucket * base + sig[i]) * base + sig[j]
                seen = remember(code, x)
                if seen != x:
                    if code in more:
                        more[code].append(x)
                    else:
                        more[code] = [seen, x]
            x += 1
    yield from more.values()


def _entry(level: list[Entry[K]], x: int) -> tuple[tuple[int, ...], K]:
    """A member numbered by `_shared_buckets`: the hot words it has left after the bucket's, and its key."""
    _, key, sig = level[x // len(_ANCHOR_PAIRS)]
    return _filed(sig, *_ANCHOR_PAIRS[x % len(_ANCHOR_PAIRS)]), key


def _neighbours(ordered: list[tuple[tuple[int, ...], K]]) -> Iterator[tuple[K, K]]:
    """Each member with the next WINDOW in the order of its other hot words, rarest first (then its
    key): `ordered` is (hot words left, key) of the bucket's members, sorted."""
    keys = [k for _, k in ordered]
    for i, a in enumerate(keys):
        for b in keys[i + 1 : i + 1 + WINDOW]:
            yield (a, b) if a < b else (b, a)
