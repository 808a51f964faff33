"""The per-store task: what one store of a fleet runs, in whichever worker an engine gives it.

It makes the store's Settings as the single-store command does (`cli_options.make_settings`: the
options, then `--config` or the store's own `.memconsolidate.toml`) and calls the same functions
(`plan_store`, `apply_store`, `run_store`), so a store planned in a fleet gets the plan bytes,
lock, journal and undo it would get alone. It never raises: every outcome, a crash of the store's code
included, becomes one record (a JSON line of the report). Only a worker process dying is left to
the engine (`crashed`), and a store still running at the fleet's `--store-timeout` (`timed_out_record`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from ..cli_options import Options
from ..config import Settings
from ..errors import MemconsolidateError, RunFailed, UsageError, os_reason
from ..llm.meter import installed
from ..model import Action, Plan
from .budget import Budget, WorkerMeter

if TYPE_CHECKING:
    from .plans import Reviewed

Command = Literal["plan", "apply", "run"]

# ok: done as the single-store command would succeed; not_due: `run --if-due` had nothing to do;
# budget_exhausted: the fleet's budget ran out while planning it, so nothing was applied (nor, for
# `plan`, written); failed: the single-store command would have exited non-zero, or the store ran
# past --store-timeout (`timed_out: true`); crashed: its worker died.
STATUSES = ("ok", "not_due", "budget_exhausted", "failed", "crashed")
FAILING = frozenset({"budget_exhausted", "failed", "crashed"})


@dataclass(frozen=True)
class TaskSpec:
    """Everything a worker needs besides the path (picklable: it crosses process boundaries)."""

    command: Command
    options: Options  # the shared options; --layout, --repo, --max-calls, --max-cost at their defaults
    if_due: bool = False
    select: tuple[str, ...] | None = None
    resolve: str | None = None
    plans_dir: str | None = None


class _BudgetStop(MemconsolidateError):
    """The shared budget refused a request of this store's plan: stop before anything is applied."""


Task = Callable[[str, TaskSpec, "Budget | None"], dict[str, Any]]


def new_record(path: str) -> dict[str, Any]:
    return {"path": path, "layout": None, "status": "failed", "counts": {}, "errors": [], "run_id": None}


def crashed_record(path: str, why: str) -> dict[str, Any]:
    record = new_record(path)
    record.update(status="crashed", errors=[why])
    return record


def timed_out_record(path: str, seconds: float) -> dict[str, Any]:
    """A store still running `seconds` after its worker started on it: the engine killed that worker,
    as a crash would end it (a store killed mid-apply is recovered by its journal on its next run).
    `timed_out` tells a resumed `fleet run --if-due` to try it again (resume.py): unlike a failure of
    the store's own, a stalled mount may answer on the next attempt."""
    record = new_record(path)
    record.update(errors=[f"timed out after {seconds:g} s (--store-timeout): its worker was stopped"], timed_out=True)
    return record


