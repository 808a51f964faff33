"""What the crux rules share: days unreferenced, the seed's file-move target, tracker lookup.

Pure helpers over the typed records; nothing here reads the disk.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from ....config import CruxConfig
from ....actions import ACTION_TYPES, MoveAction
from ....kinds import ActionKind
from ....model import Corpus, Memory, Tracker
from ..members import type_of
from ..reader import MEMORY_SUFFIXES, slug_of


@dataclass(frozen=True)
class Staleness:
    days: int
    basis: str  # why these days: "last referenced 2026-08-15" or "no tracker; created 2026-07-01"


def file_slug(key: str) -> str:
    """The slug a memory file answers to (its name without the memory suffix): trackers are keyed by it."""
    return slug_of(PurePosixPath(key).name)


def trackers_by_slug(corpus: Corpus) -> dict[str, Tracker]:
    """Trackers keyed by slug; with two files for one slug the first key wins (sorted order)."""
    out: dict[str, Tracker] = {}
    for t in sorted(corpus.trackers, key=lambda t: t.key):
        out.setdefault(t.slug, t)
    return out


def memories_by_slug(memories: list[Memory]) -> dict[str, list[Memory]]:
    """The memories of each slug, in key order: more than one when they sit in different folders."""
    out: dict[str, list[Memory]] = {}
    for m in sorted(memories, key=lambda m: m.key):
        out.setdefault(m.slug, []).append(m)
    return out


def staleness(m: Memory, tracker: Tracker | None, now: dt.date) -> Staleness | None:
    """Days unreferenced (seed step 5), with the clock restarted by a demotion.

    Counting from `last_referenced` alone would demote a memory one more tier every night until it
    is archived; a demoted memory gets the full period again in its new tier, counted from the
    demotion (`modified` when `demoted_from` is set).
    """
    result = _referenced_staleness(m, tracker, now)
    demoted = m.modified if m.meta.get("demoted_from") else None
    if demoted is not None and (result is None or (now - demoted).days < result.days):
        return Staleness((now - demoted).days, f"demoted from {m.meta['demoted_from']} on {demoted.isoformat()}")
    return result


def _referenced_staleness(m: Memory, tracker: Tracker | None, now: dt.date) -> Staleness | None:
    """Days since the tracker's `last_referenced`, else since front-matter `created`.

    None when neither date is known: age cannot be judged, so nothing is demoted or archived.
    """
    if tracker is not None and tracker.last_referenced is not None:
        return Staleness((now - tracker.last_referenced).days, f"last referenced {tracker.last_referenced.isoformat()}")
    if m.created is None:
        return None
    why = "tracker has no last_referenced" if tracker is not None else "no tracker"
    return Staleness((now - m.created).days, f"{why}; counted from created {m.created.isoformat()}")


def target_dir(m: Memory, new_type: str, crux: CruxConfig) -> str:
    """The seed's file-move procedure: base `{memoriesDir}/{type}/`, agent `{agentMemoriesDir}/{agent}/{type}/`."""
    if m.extra.get("scope") == "agent" and m.extra.get("agent"):
        return f"{crux.storage.agentMemoriesDir}/{m.extra['agent']}/{new_type}"
    return f"{crux.storage.memoriesDir}/{new_type}"


def move_fields(m: Memory, new_type: str, crux: CruxConfig) -> dict[str, Any]:
    """Extra action fields for a type move: `to_path` and the twin's `twin_to_path`."""
    folder = target_dir(m, new_type, crux)
    fields: dict[str, Any] = {"title": m.label, "to_path": f"{folder}/{PurePosixPath(m.key).name}"}
    twin = m.extra.get("twin")
    if twin:
        fields["twin_to_path"] = f"{folder}/{PurePosixPath(twin).name}"
    return fields


def existing_files(corpus: Corpus) -> set[str]:
    return set(corpus.extra.get("crux", {}).get("memory_files", [])) or {m.key for m in corpus.memories}


def move_action(kind: str, m: Memory, new_type: str, reason: str, crux: CruxConfig) -> MoveAction:
    """A promote/demote/archive of `m` into `new_type`, from the type it is judged by (`type_of`:
    apply checks it is still that). One onto a file already there is not proposed
    (`shared_slugs.blocked_moves`)."""
    cls = ACTION_TYPES[ActionKind(kind)]
    assert issubclass(cls, MoveAction), kind
    return cls(targets=[m.key], from_type=type_of(m, crux), to_type=new_type, reason=reason, **move_fields(m, new_type, crux))
