"""Which retirements a capped run lets through first: the memories the store values least.

The retirement cap (rules/blast_cap.py) lets one run archive only part of a store; which part is
the layout's to say. A store idle for half a year has every memory past `archiveAfterDaysUnreferenced`
(the case the cap exists for), and taking them in path order archived its `core/` first while older
ideas waited. Here the lowest type of `typePriority` goes first, then the longest unreferenced (the
seed's own measure of staleness), so what the owner values most waits for the runs after.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from ....config import CruxConfig
from ....model import Action, Corpus, Memory, Tracker
from .common import staleness, trackers_by_slug


def least_valued_first(corpus: Corpus, crux: CruxConfig, now: dt.date) -> Callable[[Action], tuple[int, int]]:
    """A sort key for retiring actions: the lowest type among the memories it retires first (a type outside
    `typePriority` as the lowest), then the most days unreferenced (unknown: as none)."""
    by_key = corpus.by_key()
    trackers = trackers_by_slug(corpus)
    lowest = len(crux.typePriority)

    def rank(m: Memory) -> int:
        return crux.typePriority.index(m.type) if m.type in crux.typePriority else lowest

    def days(m: Memory, tracker: Tracker | None) -> int:
        stale = staleness(m, tracker, now)
        return stale.days if stale is not None else 0

    def key(action: Action) -> tuple[int, int]:
        # What it retires, not a merge's survivor, which stays.
        members = [by_key[t] for t in action.targets if t in by_key and t != action.survivor]
        if not members:
            return (0, 0)
        return (-max(map(rank, members)), -max(days(m, trackers.get(m.slug)) for m in members))

    return key
