"""The reorder judge's block moves (issue 14: only moves that can give the other text are tried)."""

from __future__ import annotations

import random
from itertools import permutations

from pipeline.stages.heuristics.reorder import _moves


def _every_move(a: list[str], b: list[str]) -> list[tuple[int, int, int]]:
    """The definition: every block of a, put at every other place, compared with b."""
    found = []
    for i in range(len(a)):
        for j in range(i + 1, len(a) + 1):
            rest = a[:i] + a[j:]
            found.extend((i, j, k) for k in range(len(rest) + 1) if k != i and rest[:k] + a[i:j] + rest[k:] == b)
    return found


def test_the_moves_are_those_of_trying_every_move_in_the_same_order():
    for n in range(8):
        words = [f"w{i % max(1, n - 1)}" for i in range(n)]  # a repeated word: several moves give b
        for order in permutations(range(n)):
            b = [words[i] for i in order]
            assert _moves(words, b) == _every_move(words, b), b
    rng = random.Random(0)
    for _ in range(500):
        n = rng.randint(1, 14)
        a = [rng.choice("abcdefg"[: rng.randint(1, 7)]) for _ in range(n)]
        b = rng.sample(a, n)
        assert _moves(a, b) == _every_move(a, b), (a, b)


def test_texts_of_different_lengths_have_no_move():
    assert _moves(["a", "b"], ["b"]) == [] == _every_move(["a", "b"], ["b"])
