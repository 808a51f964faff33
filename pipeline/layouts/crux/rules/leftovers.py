"""Finish a consolidation cut short (CRUX seed 000, step 13.6-7): propose archiving its members
still on disk.

A consolidation archives its members and deletes them from the working folders; a member the reader
finds still there (`merged_into`, see `members.py` for when a name counts) may be archived now, the
way the consolidation would have: into `{compressionSourceArchive}/{yyyymmdd}/`, journaled, with its
tracker. The reason names the consolidated memory that holds it and the name it is listed by.

Always the user's decision (`needs_user`). That the member's text is in the consolidated memory is
assumed, not checked: the consolidation rewrites its members' text (step 7c synthesises one body;
on the real store none of the six leftovers has its lines verbatim in its consolidated memory), the
member may have been edited since (then the reason gives the day: `modified` later than the
consolidation's), and a goal or core member is archived with the rest. Being listed in
`consolidated_from` says the member was merged once, not that nothing of it would be lost. Pinned
and archived members are left alone; so is a member whose consolidated memory the plan's final
actions retire or move (`without_stranded_members`, the layout's `after_cap`).
"""

from __future__ import annotations

from ....actions import ArchiveAction
from ....config import CruxConfig
from ....kinds import ActionKind
from ....model import Action, Memory
from ....rules.blast_cap import retired_by
from ....rules.outcome import Outcome
from ..members import (ARCHIVED, BY_SLUG, BY_TITLE_HASH, absorbed, after_consolidation, consolidated_on, is_archived,
                       type_of)

_HOW = {
    BY_TITLE_HASH: "its id by the seed's rule sha256(title)[:7]: it has none written",
    BY_SLUG: "its slug: it has no id",
}


def _reason(m: Memory, holder: Memory) -> str:
    name = m.extra.get("merged_as", "")
    how = _HOW.get(m.extra.get("merged_by", ""), "its id")
    reason = (
        f'already consolidated into {holder.key} ("{holder.label}"), whose consolidated_from lists {name} '
        f"({how}); the consolidation archives its members (seed step 13): this one was left behind. "
        "Proposed on the assumption that its text is in the consolidated memory (not checked: compare "
        "them before you accept)"
    )
    if m.modified is not None and after_consolidation(m.modified, holder) and (day := consolidated_on(holder)) is not None:
        reason += (f"; edited on {m.modified.isoformat()}, after the consolidation on {day.isoformat()}: "
                   "what it gained is not in the consolidated memory")
    return reason


def leftover_archivals(memories: list[Memory], crux: CruxConfig) -> Outcome:
    """One `archive` (with `consolidated_into`), needing the user, per leftover member of a live
    consolidation (`from_type`: the type it is judged by, `type_of`, which apply checks)."""
    by_key = {m.key: m for m in memories}
    out = Outcome()
    for m in memories:
        holder = by_key.get(m.extra.get("merged_into") or "")
        if holder is None or not absorbed(m) or is_archived(m) or m.pinned:
            continue
        out.actions.append(
            ArchiveAction(
                targets=[m.key],
                reason=_reason(m, holder),
                needs_user=True,
                from_type=type_of(m, crux),
                to_type=ARCHIVED,
                title=m.label,
                consolidated_into=holder.key,
            )
        )
    return out


# What takes a consolidated memory out of its place, besides a retirement (a volume re-partitioned too).
MOVES = (ActionKind.PROMOTE, ActionKind.DEMOTE, ActionKind.ARCHIVE, ActionKind.REBALANCE_VOLUMES)


def without_stranded_members(actions: list[Action], live: list[str]) -> list[Action]:
    """The actions but the archives of consolidation members (`consolidated_into`) whose
    consolidated memory another of the actions retires, moves, or re-partitions: the member would
    leave the store in the same run as the memory said to hold its text (apply re-checks, too).
    Run once the retirement cap has passed over them (`after_cap`): a retirement the cap holds back
    does not hold back the member's archive."""
    keys = set(live)
    taken: set[str] = set()
    for a in actions:
        taken.update(retired_by(a, keys))
        if a.kind in MOVES:
            taken.update(a.targets)
    return [a for a in actions if getattr(a, "consolidated_into", None) not in taken]
