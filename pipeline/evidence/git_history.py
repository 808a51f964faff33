"""Read a repository's git history once per run: one read-only `git log` subprocess per repository
(no optional locks, no pager, no fsmonitor, GIT_* variables that could point it elsewhere removed).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..rules.staleness_history import GitHistory, parse_log

GIT_TIMEOUT_S = 60


def _git_env() -> dict[str, str]:
    # GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE ... from the caller's environment would read another repository.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_PAGER"] = "cat"
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


# A repository's own config must not make a read run a program: no fsmonitor hook, no signature
# check (gpg.program), no external diff or textconv driver.
_GIT = ["git", "--no-pager", "--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "core.quotepath=off",
        "-c", "log.showSignature=false"]


def _git(root: Path, *args: str) -> bytes | None:
    try:
        out = subprocess.run(
            [*_GIT, *args], cwd=str(root), env=_git_env(), capture_output=True, timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git, not a folder, or too slow: no history, so nothing is pruned on its own
    return out.stdout if out.returncode == 0 else None


def _outside_every_work_tree(root: Path) -> bool:
    """True when neither `root` nor any folder above it holds a `.git`: git, which looks for its
    repository from there upwards (the GIT_* variables that could point elsewhere are removed),
    would find none and give no history, so no process is started to ask it. A store outside git
    (a temporary copy, most stores in a home folder) costs no subprocess."""
    try:
        here = root.resolve()  # git walks up the physical path of its working folder
    except (OSError, RuntimeError):
        return False  # let git decide
    return not any(os.path.lexists(folder / ".git") for folder in (here, *here.parents))


def read_history(root: str | Path) -> GitHistory | None:
    """The history of the git work tree whose top level is `root`, or None without one.

    A folder nested inside some bigger work tree (a fixture or vendored copy inside another project)
    is not judged by that outer project's history: its files were never that project's to rename.
    """
    root = Path(root)
    if _outside_every_work_tree(root):
        return None
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None:
        return None
    try:
        if Path(top.decode("utf-8", "surrogateescape").strip()).resolve() != root.resolve():
            return None
    except (OSError, RuntimeError):
        return None
    raw = _git(root, "log", "-z", "--name-status", "-M", "--no-ext-diff", "--no-textconv", "--format=%x01%H", "HEAD", "--")
    return parse_log(raw) if raw is not None else None
