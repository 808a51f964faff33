"""What a crux run writes into `storage.indexFile`: the store as the plan read it, as the run leaves it.

The seed's step 15 rebuilds the index after every run that changes the store ("skipping this step
leaves the index stale, which causes downstream agents (Recall, Dream, session-start hooks) to
reference moved, deleted, or renamed files"): the files this run moves, archives or writes must be
where the index says. What changed since the plan is no part of what the user reviewed, and the run
never writes it into the index:

- the index itself edited since the plan read it (an owner's note, say): left as it is, never
  written over; the run's notes say so, and that the files this run moved are indexed where they
  are by the next run (its plan proposes `rebuild_index`), not by this one;
- a memory file added since the plan: not indexed (the next run indexes it); one whose files were
  removed since: its entry stays (the next run drops it); both said in the run's notes;
- a planned `rebuild_index` skipped because which files the memory folders hold changed since the
  plan: the index is not rebuilt but edited for this run's own changes only (`followed_keys`), and
  the skip's reason says that instead of "left as it is".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...journal import Op, state
from ...kinds import ActionKind
from ...model import Action, Corpus
from ...storage.files import Unreadable, rel
from ...storage.since_plan import LEFT_AS_IT_IS
from .after import index_memories, old_entries, old_index
from .index import records_the_same, render_crux_index
from .reader import index_keys, memory_files, twin_path
from .rules.common import trackers_by_slug
from .state import Run

CREATED = state(None)  # what a write op expects where no file was: the run creates the file


@dataclass
class IndexWrite:
    text: str | None  # None: the index is left as it is
    archive_old: bool = False  # the old index, unreadable, goes to the archive before it is replaced


@dataclass
class SincePlan:
    """The memory files of the store that changed since the plan read them, by this run's start."""

    reviewed: set[str] | None  # the memory files the plan read (None: the corpus does not say)
    added: list[str]  # memory files there are now that the plan did not read
    removed: list[str]  # memory files the plan read that are gone now, and their twin too


def index_write(run: Run, after: Corpus, primaries: list[str]) -> IndexWrite:
    """The index this run writes, given the store as the run leaves it (`after.after_corpus`); what
    it could not reflect is said in the run's notes."""
    index = run.crux.storage.indexFile
    if (run.root / index).is_symlink():
        run.out.notes.append(f"{index} is a symlink: not rebuilt")
        return IndexWrite(None)
    try:
        old = run.ov.read(index)
    except Unreadable as exc:
        # Over the size cap, say: archiving it would mean reading it whole. It stays as it is.
        run.out.notes.append(f"{index} cannot be read ({exc}): not rebuilt")
        return IndexWrite(None)
    document = old_index(old) if index not in run.unreadable else None
    previous = old_entries(document)
    since = since_plan(run)
    skipped = next(((a, why) for a, why in run.out.skipped if a.kind == ActionKind.REBUILD_INDEX), None)
    keys = (followed_keys(run.ov.ops, previous, after, primaries) if skipped
            else rebuilt_keys(after, primaries, previous, since, run.ov.state))
    memories = index_memories(after, keys, previous, run.settings)
    text = render_crux_index(memories, trackers_by_slug(after), run.crux.typePriority, run.now, list(previous))
    if edited_since_plan(run, index):
        if not records_the_same(document, text):
            run.out.notes.append(
                f"{index} changed since the plan: left as it is, not written for this run's changes; until the next "
                f"run rebuilds it (its plan proposes rebuild_index), it may list files this run moved or archived "
                f"where they were, and miss the ones it wrote: no memory is lost, only the index lags")
        return IndexWrite(None)
    if skipped and document is None:
        # Not rebuilt, and nothing to edit for this run's changes: no index, or none that can be read.
        run.out.notes.append(f"{index} not rebuilt, and there is no index to edit for this run's changes: "
                             f"the next run rebuilds it (its plan proposes rebuild_index)")
        return IndexWrite(None)
    unreadable_old = index in run.unreadable and run.ov.exists(index)
    if not unreadable_old and records_the_same(document, text):
        return IndexWrite(None)  # nothing it records changed: a new "Last rebuilt" stamp alone is no reason to write it
    _say_what_is_not_reflected(run, index, since, set(keys))
    if skipped:
        _reword_skip(run, *skipped, index)
    return IndexWrite(text, archive_old=unreadable_old)


