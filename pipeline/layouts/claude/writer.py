"""Apply for claude memory folders (dream, seed 001, STEP 5-6), without ever deleting a file.

dream executes its decisions with `rm`; here a retired topic file moves into
`<memory-folder>/.archive/<run-id>/<file name>` (the reader skips `.archive`), so undo is a move
back and nothing is lost even after the journal is gone.

What each action does:

- `prune_stale`: the file is archived.
- `merge_duplicate`: the survivor stays, every other member is archived. When the survivor itself
  is archived by another action of the same run (a `prune_stale` of a fully stale survivor), the
  first member of the plan's `handover` still there survives in its place (the plan lists those the
  staleness pass keeps: not FULLY_STALE, a prune guard or the consult-gate holds for them); if none
  is, all are archived. The outcome is therefore the same whatever the order of the actions.
- `conflict`, only under a resolution (`select_actions` enforces it): `newer` archives the older
  side (front-matter date — modified/updated/last_updated/date, then created — else the file's
  mtime); undated or equally dated sides are left for the user. `keep-both` appends
  `> Note (memconsolidate, <--now>): conflicts with <other> — kept both.` to the end of each body
  (once: a side that already carries the note is not noted again; a memory kept inside MEMORY.md
  is never noted). A conflict neither side of which is noted is skipped with each side's reason. A
  side that another action of the run archives is not resolved: the conflict is skipped.
- `rebuild_index` / `trim_budget` on a MEMORY.md: the whole MEMORY.md rebuild (drift fixed: files
  not indexed, entries without a file, repeats, hooks trimmed to fit). Every other folder in which
  anything changed gets only the edits its applied actions need (archived files' lines removed, a
  consolidation's entry in its members' place, a new file's entry added). Both, and the cut of
  memories kept inside MEMORY.md, are in `index_rebuild.py`.

- `absolutize_dates`, `update_ref` (`edits.py`): replacements in the body and description, in place
  (one write per file, with any note of the run); never on a file the run archives.

Files the reader reported as unreadable (`parse_error`) and symlinks are never moved or edited, nor
a memory kept inside a MEMORY.md that is never edited; they stay listed in the index because they
are still files of the folder. Which those are, and which indexes are never edited (a `parse_error`,
a symlink, no regular file), is decided in `uneditable.py`, which the plan asks too: it proposes no
action of them.

Reports (dream's STEP 6): the whole run's to `.memconsolidate/reports/<run-id>.md`, each changed
folder's to `.archive/<run-id>/REPORT.md`; their text is built in `dream_report.py`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from ...kinds import ActionKind, FindingKind, StaleClass
from ...changes import ChangeSet
from ...config import Settings
from ...journal import ABSENT, Op, sha
from ...model import Action, Corpus, Finding, Memory
from ...printable import printable
from ...report import render_run_report
from ...rules.dangling_links import dangling_links
from ...storage.files import Unreadable
from ...text.lenient_frontmatter import split_frontmatter_lenient
from ...text.lines import append_paragraphs
from ...storage.since_plan import DiskReads, changed_since_plan
from .decisions import StaleInfo, decide
from .dream_report import FolderChange, dream_report
from .edits import apply_text_edits
from .index_rebuild import UP_TO_DATE, NotWritten, _cut_index_memories, _decode, _encode, _rebuild_index, not_following
from .paths import _in_folder, _name, archive_path, folder_of
from .reader import INDEX, topic_names
from .uneditable import memory_left

REPORT_NAME = "REPORT.md"
FULLY_STALE = StaleClass.FULLY_STALE


ALREADY_NOTED = "it already carries the note"


def note_line(now: dt.date, other: str) -> str:
    return f"> Note (memconsolidate, {now.isoformat()}): conflicts with {other} — kept both."


def _not_noted(sides: list[str], unnoted: dict[str, str]) -> str:
    """Why a keep-both conflict noted neither side: each side's own reason, told once when shared."""
    whys = [unnoted.get(s, "not noted") for s in sides]
    if all(w == ALREADY_NOTED for w in whys):
        return "both sides already carry the note"
    if len(set(whys)) == 1:
        return f"{'neither side' if len(sides) > 1 else 'not'} noted: {whys[0]}"
    return "neither side noted: " + "; ".join(f"{printable(_name(s))}: {w}" for s, w in zip(sides, whys))


