"""CRUX step 2, consistency: orphaned trackers, strength out of sync, strong memories without a
tracker, sources whose unit of work is gone, a `type` that disagrees with its type folder. One pure
function per check.
"""

from __future__ import annotations

from ....actions import SyncStrengthAction
from ....config import CruxConfig
from ....kinds import FindingKind
from ....model import Action, Finding, Memory, Tracker
from ....rules.outcome import Outcome
from ..members import ARCHIVED, declared_type, folder_type, is_archived, type_of, type_mismatch
from .common import file_slug, memories_by_slug, target_dir

# Sources that name no unit of work: nothing on disk to look for.
NOT_A_UNIT = frozenset({"adhoc", "ad-hoc", "manual", "remember", "meditate", "user", "session", "chat",
                        "conversation", "unknown", "none", "n/a"})


def orphan_trackers(trackers: list[Tracker], memory_files: list[str], not_read: list[str] | None = None) -> Outcome:
    """A tracker whose slug matches no memory file on disk (readable or not) is orphaned (step 11).

    `not_read`: the symlinked folders the reader did not follow. A memory of the tracker's slug may
    sit behind one (a type folder linked to a shared one), so the removal is then the user's call."""
    slugs = {file_slug(k) for k in memory_files}
    unsure = (f"; {', '.join(not_read)} not read (a symlinked folder): a memory with that slug may live there, "
              "you decide") if not_read else ""
    out = Outcome()
    for t in trackers:
        if t.slug not in slugs:
            out.actions.append(Action(kind="remove_orphan_tracker", targets=[t.key],
                                      reason=f"no memory file with slug {t.slug!r}{unsure}", needs_user=bool(not_read)))
    return out


def front_matter_strengths(memories: list[Memory]) -> list[int]:
    """The strengths the front matter of memories sharing one tracker gives it, each once: one is
    authoritative for the tracker (step 9); several are not (`shared_slugs.py`)."""
    return sorted({m.strength for m in memories if m.strength is not None})


def strength_sync(memories: list[Memory], trackers: dict[str, Tracker]) -> Outcome:
    """Tracker strength ≠ front-matter strength: the front matter is authoritative (step 9). One
    sync per tracker; none where the memories sharing it disagree: each sync would undo the last."""
    out = Outcome()
    for slug, group in memories_by_slug(memories).items():
        t = trackers.get(slug)
        strengths = front_matter_strengths(group)
        if t is None or len(strengths) != 1 or t.strength == strengths[0]:
            continue
        m = next(m for m in group if m.strength == strengths[0])
        had = "no strength" if t.strength is None else f"strength {t.strength}"
        out.actions.append(
            SyncStrengthAction(
                targets=[m.key, t.key],
                reason=f"tracker {had} ≠ front matter strength {m.strength}; the front matter is authoritative: tracker set to {m.strength}",
                strength=m.strength,
                tracker_strength=t.strength,
            )
        )
    return out


def untracked_strength(m: Memory) -> int:
    """The strength `m` can have with no reference ever tracked. A memory is written at strength 1
    and gains strength from references, which its tracker records; a consolidated memory's strength
    is the sum of its members' (seed step 7b), each at least 1, so one per member `consolidated_from`
    lists needs no reference at all. (Strength a member earned from references came with a tracker,
    which the consolidation merges into the new memory's: then there is a tracker to find.)"""
    listed = len(dict.fromkeys(m.extra.get("consolidated_from") or []))
    return max(1, listed)


def _members_note(m: Memory) -> str:
    n = untracked_strength(m)
    return f" (the {n} members it consolidates, 1 each)" if m.extra.get("consolidated_from") and n > 1 else ""


def missing_trackers(memories: list[Memory], trackers: dict[str, Tracker], tracking_dir: str) -> Outcome:
    """Strength above what it has untracked (`untracked_strength`: `strength > 1` for most) and no
    tracker may be a tracking gap (advisory). A member a consolidation left behind (`merged_into`)
    is not asked about: its references belong to the consolidated memory now."""
    out = Outcome()
    for m in memories:
        if m.extra.get("merged_into"):
            continue
        if m.strength is not None and m.strength > untracked_strength(m) and m.slug not in trackers:
            out.findings.append(
                Finding(
                    kind="missing_tracker",
                    targets=[m.key],
                    reason=f"strength {m.strength} > {untracked_strength(m)}{_members_note(m)} but no tracker "
                    f"{tracking_dir}/{m.slug}.refs.yml: a tracking gap",
                )
            )
    return out


