"""`claude` layout: Claude Code auto-memory folders (dream, seed 001).

A memory folder holds a `MEMORY.md` index and sibling topic files (`*.md`) with front matter `name`,
`description`, `type` (user, feedback, project, reference). Folders are found at any depth under
PATH: `.claude/agent-memory/<agent>/`, `.claude/projects/<hash>/memory/`, `.claude/memory/`, and
PATH itself when it holds a MEMORY.md.

Real folders (orchestkit) mix a top-level `type:` with a nested `metadata: {type: ...}`, often have
no front matter at all (type None: dream treats those as EVERGREEN), and their MEMORY.md mixes
index lines with free prose. Only `- [Title](file.md) — hook` lines (also `--`, `-`, `:` or no
hook) are index entries; prose naming a file is not.

Staleness is checked against the repository that holds the folder's `.claude/` (or `--repo`); the
scan itself happens once, lazily, in `rules.staleness_context`.
"""

from __future__ import annotations

import datetime as dt
import os
import posixpath
import re
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote

from ...config import Settings
from ...model import Corpus, IndexEntry, Memory
from ...storage.files import SKIP_DIRS, Unreadable, as_date, as_tags, mtime_of, parse_error, read_memory_file, read_text, rel

LAYOUT = "claude"
INDEX = "MEMORY.md"
WALK_SKIP = SKIP_DIRS | {".archive"}
DATE_KEYS = ("modified", "updated", "last_updated", "date")

_ENTRY = re.compile(
    r"^\s*(?:[-*+]|\d+[.)])\s+\[(?P<title>(?:[^\[\]]|\[[^\]]*\])*)\]\((?P<href>[^()\s]+)(?:\s+\"[^\"]*\")?\)"
    r"\s*(?:(?:—|–|--|-|:)\s*)?(?P<hook>.*)$"  # greedy, stripped in code: `.*?\s*$` is quadratic in blanks
)
_FENCE = re.compile(r"^\s*(```|~~~)")


# ---------------------------------------------------------------------------------------------
# discovery


def _has_md(folder: Path) -> bool:
    try:
        return any(p.suffix == ".md" and p.is_file() for p in folder.iterdir())
    except OSError:
        return False


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and p.name not in WALK_SKIP)
    except OSError:
        return []


def _folders_in_dot_claude(dot_claude: Path) -> Iterator[Path]:
    for agent in _subdirs(dot_claude / "agent-memory"):
        yield agent
    for project in _subdirs(dot_claude / "projects"):
        yield project / "memory"
    yield dot_claude / "memory"


def memory_folders(root: Path) -> Iterator[Path]:
    """Memory folders under `root`, in sorted order; symlinked folders are not followed."""
    if (root / INDEX).is_file():
        yield root
    if root.name == ".claude":
        # PATH is a project's .claude folder itself.
        for folder in _folders_in_dot_claude(root):
            if folder.is_dir() and not folder.is_symlink() and _has_md(folder):
                yield folder
        return
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in WALK_SKIP)
        if ".claude" in dirnames:
            dot_claude = Path(dirpath) / ".claude"
            if not dot_claude.is_symlink():
                for folder in _folders_in_dot_claude(dot_claude):
                    if folder != root and folder.is_dir() and not folder.is_symlink() and _has_md(folder):
                        yield folder
            # Nothing else inside .claude is a memory folder; its other contents can be large.
            dirnames.remove(".claude")


def detect(root: Path) -> bool:
    return next(memory_folders(root), None) is not None


def configure(root: Path, settings: Settings) -> Settings:
    return settings


# ---------------------------------------------------------------------------------------------
# where each folder's repository and consult log are


def project_of(root: Path, folder: Path) -> Path | None:
    """The folder holding the `.claude/` that this memory folder lives in, if any."""
    for candidate in (folder, *folder.parents):
        if candidate.name == ".claude":
            return candidate.parent
    return None


def repo_for(project: Path | None, settings: Settings) -> str | None:
    if settings.repo:
        return settings.repo
    if project is None:
        return None
    try:
        if project.resolve() == Path.home().resolve():
            # ~/.claude/projects/<hash>/memory: the home folder is not the project's repository.
            return None
    except (OSError, RuntimeError):
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


def read_memory(root: Path, path: Path, folder_key: str, settings: Settings, corpus: Corpus, extra: dict[str, Any]) -> Memory | None:
    key = rel(root, path)
    fm = read_memory_file(root, path, settings.max_file_bytes, corpus.findings)
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


def parse_index(text: str, index_key: str, folder_key: str) -> list[IndexEntry]:
    """The `- [Title](file.md) — hook` lines of a MEMORY.md; prose, URLs and code blocks are not entries."""
    entries: list[IndexEntry] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = _ENTRY.match(line)
        if not m:
            continue
        href = unquote(m.group("href").split("#", 1)[0])
        if not href.endswith(".md") or re.match(r"^[a-z][a-z0-9+.-]*:", href, re.IGNORECASE) or href.startswith("/"):
            continue
        base = "" if folder_key == "." else folder_key
        target = posixpath.normpath(posixpath.join(base, href)) if base else posixpath.normpath(href)
        entries.append(IndexEntry(index=index_key, target=target, title=m.group("title").strip(), hook=m.group("hook").rstrip()))
    return entries


def load_folder(root: Path, folder: Path, settings: Settings, corpus: Corpus) -> None:
    folder_key = rel(root, folder) or "."
    index_path = folder / INDEX
    index_key = rel(root, index_path)
    project = project_of(root, folder)
    extra: dict[str, Any] = {"repo": repo_for(project, settings)}
    if project is not None:
        extra["consult_log"] = str(project / settings.claude.consult_log)
    try:
        topic_files = sorted(p for p in folder.iterdir() if p.suffix == ".md" and p.name != INDEX and (p.is_file() or p.is_symlink()))
    except OSError as exc:
        corpus.findings.append(parse_error(folder_key, f"cannot list folder: {exc.strerror or exc}"))
        return
    for path in topic_files:
        memory = read_memory(root, path, folder_key, settings, corpus, extra)
        if memory is not None:
            corpus.memories.append(memory)
    present = index_path.is_file()
    index_ok = True
    if present:
        try:
            text = read_text(root, index_path, settings.max_file_bytes)
            corpus.index_entries.extend(parse_index(text, index_key, folder_key))
            corpus.extra["index_bytes"][index_key] = len(text.encode("utf-8"))
        except Unreadable as exc:
            # An index that cannot be read is reported and left alone, never rebuilt over.
            corpus.findings.append(parse_error(index_key, str(exc)))
            index_ok = False
    if index_ok:
        corpus.indexes[index_key] = [rel(root, p) for p in topic_files]
        corpus.extra["index_present"][index_key] = present


def load(root: Path, settings: Settings) -> Corpus:
    corpus = Corpus(layout="claude", root=str(root))
    corpus.extra.update({"index_present": {}, "index_bytes": {}, "memory_folders": []})
    for folder in memory_folders(root):
        corpus.extra["memory_folders"].append(str(folder))
        load_folder(root, folder, settings, corpus)
    corpus.memories.sort(key=lambda m: m.key)
    corpus.index_entries.sort(key=lambda e: (e.index, e.target, e.title))
    corpus.findings.sort(key=lambda f: (f.targets, f.reason))
    return corpus
