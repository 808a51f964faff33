"""The claude layout's own rules; staleness and index drift are shared with other layouts.

MEMORY.md is loaded into every session and silently degrades past its read limit (~24 KB), so dream
keeps it within 17 KB (seed 001, "Rebuild MEMORY.md"). An index over that target is reported here,
and one past the read limit gets a `trim_budget` (the rebuild that trims hooks at word boundaries
belongs to apply); below the limit every hook is loaded, so the author's are left as written.
"""

from __future__ import annotations

from typing import Callable

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
    (hooks shortened, lines past what Claude Code loads) added to their reasons: the user reads it
    before apply, not only in the run's notes after.

    Which hand-written hooks a rebuild shortens depends on all the run does to the index (a
    consolidation's one entry for two long ones can keep it within what Claude Code loads, where the
    rebuild alone must cut), so each is said for a set of actions the user can apply:
    - the bare `apply` (the actions not needing the user), on the first of them asking for the
      index's rebuild, else changing its folder;
    - when the plan asks for a rebuild, the other actions applied without it (`--select` of them),
      on the first of them;
    - the actions that need the user selected with the rest, on the first of them, when that says
      something else than the bare apply: what they bring about is theirs to say, never the
      automatic rebuild's (reckoned with them, it promised 75 hooks kept that a bare apply cut).
    Apply does not keep a promise instead: an index past what Claude Code loads is cut off unread,
    worse than a hook shortened."""
    said = _consequences_by_set(corpus, settings)
    automatic = [a for a in actions if not a.needs_user]  # what `apply --yes` runs (`apply.select_actions`)
    others = [a for a in actions if a.kind not in INDEX_KINDS]
    bare, everything, own = said(automatic), said(actions), said(others)
    out = list(actions)

    def tell(i: int | None, what: list[str] | None, label: str = "applying it") -> None:
        if i is not None and what:
            out[i] = out[i].model_copy(update={"reason": f"{out[i].reason}; {label}: {'; '.join(what)}"})

    for index_key in sorted(set(bare) | set(everything) | set(own)):
        asks = [i for i, a in enumerate(out) if a.kind in INDEX_KINDS and index_key in a.targets]
        changes = [i for i, a in enumerate(out) if a.kind not in INDEX_KINDS and any(folder_of(t) == folder_of(index_key) for t in a.targets)]
        tell(next((i for i in asks + changes if not out[i].needs_user), None), bare.get(index_key))
        if asks and changes:
            tell(changes[0], own.get(index_key))
        asked = next((i for i in changes + asks if out[i].needs_user), None)
        if asked is not None and everything.get(index_key) != bare.get(index_key):
            label = f"applying it with {out[asks[0]].kind} too" if asks and asked not in asks else "applying it"
            tell(asked, everything.get(index_key), label)
    return out


def _consequences_by_set(corpus: Corpus, settings: Settings) -> Callable[[list[Action]], dict[str, list[str]]]:
    """`index_rebuild.consequences` of an action set, each set computed once: a plan without actions
    that need the user, or without a rebuild, asks the same set more than once (each is a dry run of
    the rebuild)."""
    done: dict[tuple[int, ...], dict[str, list[str]]] = {}

    def said(chosen: list[Action]) -> dict[str, list[str]]:
        key = tuple(id(a) for a in chosen)
        if key not in done:
            done[key] = index_rebuild.consequences(corpus, chosen, settings)
        return done[key]

    return said
