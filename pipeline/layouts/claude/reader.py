"""`claude` layout: Claude Code auto-memory folders (dream, seed 001).

A memory folder holds a `MEMORY.md` index and sibling topic files (`*.md`) with front matter `name`,
`description`, `type` (user, feedback, project, reference). A store is any folder under PATH that
holds a MEMORY.md (`.claude/agent-memory/<agent>/`, `.claude/projects/<hash>/memory/` and
`.claude/memory/` count even before they have one, when a file there is a memory by its front
matter: `_holds_memory`); symlinked folders that stay inside PATH are
followed once, and a dangling or outside one is a `symlink_skipped` finding.

Front matter is read as Claude Code reads it: YAML first, `key: value` lines when strict YAML
rejects it (`text.lenient_frontmatter`). Real folders mix a top-level `type:` with a nested
`metadata: {type: ...}` and often have no front matter at all (type None: dream treats those as
EVERGREEN). What MEMORY.md reaches — links anywhere in a line, inline-code mentions, sub-indexes —
is decided by `memory_md`, the one grammar the reader, the drift check and the rebuild share;
sub-index files are indexes, not memories. A MEMORY.md with no topic files beside it holds the
memories itself: one per bullet or paragraph of a section, keyed `MEMORY.md#<heading-slug>/<n>`.
A MEMORY.md with a code fence no later fence line closes is a `parse_error`: its listings are read,
the lines after the fence as text, but it is never edited, and no memory is read from it (where the
one holding the fence ends cannot be told: cut out, it would take the rest of the file with it). A
sub-index with one is a `parse_error` alike: read, never edited.

Staleness is checked against the repository that holds the folder's `.claude/` (or `--repo`, or,
for `~/.claude/projects/<encoded-path>/memory/`, the `cwd` its session transcripts record; else the
git work tree around the folder). With none, a `staleness_skipped` finding says why and the folder's
memories are not judged. The scan itself happens once, lazily, in `rules.staleness_context`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterator

from ...config import Settings
from ...journal import ABSENT
from ...storage.since_plan import listing_key, listing_state
from ...storage.walk import walk_down
from ...text.lenient_frontmatter import split_frontmatter_lenient
from ...text.lines import line_count
from . import memory_md
from .paths import ARCHIVE_DIR
from ...kinds import FindingKind
from ...rules.aliases import ALIASES
from ...model import Corpus, Finding, IndexEntry, Memory, is_entry
from ...storage.files import (
    SKIP_DIRS,
    Unreadable,
    as_date,
    FrontMatter,
    as_tags,
    decode_text,
    inside,
    mtime_of,
    open_checked,
    parse_error,
    read_chunks,
    read_bytes,
    read_text_sha,
    rel,
    symlink_loop,
)

LAYOUT = "claude"
INDEX = "MEMORY.md"
WALK_SKIP = SKIP_DIRS | {".archive"}
DATE_KEYS = ("modified", "updated", "last_updated", "date")



# ---------------------------------------------------------------------------------------------
# discovery


# How much of a file discovery reads to tell a memory by its front matter, which opens the file.
_HEAD_BYTES = 64 * 1024


def _holds_memory(root: Path, folder: Path) -> bool:
    """Whether a folder without a MEMORY.md holds a memory: a `.md` file whose front matter says
    what a memory's does (`_names_a_memory`). Projects keep other records beside their agents'
    memory folders (`.claude/agent-memory/failures/` holding a README on its JSON records, an
    `explanations/` folder of decision records with front matter of their own): no index is
    created for those, and nothing in them is judged as a memory."""
    try:
        candidates = sorted(p for p in folder.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError:
        return False
    return any(_reads_as_memory(root, p) for p in candidates)


def _reads_as_memory(root: Path, path: Path) -> bool:
    try:
        with open_checked(root, path, sys.maxsize) as fh:  # the head only: no file is too large for it
            head = b"".join(read_chunks(fh, _HEAD_BYTES))
        fm, _lenient = split_frontmatter_lenient(head.decode("utf-8-sig", errors="replace"))
    except Unreadable:
        return False  # front matter cut by the head, refused YAML, a file that cannot be read: no sign of a memory
    return fm.present and _names_a_memory(fm.meta)


def _names_a_memory(meta: dict[str, Any]) -> bool:
    """Front matter as Claude Code writes a memory's: a `name`, a `description` or a `type`."""
    return bool(_str(meta.get("name")) or _str(meta.get("description")) or memory_type(meta))


