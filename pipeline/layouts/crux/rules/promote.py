"""CRUX step 4, promote: `strength ≥ promoteAt` moves a memory to `promoteTo` (values verbatim from config).

`promoteAt: null` (or no transition for the type) is terminal. A memory demoted earlier is promoted
again only after a reference newer than the demotion. A `promoteTo` that is not in
`typePriority` is a config problem: the promotion is skipped and reported (seed error table).
"""

from __future__ import annotations

from ....config import CruxConfig
from ....model import Finding, Memory, Tracker
from ..members import is_archived
from .common import move_action
from ....rules.outcome import Outcome


def referenced_since_demotion(m: Memory, tracker: Tracker | None) -> bool:
    """A demoted memory earns a promotion back only with a reference newer than its demotion: its
    strength was what it had when it was demoted for going unused (issue 11, item 15). A memory that
    was never demoted needs nothing."""
    if not m.meta.get("demoted_from"):
        return True
    last = tracker.last_referenced if tracker is not None else None
    return last is not None and m.modified is not None and last > m.modified


def promotions(
    memories: list[Memory], crux: CruxConfig, trackers: dict[str, Tracker] | None = None
) -> Outcome:
    out = Outcome()
    for m in memories:
        if m.type is None or is_archived(m) or m.strength is None:
            continue
        if not referenced_since_demotion(m, (trackers or {}).get(m.slug)):
            continue
        rule = crux.typeTransitions.get(m.type)
        if rule is None or rule.promoteAt is None or m.strength < rule.promoteAt:
            continue
        because = f"strength {m.strength} ≥ threshold {rule.promoteAt}"
        if not rule.promoteTo or rule.promoteTo not in crux.typePriority:
            what = f"promoteTo {rule.promoteTo!r} is not in typePriority" if rule.promoteTo else "has no promoteTo"
            out.findings.append(
                Finding(
                    kind="config_issue",
                    targets=[m.key],
                    reason=f"typeTransitions.{m.type} {what}: promotion skipped ({because})",
                )
            )
            continue
        out.actions.append(move_action("promote", m, rule.promoteTo, because, crux))
    return out
