"""The run report written into a store after an apply, and the headings of what a run did.

The plan as a person reads it is `pipeline.render.plan` (`render` here is kept for its callers).
"""

from __future__ import annotations

from collections import Counter

from .model import Plan
from .printable import printable
from .rules.outcome import ACTION_ORDER

ACTION_HEADINGS = {
    "merge_duplicate": "Duplicates merged",
    "prune_stale": "Stale entries pruned (archived, not deleted)",
    "conflict": "Conflicts (require manual resolution)",
    "promote": "Promotions",
    "demote": "Demotions",
    "archive": "Archival",
    "consolidate": "Consolidations",
    "rebalance_volumes": "Volume rebalances",
    "compress": "Compressions",
    "sync_strength": "Strength rebalances",
    "promote_rule": "Rule promotion candidates",
    "remove_orphan_tracker": "Cleanup (orphaned trackers)",
    "archive_session": "Session logs to archive",
    "rotate_session": "Session rotation",
    "trim_budget": "Budget trims",
    "rebuild_index": "Index rebuilds",
    "absolutize_dates": "Relative dates made absolute",
}
FINDING_HEADINGS = {
    "parse_error": "Unreadable files (left untouched)",
    "config_issue": "Config issues",
    "pinned_skipped": "Pinned (never retired)",
    "capped": "Capped (wait for the next run)",
    "manual_review": "For manual review",
    "reorder_candidate": "Reorder candidates (same words, different order)",
    "stale": "Staleness",
    "strength_mismatch": "Strength mismatches",
    "missing_tracker": "Missing trackers",
    "stale_source": "Stale sources",
    "goal_review": "Goals to review",
    "over_budget": "Over budget",
    "near_budget": "Near budget",
    "freshness": "Freshness",
    "relative_date": "Relative dates to check",
}


# Staleness classes that need nothing from the user: counted in the report, listed in the JSON.
QUIET_STALE_CLASSES = {"EVERGREEN", "FRESH"}


def _rank(order: list[str], kind: str) -> int:
    return order.index(kind) if kind in order else len(order)


def render(plan: Plan) -> str:
    """The human plan at the width of a pipe (the command line passes the terminal's)."""
    from .render.plan import render_plan

    return render_plan(plan)


def _joined(lines: list[str]) -> str:
    # Each line as one line: a file name or reason with a line break cannot forge another.
    return "\n".join(printable(line) for line in lines) + "\n"


def render_run_report(layout: str, run_id: str, now, changes) -> str:
    """The run report written into the store after an apply (markdown, stable order)."""
    lines = [f"# memconsolidate run {run_id}", "", f"- layout: {layout}", f"- date: {now.isoformat()}", ""]
    applied = Counter(a.kind for a in changes.applied)
    lines.append(f"## Applied ({len(changes.applied)})")
    for kind in sorted(applied, key=lambda k: (_rank(ACTION_ORDER, k), k)):
        lines.append(f"### {ACTION_HEADINGS.get(kind, kind)} ({applied[kind]})")
        for a in changes.applied:
            if a.kind == kind:
                lines.append(f"- {', '.join(a.targets)}: {a.reason}")
    lines.append("")
    lines.append(f"## Skipped ({len(changes.skipped)})")
    for a, why in changes.skipped:
        lines.append(f"- {a.kind} {', '.join(a.targets)}: {why}")
    if changes.notes:
        lines.append("")
        lines.append(f"## Notes ({len(changes.notes)})")
        lines.extend(f"- {n}" for n in changes.notes)
    return _joined(lines)
