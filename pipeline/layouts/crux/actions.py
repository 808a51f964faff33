"""The crux writer's deterministic actions: prune, duplicate merge, conflict resolution, type moves
(the seed's file-move procedure), orphaned-tracker cleanup and strength sync.

Each handler checks everything first and changes the run's state only when the whole action can
be done; otherwise it records why it was skipped. Nothing is deleted: a retired memory moves,
bytes unchanged, to `{compressionSourceArchive}/{yyyymmdd}/`, its tracker to `.../trackers/`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import PurePosixPath

from ...actions import ArchiveAction, MoveAction
from ...kinds import ActionKind
from ...model import Action
from ...printable import printable
from .members import ARCHIVED, type_of
from .rules.common import target_dir
from .reader import twin_path
from .render import set_tracker_strength
from .state import Live, Run
from ...storage.files import Unreadable

# The front-matter key that records the old type (seed step 13). An archive is a move down, so it
# records `demoted_from` like a demotion.
FROM_KEY = {"promote": "promoted_from", "demote": "demoted_from", "archive": "demoted_from"}
MOVE_KINDS = tuple(FROM_KEY)


def _name(path: str) -> str:
    return PurePosixPath(path).name




# --- prune_stale ---------------------------------------------------------------------------------


def prune(run: Run, a: Action) -> None:
    blocked = run.archive_ok()
    if blocked:
        run.skip(a, blocked)
        return
    problems: list[str] = []
    done = 0
    for t in dict.fromkeys(a.targets):
        live = run.resolve(t)
        if isinstance(live, str):
            problems.append(live)
            continue
        if live.retired_by:
            problems.append(f"{t}: already archived by {live.retired_by} in this run")
            continue
        why = run.tracker_problem(live.m.slug)
        if why:
            problems.append(f"{t}: {why}")
            continue
        moved = run.archive_memory(live, "prune_stale")
        run.archive_tracker(live.m.slug)
        run.summary.archived.append((live.m.label, _current_type(run, live) or "?", f"fully stale; moved to {moved[0][1]}"))
        done += 1
    if done:
        run.applied(a)
        run.out.notes.extend(problems)
    else:
        run.skip(a, "; ".join(problems) or "nothing to archive")


# --- merge_duplicate -----------------------------------------------------------------------------


def merge(run: Run, a: Action) -> None:
    if not a.survivor or a.survivor not in a.targets:
        run.skip(a, "no survivor named among the targets")
        return
    blocked = run.archive_ok()
    if blocked:
        run.skip(a, blocked)
        return
    survivor = run.resolve(a.survivor)
    if isinstance(survivor, str):
        run.skip(a, f"survivor {survivor}")
        return
    if survivor.retired_by:
        run.skip(a, f"survivor {a.survivor} is archived by {survivor.retired_by} in this run")
        return
    why = run.tracker_problem(survivor.m.slug)
    if why:
        run.skip(a, f"survivor {a.survivor}: {why}")
        return
    members: list[Live] = []
    problems: list[str] = []
    for t in dict.fromkeys(a.targets):
        if t == a.survivor:
            continue
        live = run.resolve(t)
        if isinstance(live, str):
            problems.append(live)
        elif live is survivor:
            continue
        elif live.retired_by:
            problems.append(f"{t}: already archived by {live.retired_by} in this run")
        elif live.m.pinned:
            problems.append(f"{t}: pinned: never retired")
        elif run.tracker_problem(live.m.slug):
            problems.append(f"{t}: {run.tracker_problem(live.m.slug)}")
        else:
            members.append(live)
    if not members:
        run.skip(a, "; ".join(problems) or "nothing left to retire")
        return
    known = [x.strength for x in [survivor, *members] if x.strength is not None]
    updates: dict = {}
    if known and sum(known) != survivor.strength:
        # Strength sums are preserved: the survivor carries the retired duplicates' strength.
        updates = {"strength": sum(known), "modified": run.now}
    why = run.try_edit(survivor, updates)
    if why:
        run.skip(a, why)
        return
    for live in members:
        run.archive_memory(live, "merge_duplicate")
        tracker = run.archive_tracker(live.m.slug)
        if tracker is not None:
            survivor.tracker_merge.append(tracker)
    if updates:
        survivor.updates.update(updates)
        survivor.strength = updates["strength"]
    run.summary.consolidated.append({
        "title": survivor.m.label,
        "members": [survivor.m, *(x.m for x in members)],
        "combined": sum(x.m.extra.get("size", 0) for x in [survivor, *members]),
        "result": survivor.m.extra.get("size", 0),
        "note": f"identical text: kept {_name(survivor.m.key)}",
    })
    run.applied(a)
    run.out.notes.extend(problems)


# --- conflict --------------------------------------------------------------------------------------


def note_line(now: dt.date, other: Live) -> str:
    return f"> Note (memconsolidate, {now.isoformat()}): conflicts with {_mark(other)}"


def _mark(other: Live) -> str:
    # The part of the note that does not change from day to day: a note is never added twice.
    # printable(): a label or slug carrying a newline must not forge a line inside the memory.
    return f'"{printable(other.m.label)}" ({printable(other.m.slug)}) — kept both.'


def _date_key(live: Live) -> tuple[dt.date, dt.date] | None:
    when = live.m.modified or live.m.created
    if when is None:
        return None
    return (when, live.m.created or when)


def conflict(run: Run, a: Action, resolve: str | None) -> None:
    if resolve not in ("newer", "keep-both"):
        run.skip(a, "conflicts are applied only with --resolve newer|keep-both")
        return
    keys = list(dict.fromkeys(a.targets))[:2]
    if len(keys) < 2:
        run.skip(a, "a conflict needs two memories")
        return
    resolved = [run.resolve(k) for k in keys]
    sides = [s for s in resolved if isinstance(s, Live)]
    if len(sides) < 2:
        run.skip(a, "; ".join(s for s in resolved if isinstance(s, str)))
        return
    one, two = sides
    if one is two:
        run.skip(a, "both targets are the same memory")
        return
    for side in (one, two):
        if side.retired_by:
            run.skip(a, f"{side.m.key} is archived by {side.retired_by} in this run")
            return
    if resolve == "newer":
        _keep_newer(run, a, one, two)
    else:
        _keep_both(run, a, one, two)


def _keep_newer(run: Run, a: Action, one: Live, two: Live) -> None:
    blocked = run.archive_ok()
    if blocked:
        run.skip(a, blocked)
        return
    k1, k2 = _date_key(one), _date_key(two)
    if k1 is None or k2 is None:
        undated = one if k1 is None else two
        run.skip(a, f"cannot tell which is newer: {undated.m.key} has no modified or created date")
        return
    if k1 == k2:
        run.skip(a, f"cannot tell which is newer: both dated {k1[0].isoformat()}")
        return
    older, newer = (one, two) if k1 < k2 else (two, one)
    why = run.tracker_problem(older.m.slug)
    if why:
        run.skip(a, f"{older.m.key}: {why}")
        return
    moved = run.archive_memory(older, "conflict")
    run.archive_tracker(older.m.slug)
    run.summary.conflicts.append(
        (one.m.label, two.m.label, f'kept the newer "{newer.m.label}"; the older moved to {moved[0][1]}')
    )
    run.applied(a)


def _keep_both(run: Run, a: Action, one: Live, two: Live) -> None:
    plan: list[tuple[Live, str]] = []
    for side, other in ((one, two), (two, one)):
        text = run.text_of(side.path)[0]
        if _mark(other) not in text and not any(_mark(other) in n for n in side.notes):
            plan.append((side, note_line(run.now, other)))
    if not plan:
        run.skip(a, "both sides already carry the note")
        return
    for side, line in plan:
        why = run.try_edit(side, {"modified": run.now}, [line])
        if why:
            run.skip(a, why)
            return
    for side, line in plan:
        side.notes.append(line)
        side.updates["modified"] = run.now
    run.summary.conflicts.append((one.m.label, two.m.label, "kept both with a disambiguation note"))
    run.applied(a)


# --- promote / demote / archive: the seed's file-move procedure ------------------------------------


def _current_type(run: Run, live: Live) -> str | None:
    """The type the rules judged the memory by (`members.type_of`: its type folder's when its `type`
    field disagrees), else its folder's name."""
    return type_of(live.m, run.crux) or live.m.extra.get("folder_type")


