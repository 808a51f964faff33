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
  (once: a side that already carries the note is not noted again). A side that another action of
  the run archives is not resolved: the conflict is skipped.
- `rebuild_index` / `trim_budget` on a MEMORY.md, and every folder in which anything changed:
  the MEMORY.md is edited, not rewritten (`memory_md.rebuild`): headings, prose, order, sub-indexes
  and hooks stay; entry lines of files that are gone are removed (inline links to them struck out),
  a repeated entry line goes, and each file MEMORY.md no longer reaches gets an entry beside its
  siblings (else in one "Unindexed" section at the end). Within `index_budget_bytes` hooks are
  trimmed at word boundaries, never an entry dropped; over 200 lines the user is told. Titles and
  hooks of new entries come from the front matter (`name`, `description`), else the file stem and
  the body's first paragraph. The old MEMORY.md is copied to `.archive/<run-id>/MEMORY.md` first. A
  MEMORY.md the reader could not read is never rewritten, and an edited one is written only if the
  same grammar, reading it back, reaches every surviving file and no entry is left dangling.
- A memory kept inside MEMORY.md itself (`MEMORY.md#<section>/<n>`) that is archived, pruned or
  merged away is cut out of MEMORY.md in place, its lines checked against what was read; the old
  MEMORY.md is archived first, as above.

- `absolutize_dates`, `update_ref` (`edits.py`): replacements in the body and description, in place
  (one write per file, with any note of the run); never on a file the run archives.

Files the reader reported as unreadable (`parse_error`) and symlinks are never moved or edited; they
stay listed in the index because they are still files of the folder.

Reports (dream's STEP 6, with ARCHIVED where dream says DELETED): the whole run's report goes to
`.memconsolidate/reports/<run-id>.md` (the generic applied/skipped/notes account, then the dream
report), and each folder that changed gets its own dream report in `.archive/<run-id>/REPORT.md`,
next to what was archived, so a user browsing the folder sees why. "Flagged for Review" lists the
plan's PARTIALLY_STALE findings, which apply passes in (the writer never re-runs the staleness pass:
what it reports is what the plan showed; a caller without a plan gets no such list).
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import quote

import yaml

from ...kinds import ActionKind, FindingKind, StaleClass
from ...changes import ChangeSet
from ...config import Settings
from ...journal import ABSENT, Op, sha
from ...actions import MergeDuplicateAction, StaleFinding, outputs_of
from ...model import Action, Corpus, Finding, Memory
from ...printable import printable
from ...report import render_run_report
from ...rules.refs import KNOWN_EXTENSIONS
from ...storage.files import Unreadable, decode_text, read_text
from ...text.lenient_frontmatter import split_frontmatter_lenient
from ...text.lines import append_paragraphs, decode_utf8, encode_utf8, newline_of, split_bom, with_old_line_endings
from ...text.truncate import HOOK_STRIP
from ...text.truncate import shorten as shorten_text
from . import memory_md
from .memory_md import IndexItem, rebuild
from .reader import INDEX
from ...storage.since_plan import DiskReads, changed_since_plan
from .edits import apply_text_edits

ARCHIVE_DIR = ".archive"
REPORT_NAME = "REPORT.md"
FULLY_STALE = StaleClass.FULLY_STALE
PARTIALLY_STALE = StaleClass.PARTIALLY_STALE
EVERGREEN = StaleClass.EVERGREEN
INDEX_KINDS = ("rebuild_index", "trim_budget")
# Characters that would break a `[title](target)` link or that the reader would unquote.
_NEEDS_QUOTING = re.compile(r"[\s()\[\]<>%\\]")


def note_line(now: dt.date, other: str) -> str:
    return f"> Note (memconsolidate, {now.isoformat()}): conflicts with {other} — kept both."


def folder_of(key: str) -> str:
    # A memory kept inside MEMORY.md is keyed `<folder>/MEMORY.md#<section>/<n>`.
    return posixpath.dirname(key.partition("#")[0]) or "."


