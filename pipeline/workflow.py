"""The commands' bodies, without the command line: plan, apply, undo, status, run.

Every command that may change a store takes the store lock and first rolls back a run a crash left
unfinished; `status` only reports one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .kinds import FindingKind
from .apply import ApplyResult, Resolution, apply_plan, as_reviewed, select_actions
from .config import Settings
from .errors import RunFailed, os_reason
from .journal import committed_runs, recover, run_views, unfinished_runs, write_atomic
from .lock import run_in_progress, state_dir, store_lock
from .config import STATE_DIR
from .model import Action, Corpus, Plan
from .plan import build_plan
from .layouts.registry import get, open_store, resolve_root
from .stages.base import StageProgress
from .storage.files import Unreadable, read_own
from .storage.gc_pause import reading_for_a_plan
from .storage.since_plan import DiskReads

Say = Callable[[str], None]
Progress = Callable[[StageProgress], None]  # hears the LLM stages' progress (a bar at a terminal)


def recover_store(root: Path, say: Say) -> None:
    """For `plan`: roll back an interrupted run of ours, under the lock, if there is one. A journal
    that is not ours is only reported: `plan` never acts on it, and goes on read-only."""
    ours, refused = unfinished_runs(root)
    for view in refused:
        say(view.refusal())
    holder = run_in_progress(root)
    if holder is not None and ours:
        # A run holding the lock is live, not interrupted: nothing to recover, nothing to wait for.
        say(f"a run (pid {holder}) is working on the store: this plan reads it as that run has left it so far")
        return
    empty = {v.name for v in run_views(root) if v.empty}
    for name in sorted(empty & set(ours)):
        # read-only: a folder interrupted before its journal is left for a command that writes
        say(f"run {name} was interrupted before any change; the next command that writes discards it")
    if not set(ours) - empty:
        return
    with store_lock(root):
        for message in recover(root, strict=False, discard=False):
            say(message)


def _read_and_plan(root: Path, settings: Settings, progress: Progress | None = None) -> tuple[Corpus, Settings, Plan]:
    """Read the store and plan it, in the window that lets its reader freeze what it builds."""
    from .stages import stage_runner

    with reading_for_a_plan():
        corpus, settings = open_store(root, settings)
        return corpus, settings, build_plan(corpus, settings, stage_runner(settings, progress=progress))


def plan_store(path: str, settings: Settings, say: Say, progress: Progress | None = None) -> tuple[Corpus, Settings, Plan]:
    root = resolve_root(path)
    recover_store(root, say)
    return _read_and_plan(root, settings, progress)


def apply_store(
    path: str,
    settings: Settings,
    say: Say,
    select: list[str] | None,
    resolve: Resolution | None,
    confirm: Callable[[Plan, list[Action]], bool],
    progress: Progress | None = None,
) -> tuple[Plan, ApplyResult | None]:
    root = resolve_root(path)
    with store_lock(root):
        for message in recover(root):
            say(message)
        corpus, settings, plan = _read_and_plan(root, settings, progress)
        # A pinned rotation of the live session log the agent appended to since stays the reviewed one.
        plan = as_reviewed(plan, select, resolve, DiskReads(root, settings.max_file_bytes).bytes)
        actions = select_actions(plan, select, resolve)
        if not actions:
            return plan, None
        if not confirm(plan, actions):  # the actions it is about to apply, for the prompt to list
            raise RunFailed("not applied: declined at the prompt")
        result = apply_plan(root, corpus, plan, settings, actions, resolve)
        prune_after_apply(root, settings, result, say)
        return plan, result


def undo_store(path: str, run_id: str | None, say: Say):
    from .journal import undo

    root = resolve_root(path)
    with store_lock(root):
        for message in recover(root):
            say(message)
        return undo(root, run_id)


def prune_after_apply(root: Path, settings: Settings, result: ApplyResult | None, say: Say) -> None:
    """Journal retention, after an apply that committed: the newest `journal.keep_runs` runs stay."""
    from .journal import prune_runs

    if result is None or result.record is None:
        return
    try:
        prune_runs(root, settings.journal.keep_runs)
    except OSError as exc:  # the run is applied and committed: an old folder left is only untidy
        say(f"warning: could not prune old runs: {os_reason(exc, root)}")


# --- the nightly run --------------------------------------------------------------------------

STATE_FILE = "state.json"
STATE_MAX_BYTES = 64 << 10  # what a run records is a few hundred bytes


def read_state(root: Path, note: Say | None = None) -> dict[str, Any]:
    """The last nightly run the store's state.json records; {} for none. The file is data: read only
    as a regular file of the state folder within the cap, never through a symlink (of the file or
    of the folder); one that cannot be taken so (a FIFO, a device, too large, not a JSON object)
    counts as no run recorded, and `note` hears why."""
    try:
        data = json.loads(read_own(root / STATE_DIR / STATE_FILE, STATE_MAX_BYTES, folder_too=True))
    except FileNotFoundError:
        return {}
    except Unreadable as exc:
        why = str(exc)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the stack
        why = "not JSON"
    else:
        if isinstance(data, dict):
            return data
        why = f"a JSON {type(data).__name__}, not an object"
    if note is not None:
        note(f"{STATE_DIR}/{STATE_FILE} taken as no run recorded: {why}")
    return {}


def is_due(state: dict[str, Any], settings: Settings, wall: dt.datetime) -> tuple[bool, str]:
    last = state.get("last_success")
    if not last:
        return True, "no successful run recorded"
    try:
        last_at = dt.datetime.fromisoformat(last)
    except (TypeError, ValueError):  # TypeError: not a string at all
        return True, "last run time unreadable"
    if last_at.tzinfo is None:
        last_at = last_at.replace(tzinfo=dt.timezone.utc)  # comparing naive with aware would raise
    if last_at > wall:
        # a clock that was once wrong must not silence the nightly run until that date comes
        return True, f"last successful run {last_at.isoformat(timespec='minutes')} is in the future"
    due_at = last_at + settings.schedule.wait()
    if wall >= due_at:
        return True, f"last successful run {last_at.isoformat(timespec='minutes')}"
    return False, f"not due: last successful run {last_at.isoformat(timespec='minutes')}, next after {due_at.isoformat(timespec='minutes')}"


@dataclass
class RunOutcome:
    ran: bool
    reason: str
    plan: Plan | None = None
    result: ApplyResult | None = None
    recorded: bool = False
    applied_unrecorded: bool = False  # complete and applied, but state.json could not be written


def run_store(
    path: str,
    settings: Settings,
    say: Say,
    if_due: bool,
    wall: dt.datetime | None = None,
    progress: Progress | None = None,
    before_apply: Callable[[Plan], None] | None = None,
) -> RunOutcome:
    """Plan and apply every automatic action, non-interactively; record success only if complete.

    `before_apply` sees the finished plan first; if it raises, nothing is applied or recorded (a
    fleet whose shared budget ran out during this plan)."""
    from .stages import stage_runner

    root = resolve_root(path)
    wall = wall or dt.datetime.now(dt.timezone.utc)
    with store_lock(root):
        for message in recover(root):
            say(message)
        with reading_for_a_plan():
            corpus, settings = open_store(root, settings)
            if if_due:
                due, why = is_due(read_state(root, say), settings, wall)
                if not due:
                    return RunOutcome(ran=False, reason=why)
            plan = build_plan(corpus, settings, stage_runner(settings, progress=progress))
        if before_apply is not None:
            before_apply(plan)
        actions = select_actions(plan, None, None)
        result = apply_plan(root, corpus, plan, settings, actions, None) if actions else None
        prune_after_apply(root, settings, result, say)
        complete = not plan.errors
        if complete:
            state = {
                "last_success": wall.isoformat(timespec="seconds"),
                "run_id": result.run_id if result else None,
                "report": _report_path(corpus.layout, result),
                "actions_applied": len(result.changes.applied) if result else 0,
            }
            try:
                write_atomic(state_dir(root) / STATE_FILE, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode(), mode=0o600, root=root)
            except OSError as exc:
                # The run is committed and applied: failing it now would read as "nothing happened".
                # Unrecorded only means the next `run --if-due` plans again, which is harmless.
                say(f"warning: the run was applied but could not be recorded as the last run: {os_reason(exc, root)}")
                return RunOutcome(ran=True, reason="ran", plan=plan, result=result, recorded=False, applied_unrecorded=True)
        return RunOutcome(ran=True, reason="ran", plan=plan, result=result, recorded=complete)


def _report_path(layout: str, result: ApplyResult | None) -> str | None:
    if not result or not result.record:
        return None
    return get(layout).run_report(sorted(p for p in result.record.touched if p.endswith(".md")))


# --- status -----------------------------------------------------------------------------------


def status_store(path: str, settings: Settings, progress: Progress | None = None) -> dict[str, Any]:
    """What `status` shows. Pending actions are counted from a plan with the same model `plan`
    uses (`--model none`: the rules alone), so the two commands agree."""
    from .history import run_history, state_size

    root = resolve_root(path)
    unfinished, refused = unfinished_runs(root)
    corpus, settings, plan = _read_and_plan(root, settings, progress)
    by_type = Counter(m.type or "untyped" for m in corpus.memories)
    budgets = [f.model_dump(by_alias=True, exclude_none=True) for f in plan.findings if f.kind in (FindingKind.OVER_BUDGET, FindingKind.NEAR_BUDGET)]
    runs = committed_runs(root)
    notes: list[str] = []
    state = read_state(root, notes.append)
    return {
        "layout": corpus.layout,
        "root": str(root),
        "memories": len(corpus.memories),
        "by_type": dict(sorted(by_type.items())),
        "budgets": budgets,
        "last_run": state or None,
        "applied_runs": [r.run_id for r in runs if "undo_of" not in r.info][-5:],
        "pending_actions": dict(sorted(Counter(a.kind for a in plan.actions if not a.needs_user).items())),
        "needs_user": dict(sorted(Counter(a.kind for a in plan.actions if a.needs_user).items())),
        "findings": dict(sorted(Counter(f.kind for f in plan.findings).items())),
        "unfinished_journal": unfinished,
        "foreign_journal": [{"run": v.name, "why": v.problem} for v in refused],
        "run_in_progress": run_in_progress(root),
        "model": settings.llm.model,
        "llm_errors": [e.model_dump(mode="json") for e in plan.errors],
        "runs": [e.to_json() for e in run_history(root)],
        "state_bytes": state_size(root),
        "notes": notes,
    }
