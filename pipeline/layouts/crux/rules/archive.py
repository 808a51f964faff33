"""CRUX step 6, archive: unreferenced for more than `archiveAfterDaysUnreferenced` days (any type),
and ideas unreferenced for more than `demoteAfterDaysUnreferenced` (step 5: an idea has nothing
below it, so it is archived instead of demoted; an idea by its type folder when its `type` field
disagrees, `members.type_of`). Already archived memories are left alone.
"""

from __future__ import annotations

import datetime as dt

from ....config import CruxConfig
from ....model import Memory, Tracker
from ..members import ARCHIVED, is_archived, type_of
from .common import move_action, staleness
from ....rules.outcome import Outcome

IDEA = "idea"
GOAL = "goal"


def archivals(
    memories: list[Memory], trackers: dict[str, Tracker], crux: CruxConfig, now: dt.date
) -> Outcome:
    out = Outcome()
    for m in memories:
        if is_archived(m):
            continue
        stale = staleness(m, trackers.get(m.slug), now)
        if stale is None:
            continue
        if stale.days > crux.archiveAfterDaysUnreferenced:
            limit = crux.archiveAfterDaysUnreferenced
            because = f"unreferenced for {stale.days} days, threshold: {limit}; {stale.basis}"
        elif type_of(m, crux) == IDEA and stale.days > crux.demoteAfterDaysUnreferenced:
            limit = crux.demoteAfterDaysUnreferenced
            because = f"unreferenced for {stale.days} days, threshold: {limit}; {stale.basis}; an idea is archived, not demoted"
        else:
            continue
        action = move_action("archive", m, ARCHIVED, because, crux)
        if type_of(m, crux) == GOAL:
            # a goal may be waiting, not finished: the user reviews it (goal_review) and decides
            action = action.model_copy(update={"needs_user": True, "reason": action.reason + "; a goal: archive only after review"})
        out.actions.append(action)
    return out
