"""Build the plan: the deterministic pass, then the LLM stages, then one stable ordering."""

from __future__ import annotations

from typing import Callable

from .config import Settings
from .model import Action, Corpus, Plan, StageError, Stats
from .rules import run_rules
from .rules.blast_cap import cap_retirements
from .layouts.registry import layout_of
from .rules.outcome import Outcome, action_sort_key, finding_sort_key

# Actions that move or retire a memory, strongest claim first. A memory claimed by one of them is
# left out of the weaker ones: a duplicate that is being retired is not also demoted.
_CLAIM_ORDER = ["merge_duplicate", "prune_stale", "consolidate", "archive", "demote", "promote", "compress"]

# Actions whose effect was judged on their targets' content (what they retire, merge, move or edit):
# each carries the hashes of what the plan read, so apply skips one whose target changed since.
JUDGED_ON_CONTENT = {
    "merge_duplicate", "prune_stale", "conflict", "promote", "demote", "archive", "consolidate",
    "rebalance_volumes", "compress", "sync_strength", "remove_orphan_tracker", "archive_session",
}

StageRunner = Callable[[Corpus, Settings, Outcome], tuple[Outcome, list[StageError], Stats]]


def _moved(action: Action) -> list[str]:
    if action.kind == "merge_duplicate":
        return [t for t in action.targets if t != action.survivor]
    return list(action.targets)


def reconcile(actions: list[Action]) -> list[Action]:
    """Drop weaker actions on memories a stronger action already moves or retires."""
    claimed: set[str] = set()
    retired: set[str] = set()  # claimed by a move that takes the memory away (not a demote or promote)
    kept: list[Action] = []
    ranked = sorted(
        actions,
        key=lambda a: (_CLAIM_ORDER.index(a.kind) if a.kind in _CLAIM_ORDER else len(_CLAIM_ORDER), action_sort_key(a)),
    )
    for action in ranked:
        if action.kind in _CLAIM_ORDER:
            moved = _moved(action)
            if any(t in claimed for t in moved) or (action.survivor and action.survivor in claimed):
                continue
            claimed.update(moved)
            if action.kind not in ("demote", "promote", "compress"):
                retired.update(moved)
        elif action.kind == "promote_rule" and all(t in retired for t in action.targets):
            continue  # a demoted memory much referenced is still a rule candidate (issue 11, item 15)
        elif action.kind in ("conflict", "sync_strength") and all(t in claimed for t in action.targets):
            continue
        kept.append(action)
    return kept


def with_target_hashes(corpus: Corpus, actions: list[Action]) -> list[Action]:
    """Each action of a kind judged on content, carrying the read hashes of every target."""
    shas: dict[str, dict[str, str]] = {t.key: {t.key: t.read_sha} for t in corpus.trackers if t.read_sha}
    for m in corpus.memories:
        shas[m.key] = m.read_shas
    out = []
    for a in actions:
        hashes = {k: v for t in a.targets for k, v in shas.get(t, {}).items()}
        if a.kind in JUDGED_ON_CONTENT and hashes:
            a = a.model_copy(update={"target_hashes": dict(sorted(hashes.items()))})
        out.append(a)
    return out


def build_plan(corpus: Corpus, settings: Settings, run_stages: StageRunner | None = None) -> Plan:
    outcome = run_rules(corpus, settings)
    errors: list[StageError] = []
    stats = Stats()
    if run_stages is not None:
        staged, errors, stats = run_stages(corpus, settings, outcome)
        outcome = staged
    outcome = layout_of(corpus).guard(outcome, settings)
    live = [m.key for m in corpus.memories if m.type != "archived"]
    capped = cap_retirements(reconcile(outcome.actions), live, settings.max_retire_fraction)
    return Plan(
        layout=corpus.layout,
        root=corpus.root,
        now=settings.now,
        model=settings.llm.model,
        memories=len(corpus.memories),
        actions=with_target_hashes(corpus, sorted(capped.actions, key=action_sort_key)),
        findings=sorted(outcome.findings + capped.findings, key=finding_sort_key),
        errors=sorted(errors, key=lambda e: (e.stage, e.message)),
        stats=stats,
    )
