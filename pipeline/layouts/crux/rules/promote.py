"""CRUX step 4, promote: `strength ≥ promoteAt` moves a memory to `promoteTo` (values verbatim from config).

The type is the memory's type folder's when its `type` field disagrees (`members.type_of`: a file
move cut short). `promoteAt: null` (or no transition for the type) is terminal. A memory demoted
earlier is promoted again only after a reference newer than the demotion. A `promoteTo` that is not
in `typePriority` is a config problem: the promotion is skipped and reported (seed error table); so
is one that is the type itself (the move would be into the folder the memory is in).
"""

from __future__ import annotations

from ....config import CruxConfig
from ....model import Finding, Memory, Tracker
from ..members import is_archived, type_of
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
        type_ = type_of(m, crux)
        if type_ is None or is_archived(m) or m.strength is None:
            continue
        if not referenced_since_demotion(m, (trackers or {}).get(m.slug)):
            continue
        rule = crux.typeTransitions.get(type_)
        if rule is None or rule.promoteAt is None or m.strength < rule.promoteAt:
            continue
        because = f"strength {m.strength} ≥ threshold {rule.promoteAt}"
        problem = _promote_to_problem(rule.promoteTo, type_, crux)
        if problem:
            out.findings.append(
                Finding(kind="config_issue", targets=[m.key], reason=f"typeTransitions.{type_} {problem}: promotion skipped ({because})")
            )
            continue
        assert rule.promoteTo is not None  # _promote_to_problem said so
        out.actions.append(move_action("promote", m, rule.promoteTo, because, crux))
    return out


def _promote_to_problem(promote_to: str | None, type_: str, crux: CruxConfig) -> str | None:
    """Why `promoteTo` is no type to promote a `type_` memory to, or None."""
    if not promote_to:
        return "has no promoteTo"
    if promote_to not in crux.typePriority:
        return f"promoteTo {promote_to!r} is not in typePriority"
    if promote_to == type_:
        return f"promoteTo {promote_to!r} is its own type"
    return None