def edited_since_plan(run: Run, index: str) -> bool:
    """Whether the index no longer holds what the plan read (written or created since, or gone)."""
    read = run.corpus.index_shas.get(index)
    return read is not None and run.ov.disk.state(index) != read


def since_plan(run: Run) -> SincePlan:
    read = run.corpus.extra.get("crux", {}).get("memory_files")
    if not isinstance(read, list):
        return SincePlan(None, [], [])
    reviewed = set(read)
    there = {rel(run.root, p) for p in memory_files(run.root, run.crux)}
    gone = [key for key in sorted(reviewed - there) if twin_path(key) not in there]
    return SincePlan(reviewed, sorted(there - reviewed), gone)




def rebuilt_keys(after: Corpus, primaries: list[str], previous: dict[str, dict[str, Any]], since: SincePlan,
                 written: dict[str, bytes | None]) -> list[str]:
    """The files a rebuild lists (`reader.index_keys`, as the next plan would), but only those the
    plan read or this run wrote (`written`): a file added since the plan is not indexed — unless it
    is the new twin of a memory the plan read, which its old file keeps indexed — and the entry of a
    memory removed since stays."""
    if since.reviewed is None:
        return index_keys(after.memories, primaries, previous)
    reviewed = since.reviewed
    twin_of = {m.key: m.extra.get("twin") for m in after.memories}
    keys = []
    for key in index_keys(after.memories, primaries, previous):
        if key in reviewed or key in written:
            keys.append(key)
        elif (twin := twin_of.get(key)) and twin in reviewed:
            keys.append(twin)
    return keys + [key for key in since.removed if key in previous and key not in keys]


def followed_keys(ops: list[Op], previous: dict[str, dict[str, Any]], after: Corpus, primaries: list[str]) -> list[str]:
    """The files the index lists once edited for this run's own changes only: each file it lists,
    where the run moved it (dropped once out of the memory folders: archived), then each memory
    file the run created. What it listed or missed before the run stays so: the drift a skipped
    rebuild was for is the next plan's to propose again."""
    files = set(primaries)
    indexed = files | {t for m in after.memories if (t := m.extra.get("twin"))}
    moves: dict[str, list[tuple[int, str]]] = {}
    for i, op in enumerate(ops):
        if op.kind == "move" and op.dest:
            moves.setdefault(op.path, []).append((i, op.dest))

    def where(path: str, start: int) -> str:
        """Where the run's ops from `start` on leave the file at `path`."""
        at = start
        while True:
            later = next(((i, dest) for i, dest in moves.get(path, []) if i >= at), None)
            if later is None:
                return path
            at, path = later[0] + 1, later[1]

    keys = []
    for key in previous:
        now = where(key, 0)
        if now == key or now in indexed:
            keys.append(now)
    created = (where(op.path, i + 1) for i, op in enumerate(ops) if op.kind == "write" and op.expect == CREATED)
    keys += [key for key in created if key in files]
    return list(dict.fromkeys(keys))


def _say_what_is_not_reflected(run: Run, index: str, since: SincePlan, listed: set[str]) -> None:
    for key in since.added:
        if key not in listed:
            run.out.notes.append(f"{key} added since the plan: not in {index}; the next run indexes it")
    for key in since.removed:
        if key in listed:
            run.out.notes.append(f"{key} removed since the plan: its entry stays in {index}; the next run drops it")


def _reword_skip(run: Run, action: Action, why: str, index: str) -> None:
    """The skipped rebuild's reason, once the index is edited for the run's own changes: it is not
    "left as it is"."""
    edited = f"not rebuilt; {index} is edited for this run's own changes only (the next plan judges it again)"
    reason = why.removesuffix(LEFT_AS_IT_IS) + edited if why.endswith(LEFT_AS_IT_IS) else f"{why}; {edited}"
    run.out.skipped = [(a, reason if a is action else w) for a, w in run.out.skipped]
