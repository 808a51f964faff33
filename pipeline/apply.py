"""Execute a plan: choose the actions, let the layout's writer turn them into file operations, and
run those as one journaled transaction (`journal.py`). Nothing is deleted: retired memories move to
an archive or get `superseded_by`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .kinds import is_automatic
from .changes import ChangeSet
from .config import Settings
from .errors import UsageError
from .journal import RunRecord, execute, new_run_id
from .layouts.registry import layout_of
from .model import Action, Corpus, Plan

Resolution = Literal["newer", "keep-both"]


@dataclass
class ApplyResult:
    run_id: str
    record: RunRecord | None
    changes: ChangeSet


def select_actions(plan: Plan, select: list[str] | None, resolve: Resolution | None) -> list[Action]:
    """Actions to execute: every automatic one, or those chosen by kind or 1-based number.

    Conflicts are executed only under an explicit resolution policy; other actions that need the
    user only when chosen explicitly with --select.
    """
    chosen: list[Action] = []
    wanted_kinds: set[str] = set()
    wanted_numbers: set[int] = set()
    for item in select or []:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            if part.isdigit():
                n = int(part)
                if not 1 <= n <= len(plan.actions):
                    raise UsageError(f"--select {n}: the plan has {len(plan.actions)} actions")
                wanted_numbers.add(n)
            else:
                wanted_kinds.add(part)
    for n, action in enumerate(plan.actions, start=1):
        explicit = n in wanted_numbers or action.kind in wanted_kinds
        if select and not explicit:
            continue
        if not is_automatic(action.kind):
            if resolve is not None:
                chosen.append(action)
        elif not action.needs_user or explicit:
            chosen.append(action)
    return chosen


def apply_plan(
    root: Path, corpus: Corpus, plan: Plan, settings: Settings, actions: list[Action], resolve: Resolution | None
) -> ApplyResult:
    run_id = new_run_id()
    changes: ChangeSet = layout_of(corpus).changes(corpus, actions, settings, run_id, resolve, plan.findings)
    if not changes.ops:
        return ApplyResult(run_id=run_id, record=None, changes=changes)
    info = {
        "layout": corpus.layout,
        "now": settings.now.isoformat(),
        "model": settings.llm.model,
        "applied": [a.kind for a in changes.applied],
        "skipped": len(changes.skipped),
    }
    record = execute(root, changes.ops, run_id=run_id, info=info)
    return ApplyResult(run_id=run_id, record=record, changes=changes)
