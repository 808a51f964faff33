"""What staleness judges against: the repositories' indexes, their git history and the consult logs.

The claude adapter records, on each memory, which repository it is checked against
(`extra["repo"]`) and which consult log belongs to its project (`extra["consult_log"]`). Other
layouts only have `--repo`: every memory is checked against it and its
`.claude/logs/memory-consult.jsonl`. The plan reads all of it once per run
(`pipeline/evidence/context.py`) and hands it to the pure rule as a `StalenessContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config import Settings
from ..model import Finding, Memory
from .consult_gate import ConsultEntry
from .repo_index import RepoIndex
from .staleness_history import GitHistory


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


def consult_log_base(log: str, settings: Settings) -> Path:
    """The folder a consult log is read inside of: the project or repository its configured relative
    path (`claude.consult_log`) was joined to, by the claude reader or `consult_log_of`. A symlink on
    the way (`.claude/` or `.claude/logs/` linked elsewhere) is data on disk: it may not have a file
    outside that folder read as the log. A path the user's own config names outright (absolute, or
    with `..`; a store's own config may name neither) is anchored at its own folder: the user chose
    where it leads."""
    configured = Path(settings.claude.consult_log)
    path = Path(log)
    if configured.is_absolute() or ".." in configured.parts:
        return path.parent
    return path.parents[len(configured.parts) - 1] if configured.parts else path