def unit_name(source: str, unit_of_work: str) -> str | None:
    """The unit-of-work folder a `source` names (`spec:20260425-x` → `20260425-x`), or None if it names none."""
    s = source.strip()
    prefix = f"{unit_of_work}:"
    if s.lower().startswith(prefix.lower()):
        s = s[len(prefix):].strip()
    if not s or s.lower() in NOT_A_UNIT or s.startswith(".") or any(c in s for c in ":/\\ \t"):
        return None
    return s


def stale_sources(memories: list[Memory], crux_store: dict) -> Outcome:
    """A source whose unit of work is in neither the work dir nor the archive (advisory, never deletes).

    Without a work dir at all the sources cannot be checked, so nothing is reported.
    """
    out = Outcome()
    if not crux_store.get("work_dir_exists"):
        return out
    present = set(crux_store.get("units", []))
    work_dir, archive_dir = crux_store.get("work_dir", "specs"), crux_store.get("archive_dir", "")
    for m in memories:
        unit = unit_name(m.source, crux_store.get("unit_of_work", "spec")) if m.source else None
        if unit is None or unit in present:
            continue
        out.findings.append(
            Finding(
                kind="stale_source",
                targets=[m.key],
                reason=f"source {m.source!r}: no {work_dir}/{unit} (nor {archive_dir}/{unit}); advisory only",
            )
        )
    return out


def _rank(type_: str, crux: CruxConfig) -> int | None:
    """Its place in `typePriority` (0 the highest); `archived` is the lowest when not listed."""
    if type_ in crux.typePriority:
        return crux.typePriority.index(type_)
    return len(crux.typePriority) if type_ == ARCHIVED else None


def _from_key(old: str, new: str, crux: CruxConfig) -> str | None:
    """What the file move records of a move from `old` to `new` (`promoted_from` up the type
    priority, `demoted_from` down), or None when either type has no place in it."""
    a, b = _rank(old, crux), _rank(new, crux)
    if a is None or b is None:
        return None
    return "promoted_from" if b < a else "demoted_from"


def _mismatch_reason(m: Memory, crux: CruxConfig) -> str:
    declared, folder = declared_type(m) or "", folder_type(m, crux) or ""
    here = target_dir(m, folder, crux)
    if is_archived(m) and folder != ARCHIVED:
        read = "read as archived, as its type says: no move is proposed for it"
    else:
        read = (f"read as {folder}, its folder's type (the seed's file move, step 13, moves the file first and sets "
                "`type` after: a move cut short)")
    twin = m.extra.get("twin")
    key = _from_key(declared, folder, crux)
    with_ = f"`{key}: {declared}` and `modified`" if key else "`modified`"
    fix = f"set `type: {folder}` (with {with_}, as the move would have){f' in it and its twin {twin}' if twin else ''}"
    if _rank(declared, crux) is not None:
        fix += f", or move it to {target_dir(m, declared, crux)}/ if {declared} is right"
    if not is_archived(m):
        fix += "; a promote, demote or archive of it sets `type` as it moves the file"
    return f"in {here}/ but typed {declared}: {read}; by hand: {fix}"


def type_mismatches(memories: list[Memory], crux: CruxConfig) -> list[Finding]:
    """A memory whose `type` field disagrees with the type folder it sits in (`members.type_of`):
    the rules judge it by its folder; the finding names both and what to set by hand (no action
    edits a `type` alone; a promote, demote or archive of it sets the type as it moves the file)."""
    return [
        Finding(kind=FindingKind.TYPE_MISMATCH, targets=[m.key], reason=_mismatch_reason(m, crux))
        for m in memories
        if type_mismatch(m, crux)
    ]
