"""Runs as a person reads them: the applied-runs log (`runs`, `status`), apply's and undo's
summaries, and the one line per nightly `run` for a cron log."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from ..model import Action, Plan
from ..printable import printable
from ..text.truncate import clip_middle
from .plan import action_tags, tagged, target_lines
from .text import PIPE_WIDTH, common_folder, joined, plural, wrap


def when(iso: str) -> str:
    """A journal's ISO time as `2026-12-01 12:45 UTC` (as written when it cannot be read)."""
    try:
        t = dt.datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return str(iso)
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M UTC")


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"


def _kinds(kinds: list[str]) -> str:
    counts = Counter(kinds)
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def run_log(runs: list[dict[str, Any]], root: str, width: int = PIPE_WIDTH, live: str | None = None) -> list[str]:
    """Runs newest first, like `git log`: id and time, what it did, how to undo it. `live`: the pid of a
    run holding the store's lock now (its journal is the newest unfinished one: in progress, not
    interrupted)."""
    lines: list[str] = []
    undone_by = {r["undo_of"]: r["run_id"] for r in runs if r.get("undo_of") and r["status"] != "rolled_back"}
    working = next((r["run_id"] for r in reversed(runs) if r["status"] == "prepared"), None) if live else None
    for r in reversed(runs):
        head = f"run {r['run_id']}  {when(r['created'])}"
        if r.get("model"):
            head += f"  model {r['model']}"
        lines.append(head)
        if r["status"] == "rolled_back":
            # its journal lists what it was to change; a write failed and it was all put back
            what = f"undo of run {r['undo_of']}" if r.get("undo_of") else plural(len(r["applied"]), "action")
            lines.extend(wrap(f"failed and rolled back ({what}): nothing changed", width, "    "))
        elif r.get("undo_of"):
            lines.extend(wrap(f"undid run {r['undo_of']}: {plural(r['files'], 'file')} restored", width, "    "))
        elif r["status"] == "prepared" and r["run_id"] == working:
            lines.append(f"    in progress (pid {live}): another command is working on the store")
        elif r["status"] == "prepared":
            lines.append("    unfinished: the next command on the store rolls it back")
        else:
            n = len(r["applied"])
            detail = f" ({_kinds(r['applied'])})" if n else ""
            lines.extend(wrap(f"{plural(n, 'action')}{detail}, {plural(r['files'], 'file')} changed", width, "    "))
            if r["status"] == "undone":
                by = undone_by.get(r["run_id"])
                lines.append(f"    undone{f' by run {by}' if by else ''}")
            else:
                lines.append(f"    undo: memconsolidate undo {root} --run {r['run_id']}")  # a command: never wrapped
    return lines


def render_runs(runs: list[dict[str, Any]], root: str, keep: int, width: int = PIPE_WIDTH, live: str | None = None) -> str:
    if not runs:
        return joined([f"No runs recorded in {root}."])
    head = f"{plural(len(runs), 'run')} kept in {root} (the newest {keep} are kept; older ones are pruned after an apply)"
    return joined([*wrap(head, width, "", "  "), "", *run_log(runs, root, width, live)])


def _lead(n: int | None) -> str:
    return f"  {n:>3}. " if n is not None else "    - "


def action_line(n: int | None, a: Action, width: int) -> list[str]:
    """`  3. merge_duplicate  blog/m002 → blog/m001  [3a7527dc]`: the plan's brackets (the
    fingerprint last) after the first target, one target per line after it."""
    folder = common_folder(a.targets) if len(a.targets) > 1 else ""
    targets = target_lines(a, folder)
    lead = _lead(n)
    indent = " " * (len(lead) + 2)
    lines = tagged(wrap(f"{a.kind}  {folder}{targets[0]}", width, lead, indent), action_tags(a), width, indent)
    pad = " " * (len(lead) + len(a.kind) + 2 + len(folder))
    lines.extend(f"{pad}{t}" for t in targets[1:])
    return lines


def action_summary_line(n: int | None, a: Action, width: int) -> str:
    """`  3. merge_duplicate  blog/m002 → blog/m001 (+1 more)  [3a7527dc]` on one line of
    at most `width` (unless the number, kind and brackets alone are wider): the first target is
    cut in its middle, the brackets kept whole (their fingerprint is what `--select` pins)."""
    first, *others = target_lines(a, "")
    head = f"{_lead(n)}{a.kind}  "
    tail = (f" (+{len(others)} more)" if others else "") + f"  {action_tags(a)}"
    room = max(width - len(head) - len(tail), MIN_TARGET_ROOM)
    return f"{head}{clip_middle(printable(first), room)}{tail}"


# Apply's prompt lists at most this many lines of actions, the last saying how many more.
PROMPT_LIST_LINES = 20
# Columns a clipped target keeps on a narrow terminal, however long the rest of its line.
MIN_TARGET_ROOM = 12


def render_to_apply(plan: Plan, actions: list[Action], width: int = PIPE_WIDTH) -> str:
    """What apply's prompt shows just before it asks: the actions it is about to apply, one line
    each (`action_summary_line`), at most PROMPT_LIST_LINES lines."""
    shown = actions if len(actions) <= PROMPT_LIST_LINES else actions[: PROMPT_LIST_LINES - 1]
    lines = ["", f"To apply ({len(actions)}):"]
    lines.extend(action_summary_line(number_of(plan, a), a, width) for a in shown)
    if len(shown) < len(actions):
        lines.append(f"  … and {len(actions) - len(shown)} more (in the plan above)")
    return joined(lines)


def number_of(plan: Plan, action: Action) -> int | None:
    for n, a in enumerate(plan.actions, start=1):
        if a is action:
            return n
    for n, a in enumerate(plan.actions, start=1):
        if a.kind == action.kind and a.targets == action.targets:
            return n
    return None


def render_applied(plan: Plan, result: Any, width: int = PIPE_WIDTH) -> str:
    ch = result.changes
    lines = wrap(f"Applied run {result.run_id}: {plural(len(ch.applied), 'action')}, {len(ch.skipped)} skipped, "
                 f"{plural(len(result.record.touched), 'file')} changed.", width, "", "  ")
    lines.extend(line for a in ch.applied for line in action_line(number_of(plan, a), a, width))
    for a, why in ch.skipped:
        lines.extend(wrap(f"skipped {a.kind} {', '.join(a.targets)}: {why}", width, "  ", "    "))
    # What the run did beyond its actions (hooks a rebuild shortened, an owner's note kept or
    # quoted): said in --json and the run's report, and here, where a person applying reads it.
    for note in ch.notes:
        lines.extend(wrap(f"note: {note}", width, "  ", "    "))
    lines.append(f"Undo with: memconsolidate undo {plan.root} --run {result.run_id}")  # a command: never wrapped
    return joined(lines)


def render_nothing(plan: Plan, result: Any) -> str:
    skipped = len(result.changes.skipped) if result else 0
    return joined([f"Nothing to apply ({plural(len(plan.actions), 'action')} in the plan, {skipped} skipped)."])


def cron_line(wall: dt.datetime, root: str, model: str, outcome: Any) -> str:
    """One line per nightly run: time, store, model, actions applied, errors, run id."""
    stamp = wall.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not outcome.ran:
        return joined([f"{stamp} {root} model={model} skipped: {outcome.reason}"])
    applied = len(outcome.result.changes.applied) if outcome.result else 0
    rid = outcome.result.run_id if outcome.result and outcome.result.record else "none"
    errors = len(outcome.plan.errors) if outcome.plan else 0
    return joined([f"{stamp} {root} model={model} applied={applied} errors={errors} run={rid}"])