def _movable(run: Run, a: Action) -> Live | str:
    """The memory a move (or a member's archive) names, or why it cannot be moved: gone, already
    archived or moved in this run, or not of the type the plan read."""
    live = run.resolve(a.targets[0])
    if isinstance(live, str):
        return live
    if live.retired_by:
        return f"archived by {live.retired_by} in this run"
    if live.moved_by:
        return f"already moved by {live.moved_by} in this run"
    old_type = _current_type(run, live)
    if not old_type:
        return "the memory's current type is unknown"
    if a.from_type and a.from_type != old_type:
        return f"its type is {old_type}, not {a.from_type}: the plan is out of date"
    return live


def move(run: Run, a: Action) -> None:
    if not a.targets:
        run.skip(a, "no target")
        return
    if isinstance(a, ArchiveAction) and a.consolidated_into:
        finish_consolidation(run, a, a.consolidated_into)
        return
    new_type = a.to_type
    known = set(run.crux.typePriority) | {ARCHIVED}
    if not new_type or new_type not in known or "/" in new_type or new_type.startswith("."):
        run.skip(a, f"to_type {new_type!r} is not a type of this store (typePriority)")
        return
    live = _movable(run, a)
    if isinstance(live, str):
        run.skip(a, live)
        return
    old_type = _current_type(run, live)
    assert old_type is not None  # _movable checked it
    folder = target_dir(live.m, new_type, run.crux)
    dests = [f"{folder}/{_name(f)}" for f in live.files]
    planned = a.to_path if isinstance(a, MoveAction) else None
    if planned and planned != dests[0]:
        run.skip(a, f"to_path {planned} does not follow the file-move procedure ({dests[0]})")
        return
    if dests[0] == live.path:
        run.skip(a, f"already in {folder}")
        return
    for d in dests:
        if run.ov.exists(d):
            run.skip(a, f"{d} already exists: a move never overwrites a file")
            return
    # A lone file moved next to another memory's file of the same slug would be read as its twin.
    other = twin_path(dests[0])
    if not live.twin and run.ov.exists(other):
        run.skip(a, f"{other} already exists: the moved file would become its twin")
        return
    updates = {"type": new_type, FROM_KEY[a.kind]: old_type, "modified": run.now}
    why = run.try_edit(live, updates)
    if why:
        run.skip(a, why)
        return
    for src, dest in zip(live.files, dests):
        run.ov.move(src, dest)
    live.path = dests[0]
    live.twin = dests[1] if len(dests) > 1 else None
    live.moved_by = a.kind
    live.updates.update(updates)
    if a.kind == ActionKind.PROMOTE:
        run.summary.promotions.append((live.m.label, old_type, new_type))
    elif a.kind == ActionKind.DEMOTE:
        run.summary.demotions.append((live.m.label, old_type, new_type))
    else:
        run.summary.archived.append((live.m.label, old_type, ""))
    run.applied(a)


