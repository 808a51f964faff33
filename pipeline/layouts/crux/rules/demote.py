"""CRUX step 5, demote: unreferenced for more than `demoteAfterDaysUnreferenced` days.

core → learning, learning → idea, redflag → learning. Goals are never demoted: they get a
`goal_review` finding instead. Ideas are archived rather than demoted (see `crux_archive`). The type
is the type folder's when the `type` field disagrees (`members.type_of`). Days count from the
tracker's `last_referenced`, else from front-matter `created`; "more than" is strict, so a memory
exactly at the threshold stays.
"""

from __future__ import annotations

import datetime as dt

from ....config import CruxConfig
from ....model import Finding, Memory, Tracker
from ..members import is_archived, type_of
from .common import move_action, staleness
from ....rules.outcome import Outcome

DEMOTE_TO = {"core": "learning", "learning": "idea", "redflag": "learning"}
NEVER_DEMOTED = "goal"


def demotions(
    memories: list[Memory], trackers: dict[str, Tracker], crux: CruxConfig, now: dt.date
) -> Outcome:
    out = Outcome()
    limit = crux.demoteAfterDaysUnreferenced
    for m in memories:
        type_ = type_of(m, crux)
        if is_archived(m) or (type_ not in DEMOTE_TO and type_ != NEVER_DEMOTED):
            continue
        stale = staleness(m, trackers.get(m.slug), now)
        if stale is None or stale.days <= limit:
            continue
        because = f"unreferenced for {stale.days} days, threshold: {limit}; {stale.basis}"
        if type_ == NEVER_DEMOTED:
            out.findings.append(
                Finding(kind="goal_review", targets=[m.key], reason=f"{because}: goals are never demoted, review it by hand")
            )
            continue
        new_type = DEMOTE_TO[type_]
        out.actions.append(move_action("demote", m, new_type, because, crux))
    return out
