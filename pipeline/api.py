"""The library's entry points, re-exported by `pipeline/__init__.py`: the command line is one
caller of these, a script or another tool is another.

They are the workflow's functions under their public names; the wrappers only supply defaults a
caller without a terminal needs (settings, a silent `say`). Behaviour is the command line's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .apply import ApplyResult, Resolution, select_actions
from .apply import apply_plan as _apply_plan
from .config import Settings
from .errors import RunFailed
from .journal import RunRecord, recover, run_views, unfinished_runs
from .lock import store_lock
from .layouts.registry import open_store as _open_store
from .model import Action, Corpus, Plan
from .plan import build_plan
from .workflow import status_store, undo_store

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    """A `say` for callers that want no messages (recovery notes, refused journals)."""


def open_store(path: str | Path, settings: Settings | None = None) -> tuple[Corpus, Settings]:
    """Detect (or check) the store's layout, read its config and load it. Reading never writes."""
    return _open_store(path, settings or Settings())


def apply_plan(
    corpus: Corpus,
    plan: Plan,
    settings: Settings,
    actions: list[Action] | None = None,
    resolve: Resolution | None = None,
    say: Say = _quiet,
) -> ApplyResult:
    """Apply a plan's actions (by default the automatic ones, as `apply --yes`) under the store lock.

    As `apply` does, a run a crash left unfinished is rolled back first; the plan was then built on
    bytes that are no longer there, so nothing is applied (open the store and plan again).
    """
    root = Path(corpus.root)
    chosen = select_actions(plan, None, resolve) if actions is None else actions
    with store_lock(root):
        ours, _ = unfinished_runs(root)
        rolled_back = set(ours) - {v.name for v in run_views(root) if v.empty}
        for message in recover(root):
            say(message)
        if rolled_back:
            raise RunFailed("an interrupted run was rolled back first: open the store and plan again")
        return _apply_plan(root, corpus, plan, settings, chosen, resolve)


def undo(path: str | Path, run_id: str | None = None, say: Say = _quiet) -> RunRecord:
    """Restore the store to before a run (the last one by default), under the store lock."""
    return undo_store(str(path), run_id, say)


def status(path: str | Path, settings: Settings | None = None) -> dict[str, Any]:
    """What `memconsolidate status --json` prints: counts, budgets, last run, pending work."""
    return status_store(str(path), settings or Settings())


__all__ = ["ApplyResult", "Say", "apply_plan", "build_plan", "open_store", "select_actions", "status", "undo"]