def _dot_claude_pattern(folder: Path) -> bool:
    """`.claude/agent-memory/<agent>/`, `.claude/projects/<hash>/memory/`, `.claude/memory/`: Claude
    Code's own places, a memory folder even before it has a MEMORY.md (a rebuild creates one) when
    it holds a memory (`_holds_memory`)."""
    parts = folder.parts
    if len(parts) >= 3 and parts[-3] == ".claude" and parts[-2] == "agent-memory":
        return True
    if parts[-1:] == ("memory",) and len(parts) >= 2 and parts[-2] == ".claude":
        return True
    return len(parts) >= 4 and parts[-1] == "memory" and parts[-3] == "projects" and parts[-4] == ".claude"


def _worth_reporting(root: Path, link: Path) -> bool:
    # Any repository has symlinks; only those where Claude Code keeps memory are news.
    parts = link.relative_to(root).parts
    return any(p == ".claude" or "memory" in p.lower() for p in parts)


def discover(root: Path) -> tuple[list[Path], list[Finding]]:
    """Memory folders under `root` (any folder holding a MEMORY.md, and Claude Code's own places
    holding `*.md`), and findings for symlinked folders that could not be followed."""
    findings: list[Finding] = []
    return sorted(_walk_folders(root, findings)), findings


def _walk_folders(root: Path, findings: list[Finding]) -> Iterator[Path]:
    """The memory folders as the walk meets them. Real folders are walked first; a symlinked folder
    is then followed once if it stays inside `root` and leads somewhere not already walked (so a
    store reached both ways is read once, by its real path, and a link to an ancestor cannot loop)."""
    walked: set[Path] = set()
    links: list[Path] = []

    def walk(start: Path) -> Iterator[Path]:
        for dirpath, dirnames, filenames in walk_down(start):
            here = Path(dirpath)
            try:
                real = here.resolve()
            except (OSError, RuntimeError):
                dirnames[:] = []
                continue
            if real in walked:
                dirnames[:] = []
                continue
            walked.add(real)
            linked = {n for n in dirnames if (here / n).is_symlink()}
            links.extend(here / n for n in sorted(linked) if n not in WALK_SKIP)
            links.extend(here / n for n in sorted(filenames) if n not in WALK_SKIP and _dangling(here / n))
            dirnames[:] = sorted(n for n in dirnames if n not in WALK_SKIP and n not in linked)
            if INDEX in filenames and (here / INDEX).is_file() or (_dot_claude_pattern(here) and _holds_memory(root, here)):
                yield here

    yield from walk(root)
    while links:
        link = links.pop(0)
        problem = _link_problem(root, link)
        if problem:
            if _worth_reporting(root, link):
                findings.append(Finding(kind=FindingKind.SYMLINK_SKIPPED, targets=[rel(root, link)], reason=problem))
            continue
        if link.resolve() not in walked:
            yield from walk(link)


def _dangling(path: Path) -> bool:
    return path.is_symlink() and not path.exists()


def _link_problem(root: Path, link: Path) -> str | None:
    if symlink_loop(link):
        return "symlink loop: not followed"
    if not link.exists():
        return f"dangling symlink (to {os.readlink(link)}): not followed"
    if not inside(root, link):
        return "symlink leads outside the store: not followed"
    if not link.is_dir():
        return "symlink to a file, not a folder"
    return None


def memory_folders(root: Path) -> Iterator[Path]:
    """Memory folders under `root`, in sorted order (`discover` without its findings)."""
    yield from discover(root)[0]


def detect(root: Path) -> bool:
    # Lazily: the first folder found is enough (the load walks again, in full).
    return next(_walk_folders(root, []), None) is not None


def configure(root: Path, settings: Settings) -> Settings:
    return settings


# ---------------------------------------------------------------------------------------------
# where each folder's repository and consult log are

TRANSCRIPT_BYTES = 1024 * 1024  # read at most this much of one session transcript
TRANSCRIPT_LINE = 256 * 1024  # a longer line is cut, and its JSON then skipped
MAX_TRANSCRIPTS = 20  # the newest ones: they name the checkout as it is now


def project_of(root: Path, folder: Path) -> Path | None:
    """The folder holding the `.claude/` that this memory folder lives in, if any."""
    for candidate in (folder, *folder.parents):
        if candidate.name == ".claude":
            return candidate.parent
    return None


def _is_home(path: Path) -> bool:
    try:
        return path.resolve() == Path.home().resolve()
    except (OSError, RuntimeError):
        return True  # cannot tell: never take it for a project


