"""Every kind of action, finding and staleness class, and one table saying how each behaves.

The plan JSON carries these as plain strings: a `StrEnum` member is its value (it compares, hashes,
formats and serializes as the string), so typing a kind changes no byte of a plan. What the plan,
the report and apply need to know about a kind is in its row of `ACTIONS` / `FINDINGS`; the row's
position is the kind's place in the plan and the report (the seeds' report order).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ActionKind(StrEnum):
    MERGE_DUPLICATE = "merge_duplicate"
    PRUNE_STALE = "prune_stale"
    CONFLICT = "conflict"
    PROMOTE = "promote"
    DEMOTE = "demote"
    ARCHIVE = "archive"
    CONSOLIDATE = "consolidate"
    REBALANCE_VOLUMES = "rebalance_volumes"
    COMPRESS = "compress"
    SYNC_STRENGTH = "sync_strength"
    PROMOTE_RULE = "promote_rule"
    REMOVE_ORPHAN_TRACKER = "remove_orphan_tracker"
    ARCHIVE_SESSION = "archive_session"
    ROTATE_SESSION = "rotate_session"
    TRIM_BUDGET = "trim_budget"
    REBUILD_INDEX = "rebuild_index"
    ABSOLUTIZE_DATES = "absolutize_dates"
    UPDATE_REF = "update_ref"


class FindingKind(StrEnum):
    PARSE_ERROR = "parse_error"
    CONFIG_ISSUE = "config_issue"
    PINNED_SKIPPED = "pinned_skipped"
    CAPPED = "capped"
    MANUAL_REVIEW = "manual_review"
    REORDER_CANDIDATE = "reorder_candidate"
    STALE = "stale"
    STRENGTH_MISMATCH = "strength_mismatch"
    SHARED_SLUG = "shared_slug"  # crux: memories of one slug in two folders (one tracker; a move onto the other)
    TYPE_MISMATCH = "type_mismatch"  # crux: a `type` field that disagrees with the type folder (a file move cut short)
    MISSING_TRACKER = "missing_tracker"
    STALE_SOURCE = "stale_source"
    GOAL_REVIEW = "goal_review"
    OVER_BUDGET = "over_budget"
    NEAR_BUDGET = "near_budget"
    FRESHNESS = "freshness"
    RELATIVE_DATE = "relative_date"
    STALENESS_SKIPPED = "staleness_skipped"  # claude: no repository to check a folder against
    SYMLINK_SKIPPED = "symlink_skipped"  # claude: a symlinked folder not followed
    DANGLING_LINK = "dangling_link"  # `[[name]]` links that reach no memory (or will not, after the plan)
    NOT_READ = "not_read"  # files where the layout reads none (zylos: a reference file beside the tiers)


class StaleClass(StrEnum):
    """dream's staleness classes (rules/staleness.py)."""

    EVERGREEN = "EVERGREEN"
    FRESH = "FRESH"
    PARTIALLY_STALE = "PARTIALLY_STALE"
    FULLY_STALE = "FULLY_STALE"


@dataclass(frozen=True)
class ActionInfo:
    heading: str  # the run report's, after an apply: what was done
    plan_heading: str  # the plan's, before: what apply would do (future tense)
    # Actions that move or retire a memory, strongest claim first (0 is strongest). A memory claimed
    # by one of them is left out of the weaker ones: a duplicate being retired is not also demoted.
    claim: int | None = None
    # A claim that takes the memory away (archive, prune, merge, consolidate), unlike a demotion,
    # promotion or compression that leaves it live: None means "whenever it claims".
    retires: bool | None = None
    # Dropped when every target is already claimed by a move (nothing left to act on).
    yields_to_claims: bool = False
    # Dropped only when every target is retired: a demoted memory can still become a rule.
    yields_to_retirements: bool = False
    # Executed by apply on its own when `needs_user` is false; False: only under an explicit
    # resolution policy (conflicts are never auto-resolved).
    automatic: bool = True


@dataclass(frozen=True)
class FindingInfo:
    heading: str
    # Dropped when the plan's final actions retire every target: advice about keeping a memory
    # (its missing tracker) says nothing once the memory is archived.
    yields_to_retirements: bool = False


A = ActionKind
F = FindingKind

# Order of the rows = order of kinds in the plan and the report.
ACTIONS: dict[ActionKind, ActionInfo] = {
    A.MERGE_DUPLICATE: ActionInfo("Duplicates merged", "Duplicates to merge", claim=0),
    A.PRUNE_STALE: ActionInfo("Stale entries pruned (archived, not deleted)", "Stale entries to prune (archived, not deleted)", claim=1),
    A.CONFLICT: ActionInfo("Conflicts (require manual resolution)", "Conflicts to resolve (by hand, or apply --resolve)", yields_to_claims=True, automatic=False),
    A.PROMOTE: ActionInfo("Promotions", "Memories to promote", claim=5, retires=False),
    A.DEMOTE: ActionInfo("Demotions", "Memories to demote", claim=4, retires=False),
    A.ARCHIVE: ActionInfo("Archival", "Memories to archive", claim=3),
    A.CONSOLIDATE: ActionInfo("Consolidations", "Memories to consolidate", claim=2),
    A.REBALANCE_VOLUMES: ActionInfo("Volume rebalances", "Volumes to rebalance"),
    A.COMPRESS: ActionInfo("Compressions", "Memories to compress", claim=6, retires=False),
    A.SYNC_STRENGTH: ActionInfo("Strength rebalances", "Strengths to rebalance", yields_to_claims=True),
    A.PROMOTE_RULE: ActionInfo("Rule promotion candidates", "Rule promotion candidates", yields_to_retirements=True),
    A.REMOVE_ORPHAN_TRACKER: ActionInfo("Cleanup (orphaned trackers)", "Orphaned trackers to remove"),
    A.ARCHIVE_SESSION: ActionInfo("Session logs to archive", "Session logs to archive"),
    A.ROTATE_SESSION: ActionInfo("Session rotation", "Session logs to rotate"),
    A.TRIM_BUDGET: ActionInfo("Budget trims", "Budgets to trim"),
    A.REBUILD_INDEX: ActionInfo("Index rebuilds", "Indexes to rebuild"),
    A.ABSOLUTIZE_DATES: ActionInfo("Relative dates made absolute", "Relative dates to make absolute"),
    A.UPDATE_REF: ActionInfo("References updated", "References to update"),
}

