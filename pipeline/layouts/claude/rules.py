"""The claude layout's own rules; staleness and index drift are shared with other layouts.

MEMORY.md is loaded into every session and silently degrades past its read limit (~24 KB), so dream
keeps it within 17 KB (seed 001, "Rebuild MEMORY.md"). An index over that target is reported here,
and one past the read limit gets a `trim_budget` (the rebuild that trims hooks at word boundaries
belongs to apply); below the limit every hook is loaded, so the author's are left as written.
"""

from __future__ import annotations

from ...config import Settings
from ...kinds import ActionKind, FindingKind
from ...actions import BudgetFinding, MergeDuplicateAction
from ...kinds import StaleClass
from ...model import Action, Corpus
from ...rules.outcome import Outcome
from . import index_rebuild
from .decisions import INDEX_KINDS
from .memory_md import MAX_LINES
from .paths import folder_of


def over(corpus: Corpus, measure: str, limit: int) -> list[tuple[str, int]]:
    """(MEMORY.md, its size) for each index whose `measure`, as the reader took it, is over `limit`."""
    return [(index, size) for index, size in sorted(corpus.extra.get(measure, {}).items()) if size > limit]


def index_budget(corpus: Corpus, budget: int, load_bytes: int) -> Outcome:
    """An index past what Claude Code loads is trimmed (its hooks, never its entries); one only over
    the 17 KB target is reported, its hand-written hooks left as written: they are all loaded."""
    out = Outcome()
    for index, size in over(corpus, "index_bytes", budget):
        if size <= load_bytes:
            out.findings.append(BudgetFinding(
                kind=FindingKind.NEAR_BUDGET, targets=[index], size=size, budget=budget,
                reason=f"{size} bytes, over the {budget}-byte MEMORY.md target but within the {load_bytes} Claude Code loads: "
                       "hooks are left as written"))
            continue
        out.findings.append(
            BudgetFinding(kind=FindingKind.OVER_BUDGET, targets=[index], size=size, budget=load_bytes,
                    reason=f"{size} bytes, over the {load_bytes} bytes of MEMORY.md Claude Code loads: a rebuild trims hooks, never entries")
        )
        out.actions.append(
            Action(kind=ActionKind.TRIM_BUDGET, targets=[index],
                   reason=f"MEMORY.md is {size} bytes: trim hooks at word boundaries to fit the {load_bytes} Claude Code loads")
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
    claude = settings.claude
    return index_budget(corpus, claude.index_budget_bytes, claude.index_load_bytes).extend(index_lines(corpus))


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


def explain(corpus: Corpus, actions: list[Action], settings: Settings) -> list[Action]:
    """The plan's final actions, with what applying them does to each MEMORY.md beyond its entries
    (hooks shortened, lines past what Claude Code loads) added to the reason of the action asking for
    its rebuild, else of the first action changing its folder: the user reads it before apply, not
    only in the run's notes after."""
    said = index_rebuild.consequences(corpus, actions, settings)
    # What the other actions do to the index when applied without the rebuild (`--select`): only
    # their own edits, which may cut a new hook too; said on the first of them, as apply would do it.
    # (A plan asking for no rebuild has nothing else to say: the same actions, the same answer.)
    others = [a for a in actions if a.kind not in INDEX_KINDS]
    own = index_rebuild.consequences(corpus, others, settings) if len(others) < len(actions) else {}
    out = list(actions)

    def tell(i: int, what: list[str] | None) -> None:
        if what:
            out[i] = out[i].model_copy(update={"reason": f"{out[i].reason}; applying it: {'; '.join(what)}"})

    for index_key in sorted(set(said) | set(own)):
        asks = [i for i, a in enumerate(out) if a.kind in INDEX_KINDS and index_key in a.targets]
        changes = [i for i, a in enumerate(out) if a.kind not in INDEX_KINDS and any(folder_of(t) == folder_of(index_key) for t in a.targets)]
        if asks:
            tell(asks[0], said.get(index_key))
            if changes:
                tell(changes[0], own.get(index_key))
        elif changes:
            tell(changes[0], said.get(index_key))
    return out