# What a folder holding nothing to check memories against may still hold: notes about it.
_NOTE_SUFFIXES = (".md", ".txt", ".rst")


# How many entries `_holds_no_code` looks at before it takes the folder for a project: a real one
# shows a code file long before, and a walk of a big tree is never made for it.
_NO_CODE_LOOK = 2000


def _holds_no_code(project: Path) -> bool:
    """Whether the project folder holds nothing a memory's file refs could name: no git history, and
    under it (hidden folders such as `.claude/` itself aside) no file but notes (a README), however
    deep (`docs/site/.claude/` alone makes no code). A memory folder copied out of its project (a
    backup, a shared folder) would otherwise have every ref of every memory reported missing; a real
    project has code, or at least its history."""
    looked = 0
    folders = [project]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for e in entries:
                    looked += 1
                    if e.name == ".git" or looked > _NO_CODE_LOOK:
                        return False
                    if e.name.startswith("."):
                        continue
                    if e.is_dir(follow_symlinks=False):
                        folders.append(Path(e.path))
                    elif not e.name.lower().endswith(_NOTE_SUFFIXES):
                        return False
        except OSError:
            return False  # cannot tell: checked as before, never skipped on a guess
    return True


def _git_worktree(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists() and not _is_home(candidate):
            return candidate
    return None


def encoded(path: str) -> str:
    """Claude Code's name for a project's folder under `~/.claude/projects/`: its path, every
    character that is not a letter or digit replaced by `-`."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def names_project(cwd: str, folder_name: str) -> bool:
    # Older Claude Code versions replaced only `/` and `.`: either spelling names the project.
    return folder_name in (encoded(cwd), re.sub(r"[/.]", "-", cwd))


def transcript_cwds(project_dir: Path) -> list[str]:
    """The `cwd` the newest session transcripts (`*.jsonl`) beside `memory/` record, first one per
    file, read line by line within a byte bound."""
    try:
        files = [p for p in project_dir.glob("*.jsonl") if p.is_file() and not p.is_symlink()]
    except OSError:
        return []
    files.sort(key=lambda p: (mtime_of(p) or 0.0, p.name), reverse=True)
    found: list[str] = []
    for path in files[:MAX_TRANSCRIPTS]:
        cwd = _first_cwd(path)
        if cwd:
            found.append(cwd)
    return found


def _first_cwd(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            read = 0
            while read < TRANSCRIPT_BYTES:
                raw = fh.readline(TRANSCRIPT_LINE)
                if not raw:
                    return None
                read += len(raw)
                if b'"cwd"' not in raw:
                    continue
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                cwd = record.get("cwd") if isinstance(record, dict) else None
                if isinstance(cwd, str) and cwd:
                    return cwd
    except OSError:
        return None
    return None


def repo_from_transcripts(project_dir: Path) -> tuple[str | None, str]:
    """(repository, why) for a `~/.claude/projects/<encoded-path>/memory/` folder: the recorded cwd
    that exists and that the folder's name encodes; None with the reason otherwise."""
    cwds = transcript_cwds(project_dir)
    if not cwds:
        return None, f"no session transcript (*.jsonl) in {project_dir.name}/ records a cwd"
    for cwd in dict.fromkeys(cwds):
        path = Path(cwd)
        if path.is_absolute() and path.is_dir() and names_project(cwd, project_dir.name):
            return str(path), ""
    shown = ", ".join(list(dict.fromkeys(cwds))[:3])
    return None, f"the cwd the transcripts record ({shown}) does not exist here or is not the project {project_dir.name}"


def repo_of_folder(folder: Path, settings: Settings) -> tuple[str | None, str]:
    """(repository the folder's memories are checked against, why none)."""
    if settings.repo:
        return settings.repo, ""
    project = project_of(folder, folder)
    if project is not None and not _is_home(project):
        if not _holds_no_code(project):
            return str(project), ""
        # Not the repository around it either: a memory folder copied into a workspace or a backups
        # folder would be judged by a history that is not its own (and its memories pruned by it).
        return None, f"no --repo, and {project.name or project} holds nothing but .claude/ and notes (no code, no git history)"
    if folder.name == "memory" and folder.parent.parent.name == "projects":
        # Claude Code's home layout ~/.claude/projects/<encoded-path>/memory/
        repo, why = repo_from_transcripts(folder.parent)
        return repo, (f"no --repo, and {why}" if repo is None else "")
    if project is None:
        found = _git_worktree(folder)
        if found is not None:
            return str(found), ""
        return None, "no --repo, and the folder is in no .claude/ project and no git work tree"
    return None, "no --repo, and the folder is under the home folder, which is not a repository"


def repo_for(project: Path | None, settings: Settings) -> str | None:
    if settings.repo:
        return settings.repo
    if project is None or _is_home(project):
        return None
    return str(project)


# ---------------------------------------------------------------------------------------------
# reading


def _str(value: Any) -> str:
    return str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""


def _lookup(meta: dict[str, Any], key: str) -> Any:
    if meta.get(key) is not None:
        return meta[key]
    nested = meta.get("metadata")
    return nested.get(key) if isinstance(nested, dict) else None


def memory_type(meta: dict[str, Any]) -> str | None:
    value = _str(_lookup(meta, "type")).lower()
    return value or None


def modified_date(meta: dict[str, Any]) -> dt.date | None:
    for key in DATE_KEYS:
        when = as_date(_lookup(meta, key))
        if when is not None:
            return when
    return None


def read_front_matter(root: Path, path: Path, settings: Settings, findings: list[Finding]) -> FrontMatter | None:
    """A topic file's front matter and body, as Claude Code reads them (YAML, else `key: value`
    lines), or None with a parse_error added."""
    key = rel(root, path)
    try:
        data = read_bytes(root, path, settings.max_file_bytes)
        fm, _lenient = split_frontmatter_lenient(decode_text(data))
    except Unreadable as exc:
        findings.append(parse_error(key, str(exc)))
        return None
    fm.sha = hashlib.sha256(data).hexdigest()
    return fm


def read_memory(root: Path, path: Path, folder_key: str, settings: Settings, corpus: Corpus, extra: dict[str, Any]) -> Memory | None:
    key = rel(root, path)
    fm = read_front_matter(root, path, settings, corpus.findings)
    if fm is None:
        return None
    meta = fm.meta
    return Memory(
        key=key,
        layout="claude",
        title=_str(meta.get("name")),
        description=_str(meta.get("description")),
        body=fm.body,
        type=memory_type(meta) if fm.present else None,
        tags=as_tags(_lookup(meta, "tags")),
        created=as_date(_lookup(meta, "created")),
        modified=modified_date(meta),
        mtime=mtime_of(path),
        group=folder_key,
        meta=meta,
        has_frontmatter=fm.present,
        extra=dict(extra),
        read_shas={key: fm.sha},
    )


def _key(folder_key: str, name: str) -> str:
    return name if folder_key == "." else f"{folder_key}/{name}"


def parse_index(text: str, index_key: str, folder_key: str) -> list[IndexEntry]:
    """The entries of a MEMORY.md read alone: its entry lines (repeats kept, notes not: a file listed
    again with words of its own is listed once, `memory_md.listed_again`), then the other sibling
    files it links inline, each once. Code blocks, URLs and other folders are not entries."""
    return _entries_of(memory_md.reach(text, (), lambda name: None), index_key, folder_key)


def _entries_of(found: memory_md.Reach, index_key: str, folder_key: str) -> list[IndexEntry]:
    """`parse_index` of the MEMORY.md `found` is the reach of: each entry line with its own title and hook."""
    out = []
    for line in found.entry_lines:
        title, hook = memory_md.listing(line)
        out.append(IndexEntry(index=index_key, target=_key(folder_key, line.entry or ""), title=title, hook=hook))
    for name in found.inline:
        out.append(IndexEntry(index=index_key, target=_key(folder_key, name)))
    return out


def index_entries(index_key: str, folder_key: str, found: memory_md.Reach) -> list[IndexEntry]:
    """`parse_index` (of the reach the reader made: the index parsed once) plus every file the index
    reaches otherwise (inline code, sub-indexes)."""
    out = _entries_of(found, index_key, folder_key)
    listed = {e.target for e in out}
    for name in found.reached:
        key = _key(folder_key, name)
        if key not in listed:
            out.append(IndexEntry(index=index_key, target=key))  # named in inline code, or via a sub-index
            listed.add(key)
    return out


def _reader_of(root: Path, folder: Path, settings: Settings, shas: dict[str, str]):
    """How `memory_md.reach` looks inside a sibling; the sha256 of each one read goes into `shas`
    (a sub-index's: what the run's edits of it are judged on)."""
    def read(name: str) -> str | None:
        try:
            text, shas[name] = read_text_sha(root, folder / name, settings.max_file_bytes)
        except Unreadable:
            return None
        return text

    return read


def topic_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix == ".md" and p.name != INDEX and (p.is_file() or p.is_symlink()))


