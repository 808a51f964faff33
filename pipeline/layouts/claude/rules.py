"""The claude layout's own rules; staleness and index drift are shared with other layouts.

MEMORY.md is loaded into every session and silently degrades past its read limit (~24 KB), so dream
keeps it within 17 KB (seed 001, "Rebuild MEMORY.md"). An index over that target is reported here;
the rebuild that trims hooks at word boundaries belongs to apply.
"""

from __future__ import annotations

from ...config import Settings
from ...kinds import ActionKind, FindingKind
from ...actions import BudgetFinding, MergeDuplicateAction
from ...kinds import StaleClass
from ...model import Action, Corpus
from ...rules.outcome import Outcome
from .memory_md import MAX_LINES


def over(corpus: Corpus, measure: str, limit: int) -> list[tuple[str, int]]:
    """(MEMORY.md, its size) for each index whose `measure`, as the reader took it, is over `limit`."""
    return [(index, size) for index, size in sorted(corpus.extra.get(measure, {}).items()) if size > limit]


def index_budget(corpus: Corpus, budget: int) -> Outcome:
    out = Outcome()
    for index, size in over(corpus, "index_bytes", budget):
        out.findings.append(
            BudgetFinding(kind=FindingKind.OVER_BUDGET, targets=[index], size=size, budget=budget,
                    reason=f"{size} bytes, over the {budget}-byte MEMORY.md target: a rebuild trims hooks, never entries")
        )
        out.actions.append(
            Action(kind=ActionKind.TRIM_BUDGET, targets=[index], reason=f"MEMORY.md is {size} bytes: trim hooks at word boundaries to fit {budget}")
        )
    return out


def index_lines(corpus: Corpus, max_lines: int = MAX_LINES) -> Outcome:
    """Claude Code loads the first 200 lines of MEMORY.md: what is below is not seen. Trimming hooks
    cannot fix that and dropping entries is never done, so this is for the user (a sub-index)."""
    out = Outcome()
    for index, count in over(corpus, "index_lines", max_lines):
        out.findings.append(
            BudgetFinding(kind=FindingKind.OVER_BUDGET, targets=[index], lines=count, max_lines=max_lines,
                    reason=f"{count} lines, over the {max_lines} lines Claude Code loads: move a section into a sub-index file")
        )
    return out


def rules(corpus: Corpus, settings: Settings) -> Outcome:
    return index_budget(corpus, settings.claude.index_budget_bytes).extend(index_lines(corpus))


def hand_overs(outcome: Outcome) -> Outcome:
    """A merge whose survivor this plan also prunes names the members that survive in its place:
    those the staleness pass keeps (not FULLY_STALE) and no prune archives, in the merge's order.
    Decided here so the plan shows it; the writer takes the first still there (seed 001, STEP 5-6)."""
    pruned = {t for a in outcome.actions if a.kind == ActionKind.PRUNE_STALE for t in a.targets}
    fully_stale = {f.targets[0] for f in outcome.findings
                   if f.kind == FindingKind.STALE and f.class_ == StaleClass.FULLY_STALE and f.targets}
    actions: list[Action] = []
    for a in outcome.actions:
        if isinstance(a, MergeDuplicateAction) and a.survivor in pruned:
            members = [t for t in dict.fromkeys(a.targets) if t != a.survivor]
            keep = [t for t in members if t not in pruned and t not in fully_stale]
            a = a.model_copy(update={"handover": keep})
        actions.append(a)
    return Outcome(actions, list(outcome.findings))