def _text_to_note(m: Memory, disk: DiskReads) -> tuple[bytes, str, bool] | str:
    """The bytes of the file a keep-both note goes into, its text and whether it has a BOM, read
    again: the note is written only over what the plan read. Else, as a string, why it gets none."""
    if m.extra.get("in_index"):
        return "a memory kept inside MEMORY.md is not annotated"
    try:
        data = disk.bytes(m.key)
        if data is None:
            raise Unreadable("it is gone")
        text, bom = _decode(data)
    except (Unreadable, UnicodeDecodeError) as exc:
        return f"cannot read it again: {exc}"
    try:
        body = split_frontmatter_lenient(text)[0].body
    except Unreadable:
        return "it no longer parses"
    if body != m.body:
        return "it changed on disk since it was read"
    return data, text, bom


# ---------------------------------------------------------------------------------------------
# Text edits


def with_notes(text: str, lines: list[str]) -> str:
    """`text` with each note line appended to the end of the body, one paragraph each."""
    return append_paragraphs(text, lines)


# ---------------------------------------------------------------------------------------------
# The change set


def changes(
    corpus: Corpus,
    actions: list[Action],
    settings: Settings,
    run_id: str,
    resolve: str | None,
    findings: list[Finding] | None = None,
) -> ChangeSet:
    root = Path(corpus.root)
    out = ChangeSet()
    by_key = corpus.by_key()
    stale = StaleInfo(findings)
    unmovable = memory_left(corpus)  # of moves; what the plan asked too (`rules.without_what_apply_leaves`)

    # Judged on other content than what is there now: skipped, and the rest decided without them.
    disk = DiskReads(root, settings.max_file_bytes, lister=topic_names)  # a folder's listing: what a rebuild indexes
    changed = {id(a): why for a in actions if (why := changed_since_plan(a, disk.state))}
    live = [a for a in actions if id(a) not in changed]
    d = decide(corpus, live, resolve, unmovable, stale)
    folders: dict[str, FolderChange] = {}

    def folder(key: str) -> FolderChange:
        f = folder_of(key)
        return folders.setdefault(f, FolderChange(f))

    ops_moves: list[Op] = []
    ops_writes: list[Op] = []

    # notes first (a noted file is never also archived: conflicts skip archived sides)
    noted_any: set[str] = set()
    unnoted: dict[str, str] = {}  # key -> why no note was written to it, for its conflicts' outcome
    for key in sorted(d.notes):
        read = _text_to_note(by_key[key], disk)
        if isinstance(read, str):
            unnoted[key] = read
            out.notes.append(f"{key}: not noted, {read}")
            continue
        data, text, bom = read
        # printable(): a file name carrying a newline must not forge a line inside the memory.
        others = sorted({printable(o) for o in d.notes[key]})
        # A note from an earlier run (another date) counts: the same conflict is noted once.
        fresh = [o for o in others if f"conflicts with {o} — kept both." not in text]
        if not fresh:
            unnoted[key] = ALREADY_NOTED
            continue
        lines = [note_line(settings.now, o) for o in fresh]
        ops_writes.append(Op("write", key, data=_encode(with_notes(text, lines), bom), expect=sha(data)))
        folder(key).noted.append((key, fresh))
        noted_any.add(key)
    for i, a in enumerate(live):
        if a.kind == ActionKind.CONFLICT and resolve == "keep-both" and d.outcome.get(i) is None:
            sides = list(dict.fromkeys(a.targets))[:2]
            if any(s in noted_any for s in sides):
                d.resolved.append(folder_of(sides[0]))
            else:
                d.outcome[i] = _not_noted(sides, unnoted)

    # in-place text edits (absolutize_dates, update_ref): one write per file, on top of its notes
    d.outcome.update(apply_text_edits(live, memory_left(corpus, moving=False), d.retire, disk, ops_writes))

    for key in sorted(d.created):
        ops_writes.append(Op("write", key, data=d.created[key].data, expect=ABSENT))  # never over a file that appeared
        folder(key)

    # One move per file, whatever number of actions retired it. A destination that exists (only
    # possible with a reused run id) makes the journal refuse the whole run.
    in_index: dict[str, list[str]] = {}
    for key in sorted(d.retire):
        kept_in = by_key[key].extra.get("in_index") if key in by_key else None
        if kept_in:
            in_index.setdefault(kept_in, []).append(key)  # lines of MEMORY.md: cut in place below
            continue
        dest = archive_path(folder_of(key), run_id, _name(key))
        # The state it had when checked against the plan: the journal refuses if it changed since.
        ops_moves.append(Op("move", key, dest=dest, expect=disk.state(key) or ABSENT))
        folder(key).archived.append((key, dest, d.retire[key]))
    edited: dict[str, str] = {}  # MEMORY.md key -> why it is not rebuilt in this run
    for index_key, keys in sorted(in_index.items()):
        cut, why = _cut_index_memories(corpus, settings, run_id, index_key, keys, disk)
        if cut is None:
            out.notes.append(f"{index_key}: {why}")
            for i, a in enumerate(live):
                if d.outcome.get(i) is None and any(t in keys for t in a.targets):
                    d.outcome[i] = why
            continue
        ops_writes.extend(cut)
        dest = archive_path(folder_of(index_key), run_id, INDEX)
        for key in keys:
            folder(key).archived.append((key, dest, d.retire[key]))
        edited[index_key] = f"{len(keys)} memor{'y' if len(keys) == 1 else 'ies'} cut from it in place"
    archived_keys = {k for f in folders.values() for k, _, _ in f.archived}

    # every folder that changed, and every index the plan asked to rebuild
    for index_key in d.index_actions:
        folder(index_key)
    index_written: set[str] = set()
    for name in sorted(folders):
        fc = folders[name]
        index_key = _in_folder(name, INDEX)
        if index_key in edited:
            fc.index_note = NotWritten(edited[index_key])
            continue
        created = {k: c for k, c in d.created.items() if folder_of(k) == name}
        # Drift is fixed only by the rebuild it asks for: a selected consolidation, archive or merge
        # edits the index for its own files and leaves the rest of the owner's index as it is.
        asked = index_key in d.index_actions
        index_ops, summary, not_written = _rebuild_index(root, corpus, settings, run_id, index_key, archived_keys, out, created,
                                                         disk, fix_drift=asked, successors=d.successor)
        if not index_ops:
            fc.index_note = not_written
            if not_written is not None and not not_written.up_to_date and (fc.archived or created):
                # The run's files moved but its index could not follow: said where an apply's reader
                # looks (its notes, the run report), not only in the folder's REPORT.md.
                out.notes.append(not_following(index_key, not_written))
            continue
        ops_writes.extend(index_ops)
        fc.index, fc.index_whole = summary, asked
        index_written.add(index_key)
    for index_key, idxs in d.index_actions.items():
        for i in idxs:
            fc = folders[folder_of(index_key)]
            d.outcome[i] = None if index_key in index_written else (fc.index_note or UP_TO_DATE).reason

    outcome = {id(a): d.outcome.get(i, f"{a.kind} does not apply to claude memory folders") for i, a in enumerate(live)}
    for a in actions:
        why = changed.get(id(a), outcome.get(id(a)))
        if why is None:
            out.applied.append(a)
        else:
            out.skipped.append((a, why))

    # What the run leaves pointing at nothing, for its report: the plan said so, a nightly run has no reader.
    out.notes.extend(f.reason for f in dangling_links(corpus, out.applied))
    out.ops = ops_moves + ops_writes
    if out.ops:
        flagged = stale.by_key()
        for name in sorted(folders):
            fc = folders[name]
            if not (fc.archived or fc.noted or fc.index):
                continue
            report = dream_report(corpus, run_id, settings.now, [fc], flagged, archived_keys, d, scope=name)
            # every name this run puts in the folder's archive: its memories and its indexes' old copies
            shelf = archive_path(name, run_id, "")
            taken = {_name(k) for k, _, _ in fc.archived} | {op.path[len(shelf):] for op in ops_writes if op.path.startswith(shelf)}
            report_name = REPORT_NAME if REPORT_NAME not in taken else "REPORT.memconsolidate.md"
            n = 2
            while report_name in taken:  # an archived file may carry the fallback name too: never write over it
                report_name, n = f"REPORT.memconsolidate-{n}.md", n + 1
            # backslashreplace: a file name that is not UTF-8 must not stop the run at its report
            out.ops.append(Op("write", archive_path(name, run_id, report_name), data=report.encode("utf-8", "backslashreplace"), expect=ABSENT))
        whole = render_run_report("claude", run_id, settings.now, out) + "\n" + dream_report(
            corpus, run_id, settings.now, [folders[n] for n in sorted(folders)], flagged, archived_keys, d, scope=None
        )
        out.ops.append(Op("write", f".memconsolidate/reports/{run_id}.md", data=whole.encode("utf-8", "backslashreplace")))
    return out