def topic_names(folder: Path) -> list[str]:
    """The names of the folder's topic files: what its MEMORY.md should list, whose `listing_state`
    a rebuild is judged on (the writer's `DiskReads` lister)."""
    return [p.name for p in topic_files(folder)]


def load_folder(root: Path, folder: Path, settings: Settings, corpus: Corpus) -> None:
    folder_key = rel(root, folder) or "."
    index_path = folder / INDEX
    index_key = rel(root, index_path)
    project = project_of(root, folder)
    repo, no_repo = repo_of_folder(folder, settings)
    extra: dict[str, Any] = {"repo": repo}
    if repo is None:
        extra["staleness_skipped"] = no_repo
        corpus.findings.append(Finding(kind=FindingKind.STALENESS_SKIPPED, targets=[folder_key], reason=f"staleness not checked: {no_repo}"))
    # The consult hook logs where the session runs: the project, else (home layout) the repository.
    if project is not None and (repo is None or settings.repo or not _is_home(project)):
        extra["consult_log"] = str(project / settings.claude.consult_log)
    elif repo is not None:
        extra["consult_log"] = str(Path(repo) / settings.claude.consult_log)
    try:
        files = topic_files(folder)
    except OSError as exc:
        corpus.findings.append(parse_error(folder_key, f"cannot list folder: {exc.strerror or exc}"))
        return
    present = index_path.is_file()
    text: str | None = None
    digest = ""
    if present:
        try:
            text, digest = read_text_sha(root, index_path, settings.max_file_bytes)
        except Unreadable as exc:
            # An index that cannot be read is reported and left alone, never rebuilt over.
            corpus.findings.append(parse_error(index_key, str(exc)))
    found = None
    read_shas: dict[str, str] = {}
    fence: int | None = None  # the line of a code fence MEMORY.md never closes
    if text is not None:
        found = memory_md.reach(text, [p.name for p in files], _reader_of(root, folder, settings, read_shas))
        fence = memory_md.unclosed_fence(found.lines)
        if fence is not None:
            # Its listings are read (the lines after the fence as text, as Claude Code's reader sees
            # them: no file is taken for unindexed and listed twice), but it is never edited.
            corpus.findings.append(parse_error(index_key, memory_md.unclosed_fence_said(fence)))
        corpus.index_entries.extend(index_entries(index_key, folder_key, found))
        corpus.extra["index_bytes"][index_key] = len(text.encode("utf-8"))
        corpus.index_shas[index_key] = digest  # what a rebuild is judged on (plan.with_target_hashes, index_rebuild.py)
        # A `[[Heading]]` may name one of its sections (dangling_links.py)
        corpus.extra["index_headings"][index_key] = [line.heading[1] for line in found.lines if line.heading and not line.code]
        corpus.extra["index_lines"][index_key] = line_count(text)
        for name, line in found.unclosed.items():
            # a sub-index with a fence never closed is never edited either (index_rebuild._edit_sub_indexes):
            # said in the plan as MEMORY.md's is, not only in the notes of a run that would have struck it
            corpus.findings.append(parse_error(_key(folder_key, name), memory_md.unclosed_fence_said(line)))
        if found.sub_indexes:
            corpus.extra["sub_indexes"][index_key] = [_key(folder_key, n) for n in found.sub_indexes]
            # what the run's edits of them are judged on, as MEMORY.md's (layouts/claude/index_reads.py)
            corpus.index_shas.update((_key(folder_key, n), read_shas[n]) for n in found.sub_indexes if n in read_shas)
        # `[[104-title-as-a-slug]]` may name file 104 by the title its tree index gives it (dangling_links.py)
        corpus.extra["tree_titles"].update({_key(folder_key, n): titles for n, titles in found.titles.items()})
    elif not (index_path.exists() or index_path.is_symlink()):
        corpus.index_shas[index_key] = ABSENT  # what a rebuild creating it is judged on: none written since
    sub = set(found.sub_indexes) if found else set()
    for path in files:
        if path.name in sub:
            continue  # an index, not a memory: never deduplicated, pruned or merged
        memory = read_memory(root, path, folder_key, settings, corpus, extra)
        if memory is not None:
            corpus.memories.append(memory)
    if text is not None and not files and fence is None:  # with one, where its memories end cannot be told
        corpus.memories.extend(index_memories(root, index_path, text, digest, folder_key, extra))
    if text is not None or not present:
        corpus.indexes[index_key] = [rel(root, p) for p in files]
        # which files a rebuild indexes: one added or removed since the plan is a change (index_reads.py)
        corpus.index_shas[listing_key(folder_key)] = listing_state(p.name for p in files)
        corpus.extra["index_present"][index_key] = present
    archived = archived_names(folder)
    if archived:
        corpus.extra.setdefault("archived_names", {})[folder_key] = archived


