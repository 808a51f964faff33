"""The I/O half of staleness: scan the repositories once and read the consult logs once.

The claude adapter records, on each memory, which repository it is checked against
(`extra["repo"]`) and which consult log belongs to its project (`extra["consult_log"]`). Other
layouts only have `--repo`: every memory is checked against it and its
`.claude/logs/memory-consult.jsonl`. Everything here is read once per run and handed to the pure
rule as a `StalenessContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config import Settings
from ..model import Corpus, Finding, Memory
from ..layouts.registry import layout_of
from ..storage.files import Unreadable, parse_error, read_text
from .consult_gate import ConsultEntry, parse_consult_log
from .repo_index import RepoIndex, scan_repos
from .staleness_history import GitHistory, read_history

CONTEXT_KEY = "staleness_context"
MAX_LOG_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class StalenessContext:
    repos: dict[str, RepoIndex] = field(default_factory=dict)  # absolute root -> index
    consult: dict[str, list[ConsultEntry]] = field(default_factory=dict)  # absolute log path -> entries
    findings: list[Finding] = field(default_factory=list)
    # absolute root -> its git history; None (or absent) when it is not a git work tree with commits
    history: dict[str, GitHistory | None] = field(default_factory=dict)


def repo_of(m: Memory, settings: Settings) -> str | None:
    return m.extra["repo"] if "repo" in m.extra else settings.repo


def consult_log_of(m: Memory, settings: Settings) -> str | None:
    if "consult_log" in m.extra:
        return m.extra["consult_log"]
    return str(Path(settings.repo) / settings.claude.consult_log) if settings.repo else None


def _display(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def read_consult_log(path: Path, root: Path) -> tuple[list[ConsultEntry], Finding | None]:
    """A consult log's entries; a missing log is an empty one (the gate is then a no-op)."""
    if not path.exists() and not path.is_symlink():
        return [], None
    try:
        text = read_text(path.parent, path, MAX_LOG_BYTES)
    except Unreadable as exc:
        return [], parse_error(_display(path, root), str(exc))
    entries, _skipped = parse_consult_log(text)
    return entries, None


def memory_text_paths(corpus: Corpus, repos: list[str]) -> list[Path]:
    """Where the memories' own text lives: listed in the repository index, never read for symbols."""
    root = Path(corpus.root)
    folders = [Path(p) for p in corpus.extra.get("memory_folders", [])]
    if folders:
        return folders
    paths = [] if any(Path(r).resolve() == root.resolve() for r in repos) else [root]
    layout = layout_of(corpus)
    paths.extend(root / layout.memory_file(m) for m in corpus.memories)
    return sorted(set(paths))


def load_context(corpus: Corpus, settings: Settings) -> StalenessContext:
    root = Path(corpus.root)
    repos = sorted({r for m in corpus.memories if (r := repo_of(m, settings))})
    logs = sorted({log for m in corpus.memories if (log := consult_log_of(m, settings))})
    no_text = memory_text_paths(corpus, repos) + [Path(log) for log in logs]
    indexes = scan_repos(repos, no_text) if repos else {}
    consult: dict[str, list[ConsultEntry]] = {}
    findings: list[Finding] = []
    for log in logs:
        entries, problem = read_consult_log(Path(log), root)
        consult[log] = entries
        if problem is not None:
            findings.append(problem)
    history = {r: read_history(r) for r in repos}  # one read-only `git log` per repository per run
    return StalenessContext(
        repos={r: indexes[str(Path(r).resolve())] for r in repos}, consult=consult, findings=findings, history=history
    )
