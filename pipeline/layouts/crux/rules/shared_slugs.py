"""Memories of one slug in more than one folder: the seed keys trackers by slug ("trackers reference
by slug, not path", step 13), so they share one tracker, and a type move of one lands on the other's
name. Two things no rule can settle, so neither is proposed and one `shared_slug` finding per slug
names the files, what collides and what to do by hand:

- the tracker's strength: step 9 sets it to the front matter's, but when the memories sharing it
  disagree, each sync would set it to one of them and the next run's to the other, for ever;
- a promote, demote or archive into a folder already holding a file of the slug: the seed asks the
  user to confirm the overwrite, but a move here never overwrites a file (nor puts a lone file beside
  one of its slug, where it would be read as its twin), so apply could never carry it out; nor two
  moves of the plan into one folder (apply would make the first and skip the other).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import PurePosixPath
from typing import TypeGuard

from ....actions import MoveAction
from ....kinds import FindingKind
from ....model import Action, Finding, Memory, Tracker
from ....text.counts import plural
from ..reader import CRUX_SUFFIX
from .common import MEMORY_SUFFIXES, file_slug, memories_by_slug
from .consistency import front_matter_strengths

BY_HAND = "by hand: merge them into one memory, or give one a slug of its own (rename its files)"


def slug_holders(files: Iterable[str]) -> dict[str, list[str]]:
    """The slugs held in more than one folder: each with one file per folder (the compressed one
    where the folder has both, the file the reader takes for the memory), sorted."""
    folders: dict[str, dict[str, str]] = {}
    for f in sorted(files):
        held = folders.setdefault(file_slug(f), {})
        folder = PurePosixPath(f).parent.as_posix()
        if folder not in held or f.endswith(CRUX_SUFFIX):
            held[folder] = f
    return {slug: sorted(held.values()) for slug, held in sorted(folders.items()) if len(held) > 1}


def _is_move(a: Action) -> TypeGuard[MoveAction]:
    return isinstance(a, MoveAction) and bool(a.to_path and a.targets)


def _landing(a: MoveAction) -> tuple[str, str]:
    """Where a move puts its memory: the folder and the slug."""
    return PurePosixPath(a.to_path or "").parent.as_posix(), file_slug(a.to_path or "")


def in_the_way(a: MoveAction, existing: Collection[str], landing: dict[tuple[str, str], list[str]]) -> list[str]:
    """What keeps apply from making the move: files of the memory's slug already in the folder it
    would go to, and other memories the plan moves there too (apply would make only the first);
    `landing`: the memories the plan moves, by where they land."""
    folder, slug = _landing(a)
    if folder == PurePosixPath(a.targets[0]).parent.as_posix():
        return []
    there = sorted(p for p in (f"{folder}/{slug}{suffix}" for suffix in MEMORY_SUFFIXES) if p in existing)
    too = [key for key in landing[(folder, slug)] if key != a.targets[0]]
    return [f"{p} is there" for p in there] + [f"{p} would be moved there too" for p in too]


def blocked_moves(actions: list[Action], existing: Collection[str]) -> tuple[list[Action], dict[str, list[str]]]:
    """(the actions apply can carry out, and for each move it cannot, by its slug, why: what
    `shared_slug_findings` says of it)."""
    landing: dict[tuple[str, str], list[str]] = {}
    for m in actions:
        if _is_move(m):
            landing.setdefault(_landing(m), []).append(m.targets[0])
    kept: list[Action] = []
    blocked: dict[str, list[str]] = {}
    for a in actions:
        why = in_the_way(a, existing, landing) if _is_move(a) else []
        if not why:
            kept.append(a)
            continue
        blocked.setdefault(file_slug(a.targets[0]), []).append(
            f"{a.kind} of {a.targets[0]} to {a.to_type} ({a.reason}) not proposed: {' and '.join(why)}, "
            "and a move never overwrites a file nor puts one beside another of its slug"
        )
    return kept, blocked


def _strengths_clause(group: list[Memory], tracker: Tracker | None) -> str | None:
    if tracker is None or len(front_matter_strengths(group)) < 2:
        return None
    each = ", ".join(f"{m.strength} in {m.key}" for m in group if m.strength is not None)
    had = "none" if tracker.strength is None else tracker.strength
    return f"their front matters disagree on strength ({each}): the tracker's strength ({had}) is not synced, each sync would undo the last"


def _all(n: int) -> str:
    return "both" if n == 2 else f"all {n}"


def shared_slug_findings(files: Iterable[str], memories: list[Memory], trackers: dict[str, Tracker],
                         blocked: dict[str, list[str]], tracking_dir: str) -> list[Finding]:
    """One finding per slug held in more than one folder (`files`: every memory file, readable or
    not); `blocked`: the moves `blocked_moves` took out, by slug."""
    groups = memories_by_slug(memories)
    out = []
    for slug, held in slug_holders(files).items():
        tracker = trackers.get(slug)
        where = tracker.key if tracker else f"{tracking_dir}/{slug}.refs.yml (none yet)"
        clauses = [f"{plural(len(held), 'memory', 'memories')} in different folders share the slug {slug!r}, and trackers "
                   f"are keyed by slug: one tracker, {where}, counts the references of {_all(len(held))}"]
        clauses += filter(None, [_strengths_clause(groups.get(slug, []), tracker)])
        clauses += blocked.get(slug, [])
        clauses.append(BY_HAND)
        out.append(Finding(kind=FindingKind.SHARED_SLUG, targets=held, reason="; ".join(clauses)))
    return out