def _set_aside_aliases(root: Path, corpus: Corpus) -> None:
    """A symlinked topic file that points at another memory of the store (`current.md ->
    project_deploy.md`) is that memory under a second name, not a memory of its own: read as one, it
    was the other's exact duplicate, and a merge could keep the link and archive the file it points
    at. It is set aside (said in a finding) and the memory it points at carries its name
    (`ALIASES`), so what would retire that memory asks first (rules/aliases.py)."""
    links = [m for m in corpus.memories if not is_entry(m.key) and (root / m.key).is_symlink()]
    if not links:
        return
    by_file = {os.path.realpath(root / m.key): m for m in corpus.memories if not is_entry(m.key) and not (root / m.key).is_symlink()}
    points_at = {m.key: target for m in links if (target := by_file.get(os.path.realpath(root / m.key))) is not None}
    if not points_at:
        return
    for alias, target in points_at.items():
        target.extra[ALIASES] = sorted([*target.extra.get(ALIASES, []), alias])
        corpus.findings.append(Finding(kind=FindingKind.SYMLINK_SKIPPED, targets=[alias, target.key],
                                       reason=f"{alias} is a symlink to {target.key}: read once, as {target.key}"))
    corpus.memories = [m for m in corpus.memories if m.key not in points_at]
    # An index listing the alias lists what it points at: not "not indexed", never given a second entry.
    listed = {(e.index, e.target) for e in corpus.index_entries}
    for e in list(corpus.index_entries):
        if e.target in points_at and (e.index, points_at[e.target].key) not in listed:  # listed by both: once
            corpus.index_entries.append(IndexEntry(index=e.index, target=points_at[e.target].key))
            listed.add((e.index, points_at[e.target].key))


