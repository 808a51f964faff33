"""Read what staleness judges against, once per run: the repositories (one walk each), their git
history (one `git log` each) and the consult logs. The plan calls `load_context` before the rules;
the rules only see the `StalenessContext` it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..config import Settings
from ..model import Corpus, Finding, Memory
from ..rules.consult_gate import ConsultEntry, parse_consult_log
from ..rules.staleness_context import StalenessContext, consult_log_base, consult_log_of, repo_of
from ..storage.files import Unreadable, parse_error, read_text
from .git_history import read_history
from .repo_scan import scan_repos

MAX_LOG_BYTES = 64 * 1024 * 1024


def _display(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def read_consult_log(path: Path, root: Path, base: Path) -> tuple[list[ConsultEntry], Finding | None]:
    """A consult log's entries; a missing log is an empty one (the gate is then a no-op). Read only
    inside `base` (`consult_log_base`) and out of its state folder, as a regular file within the cap:
    else it is a parse_error and nothing of it is read, so what it names keeps no memory from a prune.
    Nothing ever writes to it."""
    if not path.exists() and not path.is_symlink():
        return [], None
    try:
        text = read_text(base, path, MAX_LOG_BYTES)
    except Unreadable as exc:
        return [], parse_error(_display(path, root), f"consult log not read: {exc}")
    entries, _skipped = parse_consult_log(text)
    return entries, None


def memory_text_paths(corpus: Corpus, repos: list[str], memory_file: Callable[[Memory], str]) -> list[Path]:
    """Where the memories' own text lives: listed in the repository index, never read for symbols."""
    root = Path(corpus.root)
    folders = [Path(p) for p in corpus.extra.get("memory_folders", [])]
    if folders:
        return folders
    paths = [] if any(Path(r).resolve() == root.resolve() for r in repos) else [root]
    paths.extend(root / memory_file(m) for m in corpus.memories)
    return sorted(set(paths))


def load_context(corpus: Corpus, settings: Settings, memory_file: Callable[[Memory], str]) -> StalenessContext:
    """Everything staleness needs from outside the store, read once. `memory_file`: the layout's
    relative path of a memory's file (its text is listed in the index but never read for symbols)."""
    root = Path(corpus.root)
    repos = sorted({r for m in corpus.memories if (r := repo_of(m, settings))})
    logs = sorted({log for m in corpus.memories if (log := consult_log_of(m, settings))})
    no_text = memory_text_paths(corpus, repos, memory_file) + [Path(log) for log in logs]
    indexes = scan_repos(repos, no_text) if repos else {}
    consult: dict[str, list[ConsultEntry]] = {}
    findings: list[Finding] = []
    for log in logs:
        entries, problem = read_consult_log(Path(log), root, consult_log_base(log, settings))
        consult[log] = entries
        if problem is not None:
            findings.append(problem)
    history = {r: read_history(r) for r in repos}  # one read-only `git log` per repository per run
    return StalenessContext(
        repos={r: indexes[str(Path(r).resolve())] for r in repos}, consult=consult, findings=findings, history=history
    )
