"""Apply for zylos stores (zylos-memory): nothing is deleted, retired content moves into `archive/`.

What each action does:

- `archive` (an entry): the entry's block — its `### Title` line through the line before the next
  heading of level 1-3 — leaves its reference file and is appended to `archive/reference-<stem>.md`
  (created with a heading if new), followed by `- **Archived:** <--now> (<why>)`. Entries of
  importance 1-2 are never archived, whatever the plan says.
- `merge_duplicate`: the survivor stays as it is; every other entry is archived as above with the
  reason "duplicate; merged into <survivor>". Importance 1-2 entries are never retired by a merge,
  and the plan decides how (rules/duplicates.py): when the text rules' survivor is not importance
  1-2 but a duplicate is, the roles are swapped (the first importance 1-2 member survives; the
  action's `survivor_instead_of` names the one it replaced). The entries say the same thing and the
  retired one stays readable in archive/, so keeping the important copy loses nothing, whereas
  skipping would leave the duplicate to be proposed again on every run. Further importance 1-2
  members are the action's `kept`, with a note. A merge that would retire an importance 1-2 entry
  the plan did not keep (one made by hand) is skipped.
- `conflict` (only with a resolution): `newer` archives the older entry (Updated, else its Date /
  Started / Date observed), `keep-both` adds `- **Note:** conflicts with "<other>" (kept both,
  <--now>)` to both entries. Undated or equally dated sides, or an older side of importance 1-2,
  are skipped for the user to resolve.
- `archive_session`: a move of `sessions/<date>.md` to `archive/sessions/<date>.md`.
- `rotate_session`: a move of `sessions/current.md` to the action's `rotate_to` and a fresh
  `sessions/current.md` headed `# Session Log: <--now>`. A log older than the session archive age
  (30 days) goes straight to `archive/sessions/`, where the next plan would send it anyway. The
  agent appends to the log all day: when the log is the bytes the plan read followed by whole lines,
  the rotation still applies and those lines move with it, as rotate-session.js renames the whole
  file (a log entry carries only its `HH:MM`; its date is its file's header), said in the log's
  bullet and the run's notes. Any other change since the plan skips it.
- `absolutize_dates`, `update_ref` (`edits.py`): replacements in an entry's statement line or a
  tier file, in place; never in the live `sessions/current.md`.
- `trim_budget` needs judgement (what is still current) and is skipped until a stage supplies text.

Every reference file is rewritten at most once, from its text as read, with all of its removals and
insertions applied by line span; every other byte (line endings, a BOM, a missing final newline)
stays. A file whose bytes on disk are no longer what the reader parsed is left alone and its
actions skipped, rather than edited by guesswork; unreadable files are never touched. Nothing is
ever overwritten: a move whose destination exists is skipped.

The consolidation is logged, as the seed asks, in `sessions/current.md` (the fresh one after a
rotation) as `## HH:MM - Memory consolidation` with one bullet per applied or skipped action. HH:MM
comes from the `clock` argument; by default it is the wall clock in UTC (the store does not record
its time zone: identity.md points to `.env` for it), or `MEMCONSOLIDATE_CLOCK` (an ISO date-time)
when set, which lets tests that run the command line pin it. The generic run report goes to
`.memconsolidate/reports/<run-id>.md`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...kinds import ActionKind
from ...changes import ChangeSet
from ...config import Settings
from ...errors import ConfigError
from ...journal import ABSENT, Op, state
from ...actions import MergeDuplicateAction, RotateSessionAction
from ...model import Action, Corpus, Memory
from ...printable import printable
from ...report import render_run_report
from .rules.freshness import OBSOLETE_STATUSES, REVIEW_BANDS, age_days, band, immune
from ...storage.files import Unreadable
from ...storage.since_plan import DiskReads, changed_since_plan
from ...text.counts import plural
from ...text.lines import decode_utf8, encode_utf8, ends_with_blank_line, line_count, split_eol, split_lines
from ...text.lines import newline_of as eol_of
from .entries import Entry, field_line, parse_reference, session_header
from .reader import ARCHIVE_DIR, CURRENT_SESSION
from ...storage.text_edits import TEXT_EDIT_KINDS, Fields
from .edits import text_edit, tier_writes

Clock = Callable[[], dt.datetime]
CLOCK_ENV = "MEMCONSOLIDATE_CLOCK"
LOG_TITLE = "Memory consolidation"
# A dated session log; the name part is what it keeps in archive/sessions/.
SESSION_NAME = re.compile(r"^sessions/((\d{4}-\d{2}-\d{2})(?:-\d+)?\.md)$")


def default_clock() -> dt.datetime:
    pinned = os.environ.get(CLOCK_ENV)
    if pinned:
        try:
            return dt.datetime.fromisoformat(pinned)
        except ValueError:
            raise ConfigError(f"{CLOCK_ENV} must be an ISO date-time like 2026-11-29T09:30, not {pinned!r}") from None
    return dt.datetime.now(dt.timezone.utc)


# --------------------------------------------------------------------------------------------
# Text by lines, every byte kept


def decode(data: bytes) -> tuple[bool, str] | None:
    """(had a BOM, text) of UTF-8 bytes, or None when they are not UTF-8."""
    try:
        text, bom = decode_utf8(data)
        return bom, text
    except UnicodeDecodeError:
        return None


@dataclass
class RefFile:
    """A reference file as read, and the edits this run makes to it."""

    key: str
    bom: bool
    text: str
    lines: list[str]  # with their endings
    entries: dict[int, Entry]  # by the line of their heading
    boundaries: list[int]
    retire: dict[int, str] = field(default_factory=dict)  # heading line -> its `Archived` line
    notes: dict[int, list[str]] = field(default_factory=dict)  # heading line -> lines to add
    edited: bool = False  # `lines` carry in-place replacements (edits.py)

    def original(self) -> bytes:
        """The bytes this was read from (what the file must still hold when the run writes it)."""
        return encode_utf8(self.text, self.bom)

    @classmethod
    def parse(cls, key: str, bom: bool, text: str) -> RefFile:
        lines = split_lines(text, keepends=True)
        parsed = parse_reference(text)  # the reader's grammar: its blocks are the ones cut here
        return cls(
            key=key,
            bom=bom,
            text=text,
            lines=lines,
            entries={e.line_start: e for e in parsed.entries},
            boundaries=parsed.boundaries,
        )

    @property
    def eol(self) -> str:
        return eol_of(self.text)

    @property
    def changed(self) -> bool:
        return bool(self.retire or self.notes or self.edited)

    def block_end(self, start: int) -> int:
        """Last line of the block that starts at `start`, trailing blank lines included."""
        later = [b for b in self.boundaries if b > start]
        return later[0] - 1 if later else len(self.lines)

    def render(self) -> bytes:
        removed: set[int] = set()
        for start in self.retire:
            removed.update(range(start, self.block_end(start) + 1))
        # A removal that reaches the end of the file takes the blank lines that separated it too,
        # so the file does not end in an empty line it did not have.
        if len(self.lines) in removed:
            n = len(self.lines)
            while n in removed:
                n -= 1
            while n >= 1 and not self.lines[n - 1].strip():
                removed.add(n)
                n -= 1
        note_after = {self.entries[s].line_end: s for s in self.notes if s not in self.retire}
        out: list[str] = []
        for number, line in enumerate(self.lines, start=1):
            if number in removed:
                continue
            if number in note_after:
                content, end = split_eol(line)
                line = content + "".join(self.eol + note for note in self.notes[note_after[number]]) + end
            out.append(line)
        return encode_utf8("".join(out), self.bom)

    def archived_block(self, start: int, eol: str) -> str:
        entry = self.entries[start]
        block = self.lines[start - 1 : entry.line_end]
        text = "".join(block)
        if not split_eol(block[-1])[1]:
            text += eol
        for note in self.notes.get(start, []):
            text += note + eol
        return text + self.retire[start] + eol


@dataclass
class ArchiveFile:
    """`archive/reference-<stem>.md`: the entries retired from one reference file, appended."""

    key: str
    source: str
    existing: tuple[bool, str] | None  # (BOM, text) when the file exists
    eol: str
    blocks: list[str] = field(default_factory=list)

    def original(self) -> bytes | None:
        if self.existing is None:
            return None
        bom, text = self.existing
        return encode_utf8(text, bom)

    def render(self) -> bytes:
        eol = self.eol
        if self.existing is None:
            bom, text = False, (
                f"# Archive: {self.source}{eol}{eol}"
                f"Entries moved out of {self.source} by memory consolidation. Nothing here is loaded "
                f"into context; to restore an entry, move its block back.{eol}"
            )
        else:
            bom, text = self.existing
            if text and not split_eol(text)[1]:
                text += eol
        for block in self.blocks:
            if text and not ends_with_blank_line(text):
                text += eol
            text += block
        return encode_utf8(text, bom)


# --------------------------------------------------------------------------------------------
# The writer


def _quote(m: Memory) -> str:
    return f'"{m.title}"'


def _label(m: Memory) -> str:
    """Title, file and date: two entries may share a title, even within one file."""
    when = m.modified or m.created
    return f'{_quote(m)} ({m.extra["file"]}{f", {when.isoformat()}" if when else ""})'


def _importance(m: Memory) -> str:
    return f"importance {m.extra.get('importance')}"


class _Writer:
    def __init__(self, corpus: Corpus, settings: Settings, resolve: str | None) -> None:
        self.root = Path(corpus.root)
        self.corpus = corpus
        self.by_key = corpus.by_key()
        self.settings = settings
        self.cfg = settings.zylos
        self.resolve = resolve
        self.today = settings.now.isoformat()
        self.out = ChangeSet()
        self.files: dict[str, RefFile | str] = {}
        self.archives: dict[str, ArchiveFile | str] = {}
        self.retired: set[str] = set()
        self.claimed: set[str] = set()
        self.moved: set[str] = set()
        self.moves: list[Op] = []
        self.rotated = False
        self.bullets: list[str] = []
        self.disk = DiskReads(self.root, settings.max_file_bytes)
        self.entry_edits: dict[str, Fields] = {}  # in-place replacements, by entry
        self.tier_edits: dict[str, Fields] = {}  # and by tier file

    # --- accounting ---------------------------------------------------------------------------

    def applied(self, action: Action, bullet: str) -> None:
        self.out.applied.append(action)
        self.bullets.append(bullet)

    def skip(self, action: Action, why: str) -> None:
        self.out.skipped.append((action, why))

    # --- what is on disk ----------------------------------------------------------------------

    def ref_file(self, key: str) -> RefFile | str:
        if key not in self.files:
            self.files[key] = self._load_ref(key)
        return self.files[key]

    def _load_ref(self, key: str) -> RefFile | str:
        memory = self.by_key.get(key)
        path = self.root / key
        if memory is None or memory.extra.get("tier") != "reference":
            return f"{key} was not read (missing or unreadable): left untouched"
        if path.is_symlink() or not path.is_file():
            return f"{key} is not a regular file: left untouched"
        try:
            data = self.disk.bytes(key)
        except Unreadable as exc:
            return f"{key} cannot be read: {exc}"
        decoded = decode(data) if data is not None else None
        if decoded is None or decoded[1] != memory.body:
            return f"{key} changed on disk since it was read: left untouched"
        return RefFile.parse(key, *decoded)

    def entry(self, key: str) -> tuple[RefFile, Memory] | str:
        memory = self.by_key.get(key)
        if memory is None or not memory.extra.get("entry"):
            return f"{key} is not a reference entry of this store as read"
        if key in self.retired:
            return f"{key} was already archived by an earlier action of this run"
        ref = self.ref_file(memory.extra["file"])
        if isinstance(ref, str):
            return ref
        start, end = memory.extra.get("line_start"), memory.extra.get("line_end")
        found = ref.entries.get(start) if isinstance(start, int) else None
        if found is None or (found.title, found.line_end, found.text) != (memory.title, end, memory.extra.get("text")):
            return f'{ref.key} changed since it was read: entry "{memory.title}" is no longer at lines {start}-{end}'
        return ref, memory

    def dest_problem(self, key: str, may_exist: bool) -> str | None:
        """Why `key` cannot receive a file (None when it can): never through a symlink, never over a
        file unless appending to it is the point."""
        parts = key.split("/")
        for depth in range(1, len(parts)):
            folder = self.root.joinpath(*parts[:depth])
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                return f"{'/'.join(parts[:depth])}/ is not a plain folder of the store"
        path = self.root / key
        exists = path.exists() or path.is_symlink()
        if exists and (path.is_symlink() or not path.is_file()):
            return f"{key} is not a regular file"
        if not may_exist and (exists or key in self.claimed):
            return f"{key} already exists: never overwritten"
        return None

    def archive_file(self, source: str) -> ArchiveFile | str:
        if source not in self.archives:
            self.archives[source] = self._load_archive(source)
        return self.archives[source]

    def _load_archive(self, source: str) -> ArchiveFile | str:
        stem = source.rsplit("/", 1)[-1].removesuffix(".md")
        key = f"{ARCHIVE_DIR}/reference-{stem}.md"
        problem = self.dest_problem(key, may_exist=True)
        if problem:
            return f"cannot archive into {key}: {problem}"
        ref = self.ref_file(source)
        default_eol = ref.eol if isinstance(ref, RefFile) else "\n"
        try:
            data = self.disk.bytes(key)  # within the readers' limits, once
        except Unreadable as exc:
            return f"cannot read {key}: {exc}"
        if data is None:
            return ArchiveFile(key=key, source=source, existing=None, eol=default_eol)
        existing = decode(data)
        if existing is None:
            return f"{key} is not UTF-8 text: left untouched, nothing archived into it"
        return ArchiveFile(key=key, source=source, existing=existing, eol=eol_of(existing[1], default_eol))

    def retire(self, ref: RefFile, memory: Memory, why: str) -> None:
        ref.retire[memory.extra["line_start"]] = field_line("Archived", f"{self.today} ({why})")
        self.retired.add(memory.key)

    def resolve_all(self, keys: list[str]) -> list[tuple[RefFile, Memory]] | str:
        found = []
        for key in keys:
            got = self.entry(key)
            if isinstance(got, str):
                return got
            found.append(got)
        return found

    def archives_for(self, refs: list[RefFile]) -> dict[str, ArchiveFile] | str:
        out: dict[str, ArchiveFile] = {}
        for ref in refs:
            arch = self.archive_file(ref.key)
            if isinstance(arch, str):
                return arch
            out[ref.key] = arch
        return out

    # --- actions ------------------------------------------------------------------------------

    def merge(self, action: Action) -> None:
        keys = list(dict.fromkeys(action.targets))
        found = self.resolve_all(keys)
        if isinstance(found, str):
            return self.skip(action, found)
        # The plan decided who survives and which importance 1-2 duplicates are kept (rules/duplicates.py).
        members = {m.key: (ref, m) for ref, m in found}
        survivor = members[action.survivor][1] if action.survivor in members else found[0][1]
        planned = action if isinstance(action, MergeDuplicateAction) else MergeDuplicateAction(targets=[], reason="")
        kept = [m for _, m in found if m.key in (planned.kept or [])]
        retired = [(ref, m) for ref, m in found if m.key != survivor.key and m.key not in (planned.kept or [])]
        if not retired:
            return self.skip(action, f"every duplicate of {survivor.key} has importance 1-2: none is retired")
        guarded = next((m for _, m in retired if immune(m, self.cfg)), None)
        if guarded is not None:  # a merge the plan did not decide on (made by hand): never retire it
            return self.skip(action, f"{guarded.key} has importance 1-2: a merge never retires it, and the plan did not keep it")
        archives = self.archives_for([ref for ref, _ in retired])
        if isinstance(archives, str):
            return self.skip(action, archives)
        for ref, m in retired:
            self.retire(ref, m, f"duplicate; merged into {_label(survivor)}")
        if planned.survivor_instead_of:
            self.out.notes.append(
                f"{survivor.key} ({_importance(survivor)}) kept as the survivor instead of {planned.survivor_instead_of}: "
                "importance 1-2 entries are never retired by a merge"
            )
        for m in kept:
            self.out.notes.append(f"{m.key} ({_importance(m)}) kept although it duplicates {survivor.key}")
        names = ", ".join(_label(m) for _, m in retired)
        dests = ", ".join(sorted({archives[ref.key].key for ref, _ in retired}))
        self.applied(action, f"Merged duplicate {names} into {_label(survivor)}; moved to {dests}")

    def archive(self, action: Action) -> None:
        keys = list(dict.fromkeys(action.targets))
        found = self.resolve_all(keys)
        if isinstance(found, str):
            return self.skip(action, found)
        for _, m in found:
            if immune(m, self.cfg):
                return self.skip(action, f"{m.key} has {_importance(m)}: importance 1-2 entries are never archived automatically")
        archives = self.archives_for([ref for ref, _ in found])
        if isinstance(archives, str):
            return self.skip(action, archives)
        for ref, m in found:
            self.retire(ref, m, self.archive_reason(action, ref, m))
        for ref, m in found[:-1]:
            self.bullets.append(self.archived_bullet(ref, m, archives[ref.key]))
        ref, m = found[-1]
        self.applied(action, self.archived_bullet(ref, m, archives[ref.key]))

    def archived_bullet(self, ref: RefFile, m: Memory, arch: ArchiveFile) -> str:
        status = m.extra.get("status")
        said = f" (status {status})" if status else ""
        return f"Archived {_quote(m)}{said} from {ref.key} to {arch.key}"

    def archive_reason(self, action: Action, ref: RefFile, m: Memory) -> str:
        status = m.extra.get("status")
        mtime = self.by_key[ref.key].mtime
        if action.source == "deterministic" and status in OBSOLETE_STATUSES and mtime is not None:
            age = age_days(mtime, self.settings.now)
            cls = band(age, self.cfg)
            if cls in REVIEW_BANDS:
                return f"status {status}; {ref.key} {cls}, unchanged for {age} days"
        return action.reason.removesuffix(": move to archive/")

    def conflict(self, action: Action) -> None:
        if self.resolve not in ("newer", "keep-both"):
            return self.skip(action, "conflicts are applied only with --resolve newer or keep-both")
        keys = list(dict.fromkeys(action.targets))
        if len(keys) != 2:
            return self.skip(action, "a conflict resolution needs exactly two entries")
        found = self.resolve_all(keys)
        if isinstance(found, str):
            return self.skip(action, found)
        if self.resolve == "newer":
            return self.keep_newer(action, found)
        return self.keep_both(action, found)

    def keep_newer(self, action: Action, found: list[tuple[RefFile, Memory]]) -> None:
        (ref_a, a), (ref_b, b) = found
        date_a, date_b = a.modified or a.created, b.modified or b.created
        if date_a is None or date_b is None or date_a == date_b:
            return self.skip(
                action,
                f"cannot tell which is newer ({_quote(a)}: {date_a or 'no date'}, {_quote(b)}: {date_b or 'no date'}): "
                "resolve it by hand",
            )
        (ref_old, old), new = ((ref_a, a), b) if date_a < date_b else ((ref_b, b), a)
        if immune(old, self.cfg):
            return self.skip(action, f"the older side {old.key} has {_importance(old)}: never archived automatically; resolve it by hand")
        archives = self.archives_for([ref_old])
        if isinstance(archives, str):
            return self.skip(action, archives)
        self.retire(ref_old, old, f"conflicts with the newer {_label(new)}; kept the newer")
        self.applied(
            action,
            f"Resolved a conflict by keeping the newer {_label(new)}: archived {_label(old)} "
            f"to {archives[ref_old.key].key}",
        )

    def keep_both(self, action: Action, found: list[tuple[RefFile, Memory]]) -> None:
        (ref_a, a), (ref_b, b) = found
        added = 0
        for ref, m, other in ((ref_a, a, b), (ref_b, b, a)):
            marker = f"conflicts with {_quote(other)}"
            pending = ref.notes.get(m.extra["line_start"], [])
            if marker in m.extra.get("text", "") or any(marker in note for note in pending):
                continue
            ref.notes[m.extra["line_start"]] = [*pending, field_line("Note", f"{marker} (kept both, {self.today})")]
            added += 1
        if not added:
            return self.skip(action, "both entries already note this conflict")
        self.applied(
            action,
            f"Kept both sides of a conflict: noted it on {_label(a)} and {_label(b)}",
        )

    def archive_session(self, action: Action) -> None:
        key = action.targets[0] if len(action.targets) == 1 else ""
        memory = self.by_key.get(key)
        named = SESSION_NAME.match(key)
        if memory is None or memory.extra.get("tier") != "session" or memory.extra.get("current") or not named:
            return self.skip(action, f"{', '.join(action.targets)} is not a dated session log of this store")
        if key in self.moved:
            return self.skip(action, f"{key} was already moved by an earlier action of this run")
        source = self.root / key
        if source.is_symlink() or not source.is_file():
            return self.skip(action, f"{key} is not a regular file: left untouched")
        dest = f"{ARCHIVE_DIR}/sessions/{named.group(1)}"
        problem = self.dest_problem(dest, may_exist=False)
        if problem:
            return self.skip(action, problem)
        self.claimed.add(dest)
        self.moved.add(key)
        # Built on the log as checked against the plan: the journal refuses if it changed since.
        self.moves.append(Op("move", key, dest, expect=self.disk.state(key) or ABSENT))
        age = (self.settings.now - dt.date.fromisoformat(named.group(2))).days
        self.applied(action, f"Moved the session log {key} ({age} days old) to {dest}")

    def rotate(self, action: Action) -> None:
        key = action.targets[0] if len(action.targets) == 1 else ""
        memory = self.by_key.get(key)
        if key != CURRENT_SESSION or memory is None or not memory.extra.get("current"):
            return self.skip(action, f"{', '.join(action.targets)} is not the current session log")
        rotate_to = action.rotate_to if isinstance(action, RotateSessionAction) else None
        named = SESSION_NAME.match(rotate_to) if isinstance(rotate_to, str) else None
        if named is None:
            return self.skip(action, f"no dated sessions/ name to rotate to (rotate_to: {rotate_to!r})")
        if self.rotated or key in self.moved:
            return self.skip(action, f"{key} was already rotated by an earlier action of this run")
        source = self.root / key
        if source.is_symlink() or not source.is_file():
            return self.skip(action, f"{key} is not a regular file: left untouched")
        dest, straight = named.group(0), False  # SESSION_NAME matched all of rotate_to
        cutoff = self.settings.now - dt.timedelta(days=self.cfg.session_archive_days)
        if dt.date.fromisoformat(named.group(2)) < cutoff:
            dest, straight = f"{ARCHIVE_DIR}/sessions/{named.group(1)}", True
        problem = self.dest_problem(dest, may_exist=False)
        if problem:
            return self.skip(action, problem)
        self.claimed.add(dest)
        self.moved.add(key)
        # A rename, no expected state: lines the agent appends until it happens go along with the log.
        self.moves.append(Op("move", key, dest))
        self.rotated = True
        header = memory.extra.get("header_date") or "undated"
        why = f" (older than {self.cfg.session_archive_days} days: straight to {ARCHIVE_DIR}/)" if straight else ""
        self.applied(action, f"Rotated the {header} session log to {dest}{why}{self.appended_since_plan(action, key, dest)}")

    def appended_since_plan(self, action: Action, key: str, dest: str) -> str:
        """What the log says of lines the agent appended to `key` after the plan read it (they move
        with it: `changed_since_plan` let the rotation through for them), also a note of the run."""
        read = action.takes_appended_lines()
        added = self.disk.lines_added(read) if read is not None else None  # None for the file as the plan read it
        if not added:
            return ""  # none, or only the line break ending the last line the plan read
        lines = plural(line_count(added.decode("utf-8", "replace")), "line")
        self.out.notes.append(f"{key}: {lines} appended since the plan moved with it to {dest}")
        return f", with the {lines} appended to it since the plan"

    # --- the end of the run -------------------------------------------------------------------

    def log_lines(self, stamp: str, run_id: str) -> list[str]:
        lines = [f"## {stamp} - {LOG_TITLE}"]
        lines += [f"- {b}" for b in self.bullets]
        lines += [f"- Skipped {a.kind} of {', '.join(a.targets)}: {why}" for a, why in self.out.skipped]
        lines.append(
            f"- Run {run_id}: report in .memconsolidate/reports/{run_id}.md; "
            f"undo with `memconsolidate undo <store> --run {run_id}`"
        )
        return [printable(line) for line in lines]  # a file name cannot forge an entry of the log

    def log_op(self, stamp: str, run_id: str) -> Op | None:
        path = self.root / CURRENT_SESSION
        current = self.by_key.get(CURRENT_SESSION)
        fresh = self.rotated or not (path.exists() or path.is_symlink())
        if fresh:
            eol = eol_of(current.body) if self.rotated and current is not None else "\n"
            text = f"{session_header(self.today)}{eol}{eol}" + eol.join(self.log_lines(stamp, run_id)) + eol
            return Op("write", CURRENT_SESSION, data=text.encode("utf-8"))
        unlogged = f"{CURRENT_SESSION} is unreadable: this consolidation is not logged there (see the run report)"
        if current is None or path.is_symlink() or not path.is_file():
            self.out.notes.append(unlogged)
            return None
        try:
            data = path.read_bytes()
        except OSError:
            self.out.notes.append(unlogged)
            return None
        decoded = decode(data)
        if decoded is None:
            self.out.notes.append(unlogged)
            return None
        text = decoded[1]
        eol = eol_of(text)
        if not text:
            prefix = f"{session_header(self.today)}{eol}{eol}"
        else:
            prefix = "" if split_eol(text)[1] else eol
            if not ends_with_blank_line(text + prefix):
                prefix += eol
        addition = prefix + eol.join(self.log_lines(stamp, run_id)) + eol
        # Append-only, in place: the log's bytes so far stay exactly as they are (and must still be
        # those), and an agent holding the log open keeps appending to the file everyone reads.
        return Op("append", CURRENT_SESSION, data=addition.encode("utf-8"), expect=state(data))

    def finish(self, run_id: str, clock: Clock) -> ChangeSet:
        out = self.out
        if not out.applied:
            return out
        refs = [self.files[k] for k in sorted(self.files)]
        edited = [r for r in refs if isinstance(r, RefFile) and r.changed]
        for ref in edited:
            out.ops.append(Op("write", ref.key, data=ref.render(), expect=state(ref.original())))
        touched_archives: dict[str, ArchiveFile] = {}
        for ref in edited:
            if not ref.retire:
                continue
            arch = self.archives[ref.key]
            assert isinstance(arch, ArchiveFile)
            for start in sorted(ref.retire):
                arch.blocks.append(ref.archived_block(start, arch.eol))
            touched_archives[arch.key] = arch
        for key in sorted(touched_archives):
            arch = touched_archives[key]
            out.ops.append(Op("write", key, data=arch.render(), expect=state(arch.original())))
        out.ops.extend(self.moves)
        out.ops.extend(tier_writes(self, self.moves))
        log = self.log_op(clock().strftime("%H:%M"), run_id)
        if log is not None:
            out.ops.append(log)
        report = render_run_report("zylos", run_id, self.settings.now, out)
        out.ops.append(Op("write", f".memconsolidate/reports/{run_id}.md", data=report.encode("utf-8")))
        return out


def changes(
    corpus: Corpus,
    actions: list[Action],
    settings: Settings,
    run_id: str,
    resolve: str | None,
    clock: Clock | None = None,
) -> ChangeSet:
    writer = _Writer(corpus, settings, resolve)
    for action in actions:
        # the live session log a rotation takes whole may have grown since by lines: they go along
        changed = changed_since_plan(action, writer.disk.state, added=writer.disk.lines_added)
        if changed:
            writer.skip(action, changed)
        elif action.kind == ActionKind.MERGE_DUPLICATE:
            writer.merge(action)
        elif action.kind == ActionKind.ARCHIVE:
            writer.archive(action)
        elif action.kind == ActionKind.CONFLICT:
            writer.conflict(action)
        elif action.kind == ActionKind.ARCHIVE_SESSION:
            writer.archive_session(action)
        elif action.kind == ActionKind.ROTATE_SESSION:
            writer.rotate(action)
        elif action.kind in TEXT_EDIT_KINDS:
            text_edit(writer, action)
        elif action.kind == ActionKind.TRIM_BUDGET:
            writer.skip(
                action,
                "needs judgement: trimming means deciding what is still current; no stage supplies the "
                "trimmed text yet, so nothing was changed",
            )
        else:
            writer.skip(action, f"{action.kind} does not apply to zylos stores")
    return writer.finish(run_id, clock or default_clock)
