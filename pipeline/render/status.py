"""`status`: the store, what a plan would do now, the runs it remembers, its state folder."""

from __future__ import annotations

from typing import Any

from .runs import human_bytes, run_log
from .text import PIPE_WIDTH, joined, plural, wrap

SHOWN_RUNS = 5


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def render_status(info: dict[str, Any], width: int = PIPE_WIDTH, config: str | None = None) -> str:
    root = info["root"]
    out = [f"{info['layout']} store {root}: {plural(info['memories'], 'memory', 'memories')}"]
    out.extend(wrap("by type: " + (", ".join(f"{k} {v}" for k, v in info["by_type"].items()) or "none"), width, "  ", "    "))
    out.append(f"  config: {config or 'none'}")  # a path: never wrapped
    if info["state_bytes"] is None:
        out.append(f"  state folder: {root}/.memconsolidate is a symlink, not followed")
    else:
        out.append(f"  state folder: {human_bytes(info['state_bytes'])} in {root}/.memconsolidate")
    for note in info.get("notes", []):
        out.extend(wrap(f"note: {note}", width, "  ", "    "))
    for b in info["budgets"]:
        out.extend(wrap(f"{b['kind']}: {', '.join(b['targets'])}: {b['reason']}", width, "  ", "    "))
    model = info["model"]
    source = "rules only (--model none)" if model == "none" else f"plan with model {model}"
    pending = _counts(info["pending_actions"]) or "nothing"
    out.extend(wrap(f"pending ({source}): {pending}", width, "  ", "    "))
    if info["needs_user"]:
        out.extend(wrap("need you: " + _counts(info["needs_user"]), width, "  ", "    "))
    for e in info.get("llm_errors", []):
        out.extend(wrap(f"stage error {e['stage']}: {e['message']} (pending counts leave that stage out)", width, "  ", "    "))
    last = info["last_run"]
    when = last.get("last_success") if last else None  # state.json is data: any shape
    out.append(f"  last nightly run: {when if isinstance(when, str) else 'unreadable'} (run {last.get('run_id') or 'none'})" if last else "  last nightly run: never")
    if info["run_in_progress"]:
        out.append(f"  a run is in progress (pid {info['run_in_progress']}); its journal: " + ", ".join(info["unfinished_journal"]))
    elif info["unfinished_journal"]:
        out.append("  UNFINISHED JOURNAL: " + ", ".join(info["unfinished_journal"]) + " (the next command on the store rolls it back)")
    for j in info["foreign_journal"]:
        out.extend(wrap(f"NOT ACTED ON: run {j['run']}: {j['why']}", width, "  ", "    "))
    runs = info["runs"]
    out.append("")
    if runs:
        more = f"; `memconsolidate runs {root}` lists all {len(runs)}" if len(runs) > SHOWN_RUNS else ""
        out.extend(wrap(f"Last runs (newest first{more})", width, "", "  "))
        out.extend(run_log(runs[-SHOWN_RUNS:], root, width, info.get("run_in_progress")))
    else:
        out.append("No runs applied yet.")
    return joined(out)
