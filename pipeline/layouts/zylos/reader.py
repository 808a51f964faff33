"""`zylos` layout (zylos-memory): tiered plain markdown, no front matter.

    identity.md, state.md, references.md      core tiers, always loaded by the agent (16 KiB budget)
    users/<id>/profile.md                     per-user profile
    reference/{decisions,projects,preferences,ideas}.md (and any other reference/*.md)
                                              `### Title` entries with `- **Field:** value` lines
    sessions/current.md, sessions/YYYY-MM-DD.md   session logs
    archive/                                  cold storage: counted, never loaded as memories

Every tier file is one Memory (key = its path, `type` = its tier, never compared as a duplicate).
Every entry of a reference file is one more Memory, keyed `reference/<file>.md#<slug>`, whose `body`
is the entry's statement: the Decision field, else the Description field, else the title (a
preference says everything in its title). Dates, status and importance lines are left out of the
body on purpose: they differ between two entries that say the same thing, and duplicate,
reorder and contradiction detection must compare what an entry says, not its bookkeeping.
What else the entry says is its merge parts (`rules.duplicates.MERGE_PARTS`): the title when a field
gives the statement, every field but the statement, the dates and the importance (its scope, status,
context, type, source...), and its notes. Two entries with one statement but another scope or an
exception are two memories: their merge waits for the user. A reference file with an unclosed code
fence is reported and none of its entries is read (where they end cannot be told).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import Settings
from ...kinds import FindingKind
from ...model import Corpus, Finding, Memory
from ...text.counts import plural
from ...rules.duplicates import MERGE_PARTS, MERGE_PROTECTED
from ...rules.text import slugify
from ...text.lines import split_lines
from ...storage.files import Unreadable, as_date, mtime_of, parse_error, read_text_measured, rel, walk_files
# The entry grammar, defined once for this reader and the writer (names kept importable from here).
from .entries import FIELD, HEADING, SESSION_HEADER, Entry, parse_entries, parse_reference  # noqa: F401
from .rules.freshness import immune

LAYOUT = "zylos"
GROUP = "zylos"
CORE_FILES = ("identity.md", "state.md", "references.md")
REFERENCE_DIR = "reference"
SESSIONS_DIR = "sessions"
USERS_DIR = "users"
ARCHIVE_DIR = "archive"
CURRENT_SESSION = "sessions/current.md"

# The four reference files the seed names, with the singular kind their entries have. Any other
# reference/*.md file keeps its stem as both tier and kind.
REFERENCE_KINDS = {"decisions": "decision", "projects": "project", "preferences": "preference", "ideas": "idea"}
# Fields that carry an entry's statement, in the order they are preferred for `body`.
STATEMENT_FIELDS = ("decision", "description")
CREATED_FIELDS = ("date", "started", "date observed")
MODIFIED_FIELDS = ("updated",)
# What may differ between two records of one memory (the seed's sync agent notes a preference again
# with the day it observed it again): bookkeeping, not what the entry says. A 1-2 importance is
# guarded on its own (`MERGE_PROTECTED`).
BOOKKEEPING_FIELDS = frozenset((*CREATED_FIELDS, *MODIFIED_FIELDS, "importance"))

# consolidate.js: `YYYY-MM-DD.md`, and `YYYY-MM-DD-N.md` when a rotation found the name taken.
SESSION_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-\d+)?\.md$")
LAST_UPDATED = re.compile(r"^Last updated:\s*(\d{4}-\d{2}-\d{2})", re.MULTILINE)
LEADING_INT = re.compile(r"^\s*(\d+)")


def detect(root: Path) -> bool:
    return (root / "identity.md").is_file() and (root / "state.md").is_file()


def configure(root: Path, settings: Settings) -> Settings:
    # A zylos store has no consolidation config of its own: its numbers are the seed's, in Settings.
    return settings


# --------------------------------------------------------------------------------------------
# Entries of reference/*.md (their grammar: entries.py)


def parse_importance(value: str | None) -> int | None:
    if value is None:
        return None
    match = LEADING_INT.match(value)
    return int(match.group(1)) if match else None


def parse_status(value: str | None) -> str | None:
    """The status word: `superseded (by the ESM decision)` -> `superseded`."""
    if value is None:
        return None
    match = re.match(r"[\s*_`]*([A-Za-z][A-Za-z-]*)", value)
    return match.group(1).casefold() if match else None


def _first_date(fields: dict[str, str], names: tuple[str, ...]) -> dt.date | None:
    for name in names:
        if name in fields:
            found = as_date(fields[name])
            if found is not None:
                return found
    return None


def _statement_field(entry: Entry) -> str | None:
    """The field that gives the entry's statement, or None when its title does."""
    return next((name for name in STATEMENT_FIELDS if entry.fields.get(name, "").strip()), None)


def entry_statement(entry: Entry) -> str:
    name = _statement_field(entry)
    return entry.fields[name].strip() if name else entry.title