# --- archive of a member a consolidation left behind (rules/leftovers.py) ---------------------------


def _still_held(member: Live, holder: Live) -> str | None:
    """Why the plan's reason may no longer hold: the consolidated memory does not list the member,
    or this run archived or moved it (the writer runs the members' archives after the other moves,
    so a move of the holder is seen here whatever the plan's order). Its file changed since the plan
    (its `consolidated_from` with it) was checked before, with the targets: the action carries its
    hash (`ArchiveAction.judged_with`)."""
    name = member.m.extra.get("merged_as")
    if member.m.extra.get("merged_into") != holder.m.key or name not in (holder.m.extra.get("consolidated_from") or []):
        return f"{holder.m.key} no longer holds {member.m.key}: the plan is out of date"
    if holder.retired_by:
        return f"its consolidated memory {holder.m.key} is archived by {holder.retired_by} in this run"
    if holder.moved_by:
        return f"its consolidated memory {holder.m.key} is moved by {holder.moved_by} in this run"
    return None


def finish_consolidation(run: Run, a: Action, holder_key: str) -> None:
    """Archive the member as its consolidation would have (seed step 13.6-7): with its twin into
    the dated archive folder, bytes unchanged, and its tracker with it. The tracker's references are
    not added to the consolidated memory's: whether the consolidation counted them already cannot
    be told, and the archived tracker keeps them."""
    live = _movable(run, a)
    holder = run.resolve(holder_key)
    if isinstance(live, str) or isinstance(holder, str):
        run.skip(a, live if isinstance(live, str) else f"its consolidated memory {holder}")
        return
    why = _still_held(live, holder) or run.archive_ok() or run.tracker_problem(live.m.slug)
    if why:
        run.skip(a, why)
        return
    moved = run.archive_memory(live, "archive")
    run.archive_tracker(live.m.slug)
    note = f'already consolidated into "{holder.m.label}"; moved to {moved[0][1]}'
    run.summary.archived.append((live.m.label, _current_type(run, live) or "?", note))
    run.applied(a)