FINDINGS: dict[FindingKind, FindingInfo] = {
    F.PARSE_ERROR: FindingInfo("Unreadable files (left untouched)"),
    F.CONFIG_ISSUE: FindingInfo("Config issues"),
    F.PINNED_SKIPPED: FindingInfo("Pinned (never retired)"),
    F.CAPPED: FindingInfo("Capped (wait for the next run)"),
    F.MANUAL_REVIEW: FindingInfo("For manual review"),
    F.REORDER_CANDIDATE: FindingInfo("Reorder candidates (same words, different order)"),
    F.STALE: FindingInfo("Staleness"),
    F.STRENGTH_MISMATCH: FindingInfo("Strength mismatches"),
    F.SHARED_SLUG: FindingInfo("Memories sharing a slug (and its tracker): settle by hand"),
    # an automatic archive sets `type` as it moves the file: nothing is left to settle
    F.TYPE_MISMATCH: FindingInfo("Types that disagree with their folder: settle by hand", yields_to_retirements=True),
    F.MISSING_TRACKER: FindingInfo("Missing trackers", yields_to_retirements=True),
    F.STALE_SOURCE: FindingInfo("Stale sources"),
    F.GOAL_REVIEW: FindingInfo("Goals to review"),
    F.OVER_BUDGET: FindingInfo("Over budget"),
    F.NEAR_BUDGET: FindingInfo("Near budget"),
    F.FRESHNESS: FindingInfo("Freshness"),
    F.RELATIVE_DATE: FindingInfo("Relative dates to check"),
    F.STALENESS_SKIPPED: FindingInfo("Staleness not checked (no repository)"),
    F.SYMLINK_SKIPPED: FindingInfo("Symlinked folders not followed"),
    F.DANGLING_LINK: FindingInfo("Dangling links"),
    F.NOT_READ: FindingInfo("Files not read (not where the layout keeps memories)"),
}

# Staleness classes that need nothing from the user: counted in the report, listed in the JSON.
QUIET_STALE_CLASSES = frozenset({StaleClass.EVERGREEN, StaleClass.FRESH})

# By plain name too: a kind read back as a string (a --select, a status count) finds its row.
_ACTION_BY_NAME: dict[str, ActionInfo] = {k: v for k, v in ACTIONS.items()}
_FINDING_BY_NAME: dict[str, FindingInfo] = {k: v for k, v in FINDINGS.items()}
_ACTION_RANK: dict[str, int] = {k: i for i, k in enumerate(ACTIONS)}
_FINDING_RANK: dict[str, int] = {k: i for i, k in enumerate(FINDINGS)}


def action_rank(kind: str) -> int:
    """The kind's place in the plan and the report; an unknown kind goes last."""
    return _ACTION_RANK.get(kind, len(_ACTION_RANK))


def finding_rank(kind: str) -> int:
    return _FINDING_RANK.get(kind, len(_FINDING_RANK))


def action_info(kind: str) -> ActionInfo | None:
    """The kind's row; None for a kind the table does not know."""
    return _ACTION_BY_NAME.get(kind)


def claim_rank(kind: str) -> int | None:
    """How strong a claim the action makes on the memories it moves (0 strongest); None: none."""
    info = action_info(kind)
    return info.claim if info else None


def is_automatic(kind: str) -> bool:
    info = action_info(kind)
    return info.automatic if info else True


def yields_to_claims(kind: str) -> bool:
    info = action_info(kind)
    return bool(info and info.yields_to_claims)


def retires(kind: str) -> bool:
    """Whether the action's claim takes its memories away (not a demotion, promotion, compression)."""
    info = action_info(kind)
    if info is None or info.claim is None:
        return False
    return info.retires if info.retires is not None else True


def yields_to_retirements(kind: str) -> bool:
    info = action_info(kind)
    return bool(info and info.yields_to_retirements)


def finding_yields_to_retirements(kind: str) -> bool:
    info = _FINDING_BY_NAME.get(kind)
    return bool(info and info.yields_to_retirements)


def action_heading(kind: str) -> str:
    info = action_info(kind)
    return info.heading if info else kind


def plan_heading(kind: str) -> str:
    info = action_info(kind)
    return info.plan_heading if info else kind


def finding_heading(kind: str) -> str:
    info = _FINDING_BY_NAME.get(kind)
    return info.heading if info else kind


# The kinds that claim the memories they move, strongest first.
CLAIM_KINDS: tuple[ActionKind, ...] = tuple(
    sorted((k for k, i in ACTIONS.items() if i.claim is not None), key=lambda k: ACTIONS[k].claim or 0)
)
