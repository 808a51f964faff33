"""Execute a plan: choose the actions, let the layout's writer turn them into file operations, and
run those as one journaled transaction (`journal.py`). Nothing is deleted: retired memories move to
an archive or get `superseded_by`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .kinds import ActionKind, is_automatic
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


_KIND_NAMES = [k.value for k in ActionKind]


def parse_select(select: list[str] | None, resolve: Resolution | None) -> tuple[set[int], set[str]]:
    """The numbers and kinds `--select` names, checked before anything is planned: an unknown kind,
    or conflicts without a resolution policy, is a usage error naming the choices."""
    numbers: set[int] = set()
    kinds: set[str] = set()
    for item in select or []:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            if part.isdigit():
                numbers.add(int(part))
            elif part in _KIND_NAMES:
                kinds.add(part)
            else:
                raise UsageError(f"--select {part}: not an action number or kind (kinds: {', '.join(_KIND_NAMES)})")
    if ActionKind.CONFLICT in kinds and resolve is None:
        raise UsageError("--select conflict: conflicts are applied only with --resolve newer or --resolve keep-both")
    return numbers, kinds


def select_actions(plan: Plan, select: list[str] | None, resolve: Resolution | None) -> list[Action]:
    """Actions to execute: every automatic one, or those chosen by kind or 1-based number.

    Conflicts are executed only under an explicit resolution policy; other actions that need the
    user only when chosen explicitly with --select.
    """
    wanted_numbers, wanted_kinds = parse_select(select, resolve)
    in_plan = sorted({a.kind for a in plan.actions})
    for n in sorted(wanted_numbers):
        if not 1 <= n <= len(plan.actions):
            choices = f"1-{len(plan.actions)}" if plan.actions else "none"
            raise UsageError(f"--select {n}: the plan has {len(plan.actions)} actions (numbers: {choices}; kinds: {', '.join(in_plan) or 'none'})")
        if plan.actions[n - 1].kind == ActionKind.CONFLICT and resolve is None:
            raise UsageError(f"--select {n}: action {n} is a conflict, applied only with --resolve newer or --resolve keep-both")
    chosen: list[Action] = []
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
    run_id = new_run_id(root)
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