# --- remove_orphan_tracker --------------------------------------------------------------------------


def orphan(run: Run, a: Action) -> None:
    key = a.targets[0] if a.targets else ""
    tracker = next((t for t in run.corpus.trackers if t.key == key), None)
    if key in run.unreadable:
        run.skip(a, f"{key}: unreadable file: left untouched")
        return
    if tracker is None:
        run.skip(a, f"{key}: not a tracker of this store")
        return
    if key in run.archived_trackers:
        run.skip(a, f"{key}: already archived in this run")
        return
    if (run.root / key).is_symlink():
        run.skip(a, f"{key} is a symlink: left untouched")
        return
    on_disk = run.corpus.extra.get("crux", {}).get("memory_files") or list(run.by_file)
    users = [f for f in on_disk if _name(f) in (f"{tracker.slug}.memory.md", f"{tracker.slug}.memory.crux.md")]
    if users:
        run.skip(a, f"not orphaned: {users[0]} has slug {tracker.slug!r}")
        return
    blocked = run.archive_ok()
    if blocked:
        run.skip(a, blocked)
        return
    dest = run.archive_target(key, "trackers")
    run.ov.move(key, dest)
    run.archived_trackers.add(key)
    run.summary.cleaned.append(_name(key))
    run.applied(a)


# --- sync_strength ----------------------------------------------------------------------------------


def sync(run: Run, a: Action) -> None:
    live = run.resolve(a.targets[0]) if a.targets else "no target"
    if isinstance(live, str):
        run.skip(a, live)
        return
    if live.retired_by:
        run.skip(a, f"archived by {live.retired_by} in this run: its tracker went with it")
        return
    tracker = run.tracker_of(live.m.slug)
    if tracker is None:
        run.skip(a, f"no tracker for {live.m.slug}")
        return
    if len(a.targets) > 1 and a.targets[1] != tracker.key:
        run.skip(a, f"{a.targets[1]} is not the tracker of {live.m.key} ({tracker.key})")
        return
    why = run.tracker_problem(live.m.slug)
    if why:
        run.skip(a, why)
        return
    if live.strength is None:
        run.skip(a, f"{live.m.key} has no strength in its front matter")
        return
    try:
        data = run.ov.read(tracker.key)
    except Unreadable:
        data = None
    text = data.decode("utf-8-sig") if data is not None else None
    if not live.tracker_merge and (text is None or set_tracker_strength(text, live.strength) is None):
        # Reported as applied, the tracker would stay as it was and the next plan propose it again.
        run.skip(a, f"{tracker.key}: its strength cannot be set without rewriting the tracker; left as it was")
        return
    live.tracker_sync = True
    run.applied(a)
