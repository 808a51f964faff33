"""The reorder judge's block moves and swaps (issue 14: only those that can give the other text are tried)."""

from __future__ import annotations

import random
from itertools import permutations

from pipeline.stages.heuristics.reorder import _moves, _swap


def _every_move(a: list[str], b: list[str]) -> list[tuple[int, int, int]]:
    """The definition: every block of a, put at every other place, compared with b."""
    found = []
    for i in range(len(a)):
        for j in range(i + 1, len(a) + 1):
            rest = a[:i] + a[j:]
            found.extend((i, j, k) for k in range(len(rest) + 1) if k != i and rest[:k] + a[i:j] + rest[k:] == b)
    return found


def _word_orders(longest_permuted: int, seed: int):
    """(a, b) pairs of the same words: every order of up to `longest_permuted` words, one of them
    repeated (so several moves or swaps give b), then 500 random shuffles with repeats."""
    for n in range(longest_permuted + 1):
        words = [f"w{i % max(1, n - 1)}" for i in range(n)]
        for order in permutations(range(n)):
            yield words, [words[i] for i in order]
    rng = random.Random(seed)
    for _ in range(500):
        n = rng.randint(1, 14)
        a = [rng.choice("abcdefg"[: rng.randint(1, 7)]) for _ in range(n)]
        yield a, rng.sample(a, n)


def test_the_moves_are_those_of_trying_every_move_in_the_same_order():
    for a, b in _word_orders(7, seed=0):
        assert _moves(a, b) == _every_move(a, b), (a, b)


def test_texts_of_different_lengths_have_no_move():
    assert _moves(["a", "b"], ["b"]) == [] == _every_move(["a", "b"], ["b"])


def _every_swap(a: list[str], b: list[str]) -> tuple[list[str], list[str], list[str]] | None:
    """The definition: the first (x, mid, y) of the differing core of a whose exchange gives b's."""
    pre = next((t for t in range(len(a)) if a[t] != b[t]), len(a))
    post = next((t for t in range(len(a) - pre) if a[-1 - t] != b[-1 - t]), len(a) - pre)
    core_a, core_b = a[pre : len(a) - post], b[pre : len(b) - post]
    for i in range(1, len(core_a)):
        for j in range(i, len(core_a)):
            if core_a[j:] + core_a[i:j] + core_a[:i] == core_b:
                return core_a[:i], core_a[i:j], core_a[j:]
    return None


def test_the_swap_is_that_of_trying_every_exchange_in_the_same_order():
    for a, b in _word_orders(6, seed=1):
        assert _swap(a, b) == _every_swap(a, b), (a, b)


def _moved_or_swapped(seed: int):
    """(a, b) pairs of up to 14 words (past what every order covers) where b is a with one block
    moved, two blocks exchanged, or shuffled: most moves pass `_one_seam`, shuffles mostly do not."""
    rng = random.Random(seed)
    for _ in range(3000):
        n = rng.randint(0, 14)
        a = [rng.choice("abcdefgh"[: rng.randint(1, 8)]) for _ in range(n)]
        cuts = sorted(rng.randint(0, n) for _ in range(4))
        p, q, s, t = cuts
        kind = rng.randrange(3)
        if kind == 0:
            rest = a[:p] + a[q:]
            yield a, rest[:s - (q - p) if s >= q else s] + a[p:q] + rest[s - (q - p) if s >= q else s :]
        elif kind == 1:
            yield a, a[:p] + a[s:t] + a[q:s] + a[p:q] + a[t:]
        else:
            yield a, rng.sample(a, n)


def test_the_moves_of_longer_texts_are_those_of_trying_every_move():
    found = 0
    for a, b in _moved_or_swapped(seed=2):
        moves = _moves(a, b)
        assert moves == _every_move(a, b), (a, b)
        found += bool(moves)
    assert found > 1000  # the pairs with a move were searched, not only ruled out
