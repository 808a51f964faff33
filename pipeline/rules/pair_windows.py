"""Which of a stage's candidate pairs one run offers when there are more than it may (its limit).

A run (of the conflicts stage) offers the `limit // 2` strongest pairs and one window of the others:
the others in order of strength, cut into windows of the rest of the limit, and the window numbered
`turn` (the run's day) modulo their count. The strongest come back every run: a new contradiction is
usually a strong pair, and their batches, asked apart from the window's, meet the cache. A run on
the next day takes the next window, so while the pairs found stay the same every pair is offered
within `windows` consecutive days. Offering only the strongest, every run would offer the very same
pairs and the others would never be judged.

The pairs found must not depend on the window of an earlier stage: the reorder stage, whose merges
retire memories the conflicts stage then leaves out, asks about all its pairs every run (a window
there moved the conflicts stage's pairs each day, and its windows no longer covered them).

A window past the end of the others is filled from the first of them, so every run offers its whole
limit. The count of windows shares no factor with 2, 3, 5 or 7: runs every d days step through the
windows d at a time and reach every window only when d and the count share no factor (with 14
windows, weekly runs would see two of them forever); so runs every 1 to 10 days, weekly,
fortnightly or every 30 days reach them all, at the cost of at most 9 more windows.

When the store changes between runs, the pairs move between windows with their strength, and the
count of windows with the count of pairs: the windows then promise nothing more than turning.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Generic, TypeVar

P = TypeVar("P")

# Run periods (in days) whose prime factors the count of windows avoids.
_PERIOD_FACTORS = 2 * 3 * 5 * 7


@dataclass(frozen=True)
class Offer(Generic[P]):
    """The pairs one run offers, and where they lie among all those found."""

    strongest: list[P]  # the strongest of all the pairs (all of them when they fit the limit)
    turning: list[P]  # the window of the others offered this run
    found: int  # all the pairs found
    window: int  # the number of the window offered (0-based); 0 of 0 when there are none
    windows: int

    @property
    def pairs(self) -> list[P]:
        return self.strongest + self.turning

    @property
    def waiting(self) -> int:
        """Pairs found and not offered this run."""
        return self.found - len(self.strongest) - len(self.turning)


@dataclass(frozen=True)
class Places:
    """`places`: which places, in order of strength, a run offers."""

    strongest: range
    turning: list[int]
    window: int
    windows: int


def places(found: int, limit: int, turn: int) -> Places:
    """The places (0 = the strongest pair) a run offers of `found` pairs under `limit`, in `turn`."""
    limit = max(limit, 0)
    if found <= limit:
        return Places(range(found), [], 0, 0)
    strongest = limit // 2
    size = limit - strongest
    if size == 0:  # a limit of 0 offers nothing
        return Places(range(0), [], 0, 0)
    others = found - strongest
    windows = window_count(others, size)
    window = turn % windows
    return Places(range(strongest), [strongest + (window * size + i) % others for i in range(size)], window, windows)


def window_count(others: int, size: int) -> int:
    """The least count of windows of `size` that holds `others` and shares no factor with 2, 3, 5, 7."""
    windows = -(-others // size)
    while gcd(windows, _PERIOD_FACTORS) != 1:
        windows += 1
    return windows
