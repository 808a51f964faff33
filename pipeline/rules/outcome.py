"""What a rule returns, and the ordering that makes every plan byte-stable."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Action, Finding

# Order of kinds in the plan and the report: the seeds' report order (consistency, conflicts,
# promotions, demotions, archival, consolidations, ...).
ACTION_ORDER = [
    "merge_duplicate",
    "prune_stale",
    "conflict",
    "promote",
    "demote",
    "archive",
    "consolidate",
    "rebalance_volumes",
    "compress",
    "sync_strength",
    "promote_rule",
    "remove_orphan_tracker",
    "archive_session",
    "rotate_session",
    "trim_budget",
    "rebuild_index",
    "absolutize_dates",
]
FINDING_ORDER = [
    "parse_error",
    "config_issue",
    "pinned_skipped",
    "capped",
    "manual_review",
    "reorder_candidate",
    "stale",
    "strength_mismatch",
    "missing_tracker",
    "stale_source",
    "goal_review",
    "over_budget",
    "near_budget",
    "freshness",
    "relative_date",
]


@dataclass
class Outcome:
    actions: list[Action] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def extend(self, other: "Outcome") -> "Outcome":
        self.actions.extend(other.actions)
        self.findings.extend(other.findings)
        return self


def _rank(order: list[str], kind: str) -> int:
    try:
        return order.index(kind)
    except ValueError:
        return len(order)


def action_sort_key(a: Action) -> tuple:
    return (_rank(ACTION_ORDER, a.kind), a.targets, a.source, a.reason)


def finding_sort_key(f: Finding) -> tuple:
    return (_rank(FINDING_ORDER, f.kind), f.targets, f.class_ or "", f.reason)