def _in_folder(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def archive_path(folder: str, run_id: str, name: str) -> str:
    return _in_folder(folder, f"{ARCHIVE_DIR}/{run_id}/{name}")


def _name(key: str) -> str:
    path, mark, anchor = key.partition("#")
    return path.rsplit("/", 1)[-1] + mark + anchor


# ---------------------------------------------------------------------------------------------
# What the plan's staleness pass said about each memory


class StaleInfo:
    """The plan's `stale` findings by memory key (the writer never re-runs the staleness pass: it
    reads repositories, and what apply does must be what the plan showed). None, from a caller
    without a plan, means nothing is known to be stale."""

    def __init__(self, findings: list[Finding] | None) -> None:
        self._by_key = {f.targets[0]: f for f in findings or [] if f.kind == FindingKind.STALE and f.targets}

    def by_key(self) -> dict[str, Finding]:
        return self._by_key

    def cls(self, key: str) -> str | None:
        f = self.by_key().get(key)
        return f.class_ if f else None


# ---------------------------------------------------------------------------------------------
# The decisions, before any file operation


@dataclass
class Decisions:
    retire: dict[str, str] = field(default_factory=dict)  # memory key -> why it is archived
    notes: dict[str, list[str]] = field(default_factory=dict)  # key -> other sides to note
    outcome: dict[int, str | None] = field(default_factory=dict)  # action index -> None (applied) or why skipped
    index_actions: dict[str, list[int]] = field(default_factory=dict)  # MEMORY.md key -> action indexes
    resolved: list[str] = field(default_factory=list)  # folder of each conflict resolved
    created: dict[str, tuple[bytes, str, str]] = field(default_factory=dict)  # new file -> (bytes, title, hook)


def _effective_date(m: Memory) -> tuple[dt.date | None, float | None]:
    if m.modified is not None:
        return m.modified, None
    if m.created is not None:
        return m.created, None
    if m.mtime is not None:
        return dt.datetime.fromtimestamp(m.mtime, tz=dt.timezone.utc).date(), m.mtime
    return None, None


def _older_of(a: Memory, b: Memory) -> tuple[Memory, Memory] | str:
    """(older, newer), or why that cannot be told."""
    (da, ta), (db, tb) = _effective_date(a), _effective_date(b)
    if da is None or db is None:
        undated = a.key if da is None else b.key
        return f"cannot tell which is newer: {_name(undated)} has no date"
    if da != db:
        return (a, b) if da < db else (b, a)
    if ta is not None and tb is not None and ta != tb:
        # Neither has a front-matter date: the file times decide.
        return (a, b) if ta < tb else (b, a)
    return f"cannot tell which is newer: both dated {da.isoformat()}"


def decide(
    corpus: Corpus, actions: list[Action], resolve: str | None, unmovable: Callable[[str], str | None], stale: StaleInfo
) -> Decisions:
    by_key = corpus.by_key()
    d = Decisions()

    def ref(key: str, near: str) -> str:
        return _name(key) if folder_of(key) == folder_of(near) else key

    # 1. prunes
    for i, a in enumerate(actions):
        if a.kind != ActionKind.PRUNE_STALE:
            continue
        moved = []
        problems = []
        for t in dict.fromkeys(a.targets):
            why = unmovable(t)
            if why:
                problems.append(f"{t}: {why}")
            elif t not in d.retire:
                d.retire[t] = a.reason
                moved.append(t)
        d.outcome[i] = None if moved else ("; ".join(problems) or "already archived by another action of this run")

    # 2. merges, against the prunes: a survivor that is pruned hands over to a member that would be kept
    for i, a in enumerate(actions):
        if a.kind != ActionKind.MERGE_DUPLICATE:
            continue
        if not a.survivor or a.survivor not in a.targets:
            d.outcome[i] = "no survivor named among the targets"
            continue
        why = unmovable(a.survivor) if a.survivor not in by_key else None
        if why:
            d.outcome[i] = f"survivor {a.survivor}: {why}"
            continue
        members = [t for t in dict.fromkeys(a.targets) if t != a.survivor]
        survivor: str | None = a.survivor
        handover = ""
        if survivor in d.retire:
            # The plan named who may take over (layouts/claude/rules.hand_overs): the first still here.
            planned = (a.handover if isinstance(a, MergeDuplicateAction) else None) or []
            keepable = [t for t in planned if t in members and t not in d.retire and not unmovable(t)]
            survivor = keepable[0] if keepable else None
            handover = (
                f" (survives in place of {ref(a.survivor, survivor)}, archived in this run)" if survivor else ""
            )
        retired = []
        problems = []
        for t in members:
            if t == survivor or t in d.retire:
                continue
            why = unmovable(t)
            if why:
                problems.append(f"{t}: {why}")
                continue
            if survivor:
                d.retire[t] = f"duplicate of {ref(survivor, t)}{handover}"
            else:
                d.retire[t] = f"duplicate of {ref(a.survivor, t)}, itself archived as fully stale"
            retired.append(t)
        d.outcome[i] = None if retired else ("; ".join(problems) or "nothing left to retire")

    # 2b. consolidations: the new file is written, the members are archived
    for i, a in enumerate(actions):
        if a.kind == ActionKind.CONSOLIDATE:
            d.outcome[i] = _consolidate(corpus, a, unmovable, d)

    # 3. conflicts, against prunes and merges; their own archivals join afterwards, so the order of
    # conflicts among themselves does not matter either.
    conflict_retire: dict[str, str] = {}
    for i, a in enumerate(actions):
        if a.kind != ActionKind.CONFLICT:
            continue
        if resolve not in ("newer", "keep-both"):
            d.outcome[i] = "conflicts are applied only with --resolve newer|keep-both"
            continue
        sides = list(dict.fromkeys(a.targets))[:2]
        if len(sides) < 2:
            d.outcome[i] = "a conflict needs two memories"
            continue
        problems = [f"{t}: {why}" for t in sides if (why := unmovable(t))]
        if problems:
            d.outcome[i] = "; ".join(problems)
            continue
        gone = [t for t in sides if t in d.retire]
        if gone:
            d.outcome[i] = f"{gone[0]} is archived by another action of this run"
            continue
        ma, mb = by_key[sides[0]], by_key[sides[1]]
        if resolve == "newer":
            order = _older_of(ma, mb)
            if isinstance(order, str):
                d.outcome[i] = order
                continue
            older, newer = order
            when = _effective_date(newer)[0]
            conflict_retire.setdefault(
                older.key, f"contradicted by newer {ref(newer.key, older.key)} ({when}): {a.reason}"
            )
            d.resolved.append(folder_of(older.key))
            d.outcome[i] = None
        else:
            d.notes.setdefault(ma.key, []).append(ref(mb.key, ma.key))
            d.notes.setdefault(mb.key, []).append(ref(ma.key, mb.key))
            d.outcome[i] = None  # may still turn into "already noted" when the text is built
    for key, entry in conflict_retire.items():
        d.retire.setdefault(key, entry)

    # 4. index rebuilds asked for by the plan
    for i, a in enumerate(actions):
        if a.kind in INDEX_KINDS and a.targets and all(_name(t) == INDEX for t in a.targets):
            for t in a.targets:
                d.index_actions.setdefault(t, []).append(i)
        elif i not in d.outcome:
            d.outcome[i] = f"{a.kind} does not apply to claude memory folders"
    return d


def _consolidate(corpus: Corpus, a: Action, unmovable: Callable[[str], str | None], d: Decisions) -> str | None:
    """Record one consolidation in `d`; None when it applies, else why it is skipped."""
    outputs = outputs_of(a)
    if len(outputs) != 1:
        return "a claude consolidation writes exactly one file"
    out = outputs[0]
    path, meta, body = out.get("path"), out.get("frontmatter"), out.get("body")
    if not isinstance(path, str) or not isinstance(meta, dict) or not isinstance(body, str) or not path.endswith(".md"):
        return "the consolidated file has no path, front matter or body"
    members = list(dict.fromkeys(a.targets))
    if any("#" in t for t in members):
        return "memories kept inside MEMORY.md are merged there, not consolidated into a new file"
    if len(members) < 2 or any(folder_of(t) != folder_of(path) for t in members):
        return "members and the consolidated file must share one memory folder"
    if _name(path) == INDEX or path in corpus.by_key() or path in d.created or (Path(corpus.root) / path).exists():
        return f"{path} exists: never overwritten"
    problems = [f"{t}: {why}" for t in members if (why := unmovable(t))]
    taken = [t for t in members if t in d.retire]
    if problems or taken:
        return "; ".join(problems) or f"{taken[0]} is archived by another action of this run"
    front = yaml.safe_dump({k: v for k, v in meta.items()}, sort_keys=False, allow_unicode=True, width=10**9)
    data = f"---\n{front}---\n\n{body.rstrip()}\n".encode()
    title = str(meta.get("name") or meta.get("title") or _name(path)[:-3])
    d.created[path] = (data, title, str(meta.get("description") or ""))
    for t in members:
        d.retire[t] = f"consolidated into {_name(path)}"
    return None


# ---------------------------------------------------------------------------------------------
# Text edits


def _decode(data: bytes) -> tuple[str, bool]:
    return decode_utf8(data)


def _encode(text: str, bom: bool) -> bytes:
    # backslashreplace: a note naming a file whose name is not UTF-8 must not crash the run
    return encode_utf8(text, bom, "backslashreplace")


def with_notes(text: str, lines: list[str]) -> str:
    """`text` with each note line appended to the end of the body, one paragraph each."""
    return append_paragraphs(text, lines)


_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
HOOK_CHARS = 150  # a derived hook is a pointer, not a summary


def _structural(line: str) -> bool:
    return line.startswith(("#", "```", "~~~", "<!--", "|")) or set(line) <= set("-=*_ ")


def shorten(text: str, limit: int = HOOK_CHARS) -> str:
    return shorten_text(text, limit, strip=HOOK_STRIP)


def first_prose(body: str) -> str:
    """The body's first paragraph (or list item) of prose, as one line.

    When a table or code block comes first, the opening heading describes the file better than a
    cell or a line of code would; with no heading either, prose further down is used.
    """
    para: list[str] = []
    heading = ""
    for line in body.splitlines():
        s = line.strip()
        if para and (not s or _structural(s)):
            break
        if not s:
            continue
        if s.startswith("#"):
            heading = heading or s.lstrip("#").strip()
            continue
        if _structural(s):
            if heading:
                break
            continue
        item = _LIST_MARKER.match(s)
        if item and para:
            break
        para.append(s[item.end() :] if item else s)
        if item:
            break
    return shorten(" ".join(" ".join(para).split()) or heading)


def raw_scalar(raw_frontmatter: str, key: str, parsed: str) -> str:
    """The whole written value of a plain top-level `key:` line when YAML cut it short.

    Real memory files write `description: review of #2041 ...` unquoted; YAML reads ` #2041 ...` as
    a comment and keeps "review of". Claude Code shows the whole line, so the index hook does too.
    """
    m = re.search(rf"^{re.escape(key)}:[ \t]*(.*?)[ \t]*$", raw_frontmatter, re.MULTILINE)
    if not m:
        return parsed
    written = m.group(1)
    if not written or written[0] in "'\"[{|>&*!" or not written.startswith(parsed) or " #" not in written:
        return parsed
    return written


def _title(text: str) -> str:
    # Square brackets would end the link text early.
    return " ".join(text.replace("[", "(").replace("]", ")").split())


def _link_target(name: str) -> str:
    # A name that is not UTF-8 (os keeps its bytes as surrogates) is percent-encoded byte for byte;
    # the reader cannot map it back, so the 1:1 check leaves that index alone instead of crashing.
    if _NEEDS_QUOTING.search(name) or any("\udc80" <= ch <= "\udcff" for ch in name):
        return quote(name, errors="surrogateescape")
    return name


def index_heading(folder: str) -> str:
    parts = [p for p in folder.split("/") if p not in ("", ".")]
    if not parts:
        return "Memory"
    name = parts[-1]
    if name == "memory" and len(parts) > 1:
        name = parts[-2]
    return f"{name} Memory"


# ---------------------------------------------------------------------------------------------
# The change set


@dataclass
class FolderChange:
    folder: str
    archived: list[tuple[str, str, str]] = field(default_factory=list)  # (key, dest, reason)
    noted: list[tuple[str, list[str]]] = field(default_factory=list)  # (key, other sides)
    index: str | None = None  # "rebuilt" summary, when MEMORY.md was rewritten
    index_note: str | None = None  # why it was not rewritten


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
    unreadable = {t for f in corpus.findings if f.kind == FindingKind.PARSE_ERROR for t in f.targets}
    stale = StaleInfo(findings)

    def unmovable(key: str) -> str | None:
        if key in unreadable:
            return "unreadable file: left untouched"
        m = by_key.get(key)
        if m is None:
            return "not a memory file of this store"
        if (root / key).is_symlink():
            return "a symlink: left untouched"
        if m.pinned:
            return "pinned"
        return None

    # Judged on other content than what is there now: skipped, and the rest decided without them.
    disk = DiskReads(root, settings.max_file_bytes)
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
    for key in sorted(d.notes):
        if by_key[key].extra.get("in_index"):
            out.notes.append(f"{key}: not noted, a memory kept inside MEMORY.md is not annotated")
            continue
        try:
            data = disk.bytes(key)
            if data is None:
                raise Unreadable("it is gone")
            text, bom = _decode(data)
        except (Unreadable, UnicodeDecodeError) as exc:
            out.notes.append(f"{key}: not noted, cannot read it again: {exc}")
            continue
        m = by_key[key]
        try:
            if split_frontmatter_lenient(text)[0].body != m.body:
                out.notes.append(f"{key}: not noted, it changed on disk since it was read")
                continue
        except Unreadable:
            out.notes.append(f"{key}: not noted, it no longer parses")
            continue
        # printable(): a file name carrying a newline must not forge a line inside the memory.
        others = sorted({printable(o) for o in d.notes[key]})
        # A note from an earlier run (another date) counts: the same conflict is noted once.
        fresh = [o for o in others if f"conflicts with {o} — kept both." not in text]
        if not fresh:
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
                d.outcome[i] = "both sides already carry the note"

    # in-place text edits (absolutize_dates, update_ref): one write per file, on top of its notes
    d.outcome.update(apply_text_edits(live, by_key, unreadable, d.retire, root, disk, ops_writes))

    for key in sorted(d.created):
        ops_writes.append(Op("write", key, data=d.created[key][0], expect=ABSENT))  # never over a file that appeared
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
            fc.index_note = edited[index_key]
            continue
        created = {k: (title, hook) for k, (_, title, hook) in d.created.items() if folder_of(k) == name}
        op, archived_copy, summary, why = _rebuild_index(root, corpus, settings, run_id, index_key, archived_keys, out, created, disk)
        if op is None:
            fc.index_note = why
            continue
        if archived_copy is not None:
            ops_writes.append(archived_copy)
        ops_writes.append(op)
        fc.index = summary
        index_written.add(index_key)
    for index_key, idxs in d.index_actions.items():
        for i in idxs:
            fc = folders[folder_of(index_key)]
            d.outcome[i] = None if index_key in index_written else (fc.index_note or "index already up to date")

    outcome = {id(a): d.outcome.get(i, f"{a.kind} does not apply to claude memory folders") for i, a in enumerate(live)}
    for a in actions:
        why = changed.get(id(a), outcome.get(id(a)))
        if why is None:
            out.applied.append(a)
        else:
            out.skipped.append((a, why))

    out.ops = ops_moves + ops_writes
    if out.ops:
        flagged = stale.by_key()
        for name in sorted(folders):
            fc = folders[name]
            if not (fc.archived or fc.noted or fc.index):
                continue
            report = dream_report(corpus, run_id, settings.now, [fc], flagged, archived_keys, d, scope=name)
            taken = {_name(k) for k, _, _ in fc.archived}
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


def _description(root: Path, key: str, m: Memory, settings: Settings) -> str:
    if not m.description or not m.has_frontmatter:
        return m.description
    try:
        raw = split_frontmatter_lenient(read_text(root, root / key, settings.max_file_bytes))[0].raw
    except Unreadable:
        return m.description
    return raw_scalar(raw, "description", m.description)


def _rebuild_index(
    root: Path, corpus: Corpus, settings: Settings, run_id: str, index_key: str, archived: set[str], out: ChangeSet,
    created: dict[str, tuple[str, str]] | None = None,
    disk: DiskReads | None = None,
) -> tuple[Op | None, Op | None, str, str]:
    """(write of the new MEMORY.md, write of its archived copy, summary, why not) for one folder."""
    if index_key not in corpus.indexes:
        return None, None, "", "MEMORY.md could not be read: left untouched, not rebuilt"
    path = root / index_key
    if path.is_symlink():
        return None, None, "", "MEMORY.md is a symlink: left untouched"
    old: bytes | None = None
    existing: str | None = None
    bom = False
    if path.exists():
        try:
            # One read: the text rebuilt from and the bytes the write expects are the same bytes.
            old = (disk or DiskReads(root, settings.max_file_bytes)).bytes(index_key)
            if old is None:
                raise Unreadable("it is gone")
            existing = decode_text(old)
        except Unreadable as exc:
            return None, None, "", f"MEMORY.md could not be read again ({exc}): not rebuilt"
        bom = split_bom(old)[0]
    by_key = corpus.by_key()
    folder = folder_of(index_key)
    surviving = [k for k in corpus.indexes[index_key] if k not in archived] + sorted(created or {})
    names = {_name(k) for k in surviving}
    read = _sibling_reader(root, folder, settings, disk)
    before = memory_md.reach(existing or "", names, read)
    linked_names = set(before.entries) | set(before.inline)
    gone = sorted(n for n in linked_names if n not in names)
    items = []
    made = created or {}
    for key in surviving:
        if _name(key) in before.reached:
            continue
        m = by_key.get(key)
        if key in made:
            title, hook = made[key]
            items.append(IndexItem(filename=_link_target(_name(key)), title=_title(title) or _name(key)[:-3], hook=hook))
            continue
        stem = _name(key)[: -len(".md")] if key.endswith(".md") else _name(key)
        title = (_title(m.title) if m else "") or stem
        hook = (_description(root, key, m, settings) if m else "") or (first_prose(m.body) if m else "")
        items.append(IndexItem(filename=_link_target(_name(key)), title=title, hook=hook))
    rebuilt = rebuild(
        None if existing is None else existing.replace("\r\n", "\n"),
        index_heading(folder),
        items,
        gone,
        settings.claude.index_budget_bytes,
        settings.claude.index_min_hook_chars,
    )
    text = rebuilt.text
    # The reader decides what the next plan sees: every surviving file reached, no entry left dangling.
    after = memory_md.reach(text, names, read)
    if set(after.reached) != names or after.dangling(names) or len(after.entries) != len(set(after.entries)):
        return None, None, "", "the rebuilt index would not reach every file exactly once: left untouched"
    out.notes.extend(f"{index_key}: {w}" for w in rebuilt.warnings)
    text = text if existing is None else with_old_line_endings(text, existing)
    data = _encode(text, bom)
    if old is not None and data == old:
        return None, None, "", "index already up to date"
    removed = len(rebuilt.removed)
    summary = f"{removed} entr{'y' if removed == 1 else 'ies'} removed, {len(rebuilt.added)} added, {len(after.reached)} reached"
    if old is None:
        summary = f"created with {len(items)} entries"
    copy = Op("write", archive_path(folder, run_id, INDEX), data=old, expect=ABSENT) if old is not None else None
    # built on `old`: a MEMORY.md edited since this read is not replaced
    return Op("write", index_key, data=data, expect=ABSENT if old is None else sha(old)), copy, summary, ""


def _cut_index_memories(
    corpus: Corpus, settings: Settings, run_id: str, index_key: str, keys: list[str], disk: DiskReads
) -> tuple[list[Op] | None, str]:
    """The ops that cut memories kept inside MEMORY.md out of it (its old copy archived first), or
    None and why not. Each memory's lines must still hold what the reader read from them."""
    if (Path(corpus.root) / index_key).is_symlink():
        return None, "not edited, MEMORY.md is a symlink: left untouched"
    try:
        old = disk.bytes(index_key)
    except Unreadable as exc:
        return None, f"not edited, cannot read it again: {exc}"
    if old is None:
        return None, "not edited, it is gone"
    text, bom = _decode(old)
    lines = text.replace("\r\n", "\n").split("\n")
    by_key = corpus.by_key()
    drop: set[int] = set()
    for key in keys:
        start, end = by_key[key].extra["lines"]
        if "\n".join(lines[start:end]).strip("\n") != by_key[key].body:
            return None, f"not edited, {_name(key)} no longer holds what was read"
        drop.update(range(start, end))
        # A paragraph between two blank lines leaves one of them, not both.
        if start > 0 and end < len(lines) and not lines[start - 1].strip() and not lines[end].strip():
            drop.add(end)
    # Each kept line keeps its own ending (a file with mixed endings keeps every one of them).
    eols = ["\r\n" if piece.endswith("\r") else "\n" for piece in text.split("\n")]
    kept = [n for n in range(len(lines)) if n not in drop]
    new = "".join(lines[n] + eols[n] for n in kept[:-1]) + (lines[kept[-1]] if kept else "")
    folder = folder_of(index_key)
    copy = Op("write", archive_path(folder, run_id, INDEX), data=old, expect=ABSENT)
    return [copy, Op("write", index_key, data=_encode(new, bom), expect=sha(old))], ""


def _sibling_reader(root: Path, folder: str, settings: Settings, disk: DiskReads | None) -> Callable[[str], str | None]:
    """How the rebuild looks inside a sibling for further links (sub-indexes), as the reader does."""
    reads = disk or DiskReads(root, settings.max_file_bytes)

    def read(name: str) -> str | None:
        try:
            data = reads.bytes(_in_folder(folder, name))
            return None if data is None else decode_text(data)
        except Unreadable:
            return None

    return read


# ---------------------------------------------------------------------------------------------
# dream's report (STEP 6)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _missing_refs(f: Finding) -> str:
    missing = (f.missing if isinstance(f, StaleFinding) else None) or []
    if not missing:
        return _cell(f.reason)
    shown = []
    for ref in missing:
        is_file = "/" in ref or ref.rsplit(".", 1)[-1] in KNOWN_EXTENSIONS
        shown.append(f"`{ref}` no longer exists" if is_file else f"symbol `{ref}` not found")
    return _cell("; ".join(shown))


def dream_report(
    corpus: Corpus,
    run_id: str,
    now: dt.date,
    changed: list[FolderChange],
    stale: dict[str, Finding],
    archived: set[str],
    d: Decisions,
    scope: str | None,
) -> str:
    """dream's consolidation report for the whole run (`scope` None) or for one memory folder."""

    def mine(key: str) -> bool:
        return scope is None or folder_of(key) == scope

    def shown(key: str) -> str:
        # Inside a folder's own report, paths are relative to that folder.
        if scope is None or scope == ".":
            return key
        return key[len(scope) + 1 :] if key.startswith(scope + "/") else key

    memories = [m for m in corpus.memories if mine(m.key)]
    unreadable = sorted({t for f in corpus.findings if f.kind == FindingKind.PARSE_ERROR for t in f.targets if mine(t)})
    classes = Counter(stale[m.key].class_ for m in memories if m.key in stale)
    reasons: Counter[str] = Counter()
    for fc in changed:
        for key, _, _ in fc.archived:
            reasons[_kind_of(d.retire[key])] += 1
    folders = [f for f in corpus.extra.get("memory_folders", [])]
    n_folders = 1 if scope is not None else len(folders)
    title = "## Dream Consolidation Report" + (f" — {scope}" if scope is not None else "")
    lines = [
        title,
        "",
        f"memconsolidate run {run_id}, {now.isoformat()}. Nothing was deleted: archived files are in "
        f"`{ARCHIVE_DIR}/{run_id}/` beside their MEMORY.md.",
        "",
        "| Metric | Count |",
        "|--------|-------|",
        f"| Memory directories scanned | {n_folders} |",
        f"| Total memory files scanned | {len(memories) + len(unreadable)} |",
        f"| Unreadable files (left untouched) | {len(unreadable)} |",
        f"| Stale entries pruned (archived) | {reasons['stale']} |",
        f"| Duplicates merged (archived) | {reasons['duplicate']} |",
        f"| Contradictions resolved | {sum(1 for f in d.resolved if mine(_in_folder(f, INDEX)))} |",
        f"| Partially stale (kept, flagged) | {classes[PARTIALLY_STALE]} |",
        f"| Evergreen (no external refs) | {classes[EVERGREEN]} |",
        f"| Surviving memories | {len([m for m in memories if m.key not in archived])} |",
        f"| MEMORY.md indexes rebuilt | {sum(1 for fc in changed if fc.index)} |",
        "",
        "### Changes Made",
        "",
        "| File | Action | Reason |",
        "|------|--------|--------|",
    ]
    rows = []
    for fc in changed:
        for key, dest, reason in fc.archived:
            rows.append((key, f"| `{shown(key)}` | ARCHIVED to `{shown(dest)}` | {_cell(reason)} |"))
        for key, others in fc.noted:
            rows.append((key, f"| `{shown(key)}` | NOTED | {_cell('conflicts with ' + ', '.join(others) + ' — kept both')} |"))
        index_key = _in_folder(fc.folder, INDEX)
        if fc.index:
            rows.append((index_key, f"| `{shown(index_key)}` | REBUILT | {_cell(fc.index)}; old copy in `{shown(archive_path(fc.folder, run_id, INDEX))}` |"))
        elif fc.index_note and fc.index_note != "index already up to date":
            rows.append((index_key, f"| `{shown(index_key)}` | NOT REBUILT | {_cell(fc.index_note)} |"))
    lines.extend(row for _, row in sorted(rows))
    if not rows:
        lines.append("| — | — | nothing changed |")
    flagged = sorted(
        (k, f) for k, f in stale.items() if mine(k) and k not in archived and f.class_ == PARTIALLY_STALE
    )
    lines += ["", "### Flagged for Review (PARTIALLY_STALE)", ""]
    if flagged:
        lines += ["| File | Missing References | Kept because |", "|------|-------------------|--------------|"]
        for key, f in flagged:
            kept = (f.kept_reason if isinstance(f, StaleFinding) else None) or "some references still resolve"
            lines.append(f"| `{shown(key)}` | {_missing_refs(f)} | {_cell(kept)} |")
    else:
        lines.append("None.")
    if unreadable:
        lines += ["", "### Unreadable (left untouched)", ""]
        reasons_by = {t: f.reason for f in corpus.findings if f.kind == FindingKind.PARSE_ERROR for t in f.targets}
        lines += [f"- `{shown(k)}`: {_cell(reasons_by[k])}" for k in unreadable]
    return "\n".join(printable(line) for line in lines) + "\n"


def _kind_of(reason: str) -> str:
    if reason.startswith("duplicate of"):
        return "duplicate"
    if reason.startswith("contradicted by"):
        return "conflict"
    return "stale"