def entry_parts(entry: Entry) -> dict[str, str]:
    """What the entry says besides its statement (`MERGE_PARTS`), by part: "title" (when a field
    gives the statement), each field but the statement and the bookkeeping, "notes"."""
    statement = _statement_field(entry)
    parts = {"title": entry.title} if statement else {}
    for name, value in entry.fields.items():
        if name != statement and name not in BOOKKEEPING_FIELDS:
            parts[name] = f"{parts[name]}\n{value}" if name in parts else value  # a field named "title"
    if entry.notes:
        parts["notes"] = "\n".join([*filter(None, [parts.get("notes")]), *entry.notes])
    return parts


def entry_memories(file_key: str, kind: str, text: str, mtime: float | None) -> list[Memory]:
    return memories_of_entries(file_key, kind, parse_entries(text), mtime)


def memories_of_entries(file_key: str, kind: str, entries: list[Entry], mtime: float | None) -> list[Memory]:
    out: list[Memory] = []
    used: set[str] = set()
    last_n: dict[str, int] = {}
    for entry in entries:
        # Repeated titles get -2, -3, ...; a suffix never reuses a slug another title already has.
        base = slugify(entry.title)
        n = last_n.get(base, 1)  # every suffix below the last one taken is still taken: not quadratic
        slug = base if n == 1 else f"{base}-{n}"
        while slug in used:
            n += 1
            slug = f"{base}-{n}"
        used.add(slug)
        last_n[base] = n
        status_text = entry.fields.get("status")
        out.append(
            Memory(
                key=f"{file_key}#{slug}",
                layout="zylos",
                title=entry.title,
                body=entry_statement(entry),
                type=kind,
                created=_first_date(entry.fields, CREATED_FIELDS),
                modified=_first_date(entry.fields, MODIFIED_FIELDS),
                mtime=mtime,
                source=entry.fields.get("source") or entry.fields.get("decided by") or None,
                group=GROUP,
                extra={
                    "entry": True,
                    "file": file_key,
                    "section": entry.section,
                    "importance": parse_importance(entry.fields.get("importance")),
                    "status": parse_status(status_text),
                    "status_text": status_text,
                    "entry_type": entry.fields.get("type"),
                    "fields": dict(entry.fields),
                    "notes": list(entry.notes),
                    "line_start": entry.line_start,
                    "line_end": entry.line_end,
                    "text": entry.text,
                    MERGE_PARTS: entry_parts(entry),
                },
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# Tier files


def _title(text: str) -> str:
    for line in split_lines(text):
        match = HEADING.match(line)
        if match and len(match.group(1)) == 1:
            return match.group(2).strip()
    return ""


def _tier_memory(root: Path, path: Path, tier: str, kind: str, read: tuple[str, dict[str, str], int], extra: dict[str, Any]) -> Memory:
    text, read_shas, _ = read
    updated = LAST_UPDATED.search(text)
    size = _byte_size(path, text)
    return Memory(
        key=rel(root, path),
        layout="zylos",
        title=_title(text),
        body=text,
        type=kind,
        modified=as_date(updated.group(1)) if updated else None,
        mtime=mtime_of(path),
        group=GROUP,
        extra={"compare": False, "tier": tier, "size": size, **extra},
        read_shas=read_shas,
    )


def _read(root: Path, path: Path, settings: Settings, corpus: Corpus) -> tuple[str, dict[str, str], int] | None:
    """The file's text, its read hash ({key: sha256 of the bytes}) and how many bytes were read,
    or None (reported)."""
    try:
        read = read_text_measured(root, path, settings.max_file_bytes)
    except Unreadable as exc:
        corpus.findings.append(parse_error(rel(root, path), str(exc)))
        return None
    return read.text, {rel(root, path): read.sha}, read.length


def _byte_size(path: Path, text: str) -> int:
    # Budgets are on bytes on disk, as consolidate.js measures them (a BOM counts).
    try:
        return path.stat().st_size
    except OSError:
        return len(text.encode("utf-8"))


def _md_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.name.endswith(".md") and not p.name.startswith("."))
    except OSError:
        return []


def _load_core(root: Path, settings: Settings, corpus: Corpus) -> None:
    for name in CORE_FILES:
        path = root / name
        if not path.exists() and not path.is_symlink():
            corpus.extra.setdefault("missing", []).append(name)
            continue
        read = _read(root, path, settings, corpus)
        if read is not None:
            corpus.memories.append(_tier_memory(root, path, "core", name[:-3], read, {}))


def _load_profiles(root: Path, settings: Settings, corpus: Corpus) -> None:
    users = root / USERS_DIR
    if not users.is_dir():
        return
    for user in sorted(p for p in users.iterdir() if p.is_dir() and not p.name.startswith(".")):
        path = user / "profile.md"
        if not path.is_file():
            continue
        read = _read(root, path, settings, corpus)
        if read is not None:
            corpus.memories.append(_tier_memory(root, path, "profile", "profile", read, {"user": user.name}))


def _load_references(root: Path, settings: Settings, corpus: Corpus) -> None:
    for path in _md_files(root / REFERENCE_DIR):
        if not path.is_file():
            continue
        read = _read(root, path, settings, corpus)
        if read is None:
            continue
        text, read_shas, _ = read
        stem = path.name[:-3]
        kind = REFERENCE_KINDS.get(stem, stem)
        key = rel(root, path)
        parsed = parse_reference(text)
        if parsed.unclosed_fence is not None:
            corpus.findings.append(parse_error(key, _unclosed_fence(parsed.unclosed_fence)))
        readable = parsed.entries if parsed.unclosed_fence is None else []
        entries = memories_of_entries(key, kind, readable, mtime_of(path))
        for entry in entries:
            entry.read_shas = dict(read_shas)  # an entry is judged with the file it lives in
            entry.extra[MERGE_PROTECTED] = immune(entry, settings.zylos)  # never retired by a merge
        corpus.memories.append(
            _tier_memory(root, path, "reference", stem, read, {"kind": kind, "entries": [m.key for m in entries]})
        )
        corpus.memories.extend(entries)


def _unclosed_fence(line: int) -> str:
    return (f"the code fence at line {line} is never closed: the headings after it would be code, so where its "
            "entries end cannot be told; none of them is read (nothing here is merged or archived) until it is closed")


def _load_sessions(root: Path, settings: Settings, corpus: Corpus) -> None:
    files = [p for p in _md_files(root / SESSIONS_DIR) if p.is_file() or p.is_symlink()]
    # Every session file name, readable or not: a rotation must not pick a name already taken.
    corpus.extra["session_files"] = [rel(root, p) for p in files]
    for path in files:
        read = _read(root, path, settings, corpus)
        if read is None:
            continue
        text = read[0]
        extra: dict[str, Any] = {}
        created: dt.date | None = None
        if rel(root, path) == CURRENT_SESSION:
            header = SESSION_HEADER.search(text)
            header_date = as_date(header.group(1)) if header else None
            # append_only: an agent may hold it open to append; it is rotated, never rewritten in place.
            # read_bytes: how much of it the plan judged, where what the agent appends after begins.
            extra = {"current": True, "append_only": True, "header_date": header_date.isoformat() if header_date else None,
                     "read_bytes": read[2]}
            created = header_date
        else:
            named = SESSION_FILE.match(path.name)
            session_date = as_date(named.group(1)) if named else None
            extra = {"current": False, "session_date": session_date.isoformat() if session_date else None}
            created = session_date
        memory = _tier_memory(root, path, "session", "session", read, extra)
        memory.created = created
        corpus.memories.append(memory)


def _note_archive(root: Path, corpus: Corpus) -> None:
    """Cold storage is not memory: count what it holds so reports can say it is there."""
    folder = root / ARCHIVE_DIR
    present = folder.is_dir() and not folder.is_symlink()
    files = sorted(rel(root, p) for p in walk_files(root, folder, ("",))) if present else []
    corpus.extra["archive"] = {"present": present, "files": files}


# Where a file named as one of the seed's examples belongs (examples/<name> shows the format of it).
_BELONGS = {**{f"{stem}.md": f"{REFERENCE_DIR}/{stem}.md" for stem in REFERENCE_KINDS},
            "user-profile.md": f"{USERS_DIR}/<id>/profile.md", "profile.md": f"{USERS_DIR}/<id>/profile.md",
            "session-log.md": f"{CURRENT_SESSION} or {SESSIONS_DIR}/YYYY-MM-DD.md", "current.md": CURRENT_SESSION}


def _note_unread(root: Path, corpus: Corpus) -> None:
    """The markdown files beside the core tiers, which the agent never loads and this tool never
    reads: said, so a store laid out otherwise (a reference file at the top) is not reported as
    "all current" with most of it unread."""
    unread = [p.name for p in _md_files(root) if p.name not in CORE_FILES and (p.is_file() or p.is_symlink())]
    if not unread:
        return
    hints = [f"{name} (its place: {_BELONGS[name]})" if name in _BELONGS else name for name in unread]
    corpus.findings.append(Finding(
        kind=FindingKind.NOT_READ, targets=unread,
        reason=f"{plural(len(unread), 'file')} beside the core tiers, not read as memory: {', '.join(hints)}",
    ))


def load(root: Path, settings: Settings) -> Corpus:
    corpus = Corpus(layout="zylos", root=str(root))
    _load_core(root, settings, corpus)
    _note_unread(root, corpus)
    _load_profiles(root, settings, corpus)
    _load_references(root, settings, corpus)
    _load_sessions(root, settings, corpus)
    _note_archive(root, corpus)
    corpus.memories.sort(key=lambda m: m.key)
    corpus.findings.sort(key=lambda f: (f.targets, f.reason))
    return corpus