def archived_names(folder: Path) -> list[str]:
    """The names of the memory files earlier runs archived in the folder (`.archive/<run-id>/*.md`):
    names only, nothing is read. A numbered folder never gives a new file the number of one of
    them, which an undo of its run would bring back."""
    names: set[str] = set()
    try:
        with os.scandir(folder / ARCHIVE_DIR) as runs:
            run_folders = [run.path for run in runs if run.is_dir(follow_symlinks=False)]
    except OSError:  # no archive yet, or one that cannot be listed: no names to avoid
        return []
    for run in run_folders:
        try:
            with os.scandir(run) as entries:
                names.update(e.name for e in entries if e.name.endswith(".md") and e.is_file(follow_symlinks=False))
        except OSError:  # one run's folder that cannot be listed costs only its own names
            continue
    return sorted(names)


def index_memories(root: Path, index_path: Path, text: str, digest: str, folder_key: str, extra: dict[str, Any]) -> list[Memory]:
    """A MEMORY.md that holds the memories itself: one memory per bullet or paragraph of a section,
    keyed `MEMORY.md#<heading-slug>/<n>`, judged on the bytes of MEMORY.md as read."""
    index_key = rel(root, index_path)
    out = []
    for chunk in memory_md.chunks(text):
        out.append(
            Memory(
                key=f"{index_key}#{chunk.slug}/{chunk.n}",
                layout="claude",
                title=chunk.title,
                body=chunk.text,
                mtime=mtime_of(index_path),
                group=folder_key,
                extra={**extra, "in_index": index_key, "lines": [chunk.start, chunk.end], "section": chunk.heading},
                read_shas={index_key: digest},
            )
        )
    return out


def load(root: Path, settings: Settings) -> Corpus:
    corpus = Corpus(layout="claude", root=str(root))
    corpus.extra.update({"index_present": {}, "index_bytes": {}, "index_headings": {}, "index_lines": {},
                         "sub_indexes": {}, "tree_titles": {}, "memory_folders": []})
    folders, findings = discover(root)
    corpus.findings.extend(findings)
    for folder in folders:
        corpus.extra["memory_folders"].append(str(folder))
        load_folder(root, folder, settings, corpus)
    _set_aside_aliases(root, corpus)
    corpus.memories.sort(key=lambda m: m.key)
    corpus.index_entries.sort(key=lambda e: (e.index, e.target, e.title))
    corpus.findings.sort(key=lambda f: (f.targets, f.reason))
    return corpus