def run_task(path: str, spec: TaskSpec, budget: Budget | None = None) -> dict[str, Any]:
    """Run `spec.command` on the store at `path`; the record of what happened."""
    record = new_record(path)
    notes: list[str] = []
    meter = WorkerMeter(budget) if budget is not None else None
    try:
        from ..layouts.registry import detect_layout, resolve_root

        from ..cli_options import make_settings

        record["layout"] = detect_layout(resolve_root(path))
        settings, _ = make_settings(spec.options, path)
        with installed(meter):
            _COMMANDS[spec.command](path, spec, settings, meter, record, notes.append)
    except _BudgetStop:
        _budget_exhausted(record, meter)
    except (UsageError, RunFailed) as exc:
        _failed(record, str(exc))
    except OSError as exc:
        _failed(record, f"cannot complete: {os_reason(exc)}")
    except RecursionError:
        _failed(record, "internal error: RecursionError")
    except Exception as exc:  # noqa: BLE001 - one store's bug must not end the fleet
        _failed(record, f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
    if meter is not None and meter.refused and record["status"] == "ok":
        _budget_exhausted(record, meter)  # refused although the plan had nothing to apply
    if notes:
        record["notes"] = notes
    return record


def _failed(record: dict[str, Any], message: str) -> None:
    record["status"] = "failed"
    record["errors"].append(message)


def _budget_exhausted(record: dict[str, Any], meter: WorkerMeter | None) -> None:
    record["status"] = "budget_exhausted"
    record["run_id"] = None
    reason = meter.refused if meter is not None and meter.refused else "fleet budget reached"
    if reason not in record["errors"]:
        record["errors"].append(reason)


def _check_budget(meter: WorkerMeter | None, record: dict[str, Any]) -> Callable[[Plan], None]:
    """What runs once a store's plan is made, before anything of it is applied or written: a store
    the budget refused a request stops there, its plan's counts and spend recorded (what it spent
    counts against the budget of a resumed fleet run)."""

    def check(plan: Plan) -> None:
        if meter is not None and meter.refused:
            _plan_counts(record, plan)
            raise _BudgetStop()

    return check


def _plan_counts(record: dict[str, Any], plan: Plan) -> None:
    record["layout"] = plan.layout
    record["counts"].update(
        memories=plan.memories,
        actions=len(plan.actions),
        automatic=sum(1 for a in plan.actions if not a.needs_user),
        findings=len(plan.findings),
    )
    record["errors"].extend(f"{e.stage}: {e.message}" for e in plan.errors)
    record["llm"] = {"calls": plan.stats.llm_calls, "cache_hits": plan.stats.cache_hits, "cost_usd": plan.stats.cost_usd}


def _apply_counts(record: dict[str, Any], result: Any) -> None:
    record["counts"].update(
        applied=len(result.changes.applied) if result else 0,
        skipped=len(result.changes.skipped) if result else 0,
        changed=len(result.record.touched) if result and result.record else 0,
    )
    record["run_id"] = result.run_id if result and result.record else None


def _do_plan(path: str, spec: TaskSpec, settings: Settings, meter: WorkerMeter | None, record: dict[str, Any], say: Callable[[str], None]) -> None:
    from ..workflow import plan_store

    from .plans import write_plan

    _, _, plan = plan_store(path, settings, say)
    _check_budget(meter, record)(plan)
    _plan_counts(record, plan)
    if spec.plans_dir is not None:
        record["plan_file"] = str(write_plan(Path(spec.plans_dir), path, plan))
    record["status"] = "ok"


def _do_apply(path: str, spec: TaskSpec, settings: Settings, meter: WorkerMeter | None, record: dict[str, Any], say: Callable[[str], None]) -> None:
    from ..apply import PinsChanged
    from ..workflow import apply_store
    from .plans import NotAsReviewed

    check = _check_budget(meter, record)
    select = list(spec.select) if spec.select else None
    reviewed: Reviewed | None = None
    pinned: dict[int, Action] = {}
    if spec.plans_dir is not None:
        reviewed, pinned = _reviewed_pins(path, spec, record)
        if not pinned:  # an empty --select would be every automatic action: the store is not even read
            record["counts"].update(applied=0, skipped=0, changed=0)
            record.update(status="ok", reason="its reviewed plan applies nothing")
            return
        # the single-store pinning: the fresh plan must hold each at its number, or nothing is applied
        select = [f"{n}={action.fingerprint()}" for n, action in pinned.items()]

    def confirm(plan: Plan, actions: list[Action]) -> bool:  # the fleet's "prompt": --yes was required to start
        check(plan)
        if reviewed is not None:
            reviewed.check_unchanged(pinned, plan, actions)
        return True

    try:
        plan, result = apply_store(path, settings, say, select, spec.resolve, confirm)  # type: ignore[arg-type]
    except PinsChanged as exc:
        if reviewed is None:
            raise
        # the fleet pinned the numbers, not the user: said of the review, not of a --select
        raise NotAsReviewed(f"reviewed plan {reviewed.file.name}: the store changed since the review ({exc.what}); "
                            "nothing was applied: run `fleet plan --plans-dir` again and review it") from None
    _plan_counts(record, plan)
    _apply_counts(record, result)
    record["status"] = "ok"


def _reviewed_pins(path: str, spec: TaskSpec, record: dict[str, Any]) -> tuple[Reviewed, dict[int, Action]]:
    """`fleet apply --plans-dir`: the store's saved plan, read and checked before the store is
    locked or written, and the actions of it that apply would have applied, by number."""
    from ..layouts.registry import resolve_root
    from .plans import plan_file_name, read_reviewed

    assert spec.plans_dir is not None
    folder = Path(spec.plans_dir)
    record["plan_file"] = str(folder / plan_file_name(path))
    reviewed = read_reviewed(folder, path, resolve_root(path), str(record["layout"]))
    return reviewed, reviewed.pins(list(spec.select) if spec.select else None, spec.resolve)  # type: ignore[arg-type]


def _do_run(path: str, spec: TaskSpec, settings: Settings, meter: WorkerMeter | None, record: dict[str, Any], say: Callable[[str], None]) -> None:
    from ..workflow import run_store

    from ..lock import LockHeld

    try:
        outcome = run_store(path, settings, say, spec.if_due, before_apply=_check_budget(meter, record))
    except LockHeld as exc:
        if not spec.if_due:
            raise
        # as `run --if-due` alone: exit 0, the other run does the work
        record.update(status="not_due", reason=str(exc))
        return
    if not outcome.ran:
        record.update(status="not_due", reason=outcome.reason)
        return
    assert outcome.plan is not None
    _plan_counts(record, outcome.plan)
    _apply_counts(record, outcome.result)
    record["recorded"] = outcome.recorded
    if not outcome.recorded and not outcome.applied_unrecorded:
        # what makes the single-store `run` exit 1: the run was not recorded as the last one
        _failed(record, "the run did not complete cleanly (see errors); it was not recorded as the last run")
        return
    record["status"] = "ok"


_COMMANDS = {"plan": _do_plan, "apply": _do_apply, "run": _do_run}
