"""The blast-radius cap (issue 11, item 13): one run retires at most `max_retire_fraction` of a store's
live memories, in every layout. The rest wait, reported as `capped`, for the next run.

A run that archives 65 of 75 memories is almost always a misjudgement (no tracking data read as
"never referenced", a repository that was not the memories' own), and even when right it is too much
for a person to check at once. Retiring is archiving, pruning or merging a memory away.

Which actions stay is deterministic: automatic actions before those that need the user, then the
claim order (merges, prunes, consolidations, archives), then the layout's order of what it values
least (`first`: crux retires its lowest type and longest unreferenced memories first, so a store idle
for half a year archives ideas tonight, not its core), then the plan's own order. An action is
kept whole or not at all; a smaller one later in that order may still fit what is left. A small
store may always retire one memory per run (a 25 % cap would otherwise never let a store of three
merge its one duplicate).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..actions import CappedFinding
from ..model import Action
from .outcome import Outcome, action_sort_key

RETIRING = ("merge_duplicate", "prune_stale", "consolidate", "archive", "archive_session")


def retired_by(action: Action, live: set[str]) -> list[str]:
    """The live memories this action takes out of the store (archived, pruned, merged away)."""
    if action.kind not in RETIRING:
        return []
    if action.kind == "merge_duplicate":
        return [t for t in action.targets if t != action.survivor and t in live]
    if action.kind == "archive" and action.to_type not in (None, "archived"):
        return []
    return [t for t in action.targets if t in live]


def retire_budget(live: int, fraction: float) -> int:
    """`fraction` of the live memories, rounded down, but one at least (unless the fraction is 0):
    a store of three with one duplicate still gets it merged, one archived memory per run."""
    if fraction <= 0 or live == 0:
        return 0
    return max(1, math.floor(live * fraction + 1e-9))


def cap_retirements(actions: list[Action], live_keys: list[str], fraction: float,
                    first: Callable[[Action], Any] | None = None) -> Outcome:
    """The actions that fit the cap, and one `capped` finding naming what waits. `first`: a key
    ordering actions of one kind, those to retire first first (the layout's `retire_first`)."""
    live = set(live_keys)
    budget = retire_budget(len(live), fraction)
    order = sorted(
        range(len(actions)),
        key=lambda i: (actions[i].needs_user, RETIRING.index(actions[i].kind) if actions[i].kind in RETIRING else 0,
                       first(actions[i]) if first is not None else (), action_sort_key(actions[i])),
    )
    dropped: set[int] = set()
    waiting: list[str] = []
    used: set[str] = set()
    for i in order:
        retired = [t for t in retired_by(actions[i], live) if t not in used]
        if not retired:
            continue
        if len(used) + len(retired) <= budget:
            used.update(retired)
            continue
        dropped.add(i)
        waiting.extend(retired)
    out = Outcome(actions=[a for i, a in enumerate(actions) if i not in dropped])
    if waiting:
        out.findings.append(
            CappedFinding(
                targets=sorted(set(waiting)),
                reason=(
                    f"max_retire_fraction={fraction:g}: this run retires at most {budget} of {len(live)} live "
                    f"memories; {len(set(waiting))} more wait for the next run (raise it with --max-retire)"
                ),
                retire_budget=budget,
            )
        )
    return out
