"""Finish a consolidation cut short (CRUX seed 000, step 13.6-7): archive its members still on disk.

A consolidation archives its members and deletes them from the working folders; a member the reader
finds still there (`merged_into`, see `members.py` for when a name counts) is archived now, the way
the consolidation would have: into `{compressionSourceArchive}/{yyyymmdd}/`, journaled, with its
tracker. The reason names the consolidated memory that holds it and the name it is listed by.

Automatic (no user needed): the consolidation was confirmed when it was made, and this is the step
of it that did not happen; the member's text is already in the consolidated memory, and the archive
keeps its bytes (undo restores them). It needs the user when the member was edited after the
consolidation (`modified` later than the consolidated memory's): that edit may hold something the
consolidated memory lacks. Pinned and already archived members are left alone.
"""

from __future__ import annotations

from ....actions import ArchiveAction
from ....model import Memory
from ....rules.outcome import Outcome
from ..members import BY_SLUG, BY_TITLE_HASH, absorbed, consolidated_on
from .common import ARCHIVED, is_archived

_HOW = {
    BY_TITLE_HASH: "its id by the seed's rule sha256(title)[:7]: it has none written",
    BY_SLUG: "its slug: it has no id",
}


def _reason(m: Memory, holder: Memory) -> str:
    name = m.extra.get("merged_as", "")
    how = _HOW.get(m.extra.get("merged_by", ""), "its id")
    return (f'already consolidated into {holder.key} ("{holder.label}"), whose consolidated_from lists {name} '
            f"({how}); the consolidation archives its members (seed step 13): this one was left behind")


def _edited_after(m: Memory, holder: Memory) -> str | None:
    day = consolidated_on(holder)
    if m.modified is None or day is None or m.modified <= day:
        return None
    return (f"; edited on {m.modified.isoformat()}, after the consolidation on {day.isoformat()}: "
            "what it gained may not be in the consolidated memory, so you decide")


def leftover_archivals(memories: list[Memory]) -> Outcome:
    """One `archive` (with `consolidated_into`) per leftover member of a live consolidation."""
    by_key = {m.key: m for m in memories}
    out = Outcome()
    for m in memories:
        holder = by_key.get(m.extra.get("merged_into") or "")
        if holder is None or not absorbed(m) or is_archived(m) or m.pinned:
            continue
        edited = _edited_after(m, holder)
        out.actions.append(
            ArchiveAction(
                targets=[m.key],
                reason=_reason(m, holder) + (edited or ""),
                needs_user=edited is not None,
                from_type=m.type,
                to_type=ARCHIVED,
                title=m.label,
                consolidated_into=holder.key,
            )
        )
    return out
