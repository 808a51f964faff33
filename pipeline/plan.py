"""Build the plan: the deterministic pass, then the LLM stages, then one stable ordering."""

from __future__ import annotations

from typing import Callable

from .config import Settings
from .kinds import (CLAIM_KINDS, ActionKind, claim_rank, finding_yields_to_retirements, retires,
                    yields_to_claims, yields_to_retirements)
from .model import Action, Corpus, Finding, Memory, Plan, StageError, Stats, settle_read_shas
from .rules.absolutize_dates import absolutize_dates
from .rules.blast_cap import cap_retirements, retired_by
from .rules.aliases import ask_before_leaving_aliases
from .rules.dangling_links import dangling_links, relinks
from .rules.duplicates import merge_duplicates, report_reorders, text_groups
from .rules.index_drift import index_drift
from .evidence.context import load_context
from .rules.staleness import staleness
from .layouts.registry import layout_of
from .rules.outcome import Outcome, action_sort_key, finding_sort_key
from .storage.gc_pause import gc_paused, thaw

StageRunner = Callable[[Corpus, Settings, Outcome], tuple[Outcome, list[StageError], Stats]]


def _moved(action: Action) -> list[str]:
    if action.kind == ActionKind.MERGE_DUPLICATE:
        return [t for t in action.targets if t != action.survivor]
    return list(action.targets)


def _strongest_first(a: Action) -> tuple:
    rank = claim_rank(a.kind)
    return (len(CLAIM_KINDS) if rank is None else rank, action_sort_key(a))


def reconcile(actions: list[Action]) -> list[Action]:
    """Drop weaker actions on memories a stronger action already moves or retires."""
    claimed: set[str] = set()
    retired: set[str] = set()  # claimed by a move that takes the memory away (not a demote or promote)
    kept: list[Action] = []
    for action in sorted(actions, key=_strongest_first):
        if claim_rank(action.kind) is not None:
            moved = _moved(action)
            if any(t in claimed for t in moved) or (action.survivor and action.survivor in claimed):
                continue
            claimed.update(moved)
            if retires(action.kind):
                retired.update(moved)
        elif yields_to_retirements(action.kind) and all(t in retired for t in action.targets):
            continue  # a demoted memory much referenced is still a rule candidate (issue 11, item 15)
        elif yields_to_claims(action.kind) and all(t in claimed for t in action.targets):
            continue
        kept.append(action)
    return kept


def with_target_hashes(
    corpus: Corpus, actions: list[Action], depends_on: Callable[[Action], list[str]] | None = None
) -> tuple[list[Action], list[StageError]]:
    """Each action carrying the read hashes of what it was judged on: every file its targets were
    read from (a memory's, a tracker, an index), each file it is also judged with
    (`Action.judged_with`: a consolidated memory holding an archived member) and each file or
    listing what applying it writes is built on (`depends_on`, the layout's: claude's indexes).

    Apply skips an action whose targets changed since the plan only by these hashes, and its
    fingerprint covers them, so an action judged on a memory that came without them (a reader that
    kept none, as a third-party layout might) is dropped, not planned unchecked, and reported in the
    plan's errors.
    """
    by_key = corpus.by_key()
    also = {id(a): [*a.judged_with(), *(depends_on(a) if depends_on else [])] for a in actions}
    # Only these memories' hashes are needed: a reader may have deferred them (model.settle_read_shas).
    settle_read_shas(by_key[k] for a in actions for k in (*a.targets, *also[id(a)]) if k in by_key)
    files = {**corpus.index_shas, **{t.key: t.read_sha for t in corpus.trackers if t.read_sha}}
    out: list[Action] = []
    errors: list[StageError] = []
    for a in actions:
        unhashed = [t for t in a.targets if t in by_key and not by_key[t].read_shas]
        if unhashed:
            errors.append(StageError(stage="plan", message=(
                f"{a.kind} of {', '.join(a.targets)} dropped: the reader kept no hash of "
                f"{', '.join(unhashed)}, so apply could not tell whether it changed since the plan")))
            continue
        hashes = {k: v for t in a.targets for k, v in _read_shas(t, by_key, files).items()}
        hashes.update((k, v) for k in also[id(a)] if (v := _read_shas(k, by_key, files).get(k)))
        if hashes:
            a = a.model_copy(update={"target_hashes": dict(sorted(hashes.items()))})
        out.append(a)
    return out, errors


def _read_shas(key: str, memories: dict[str, Memory], files: dict[str, str]) -> dict[str, str]:
    """What the reader read for `key`, by file: a memory's files (its twin and tracker too), or the
    one file (a tracker, an index) it names."""
    if key in memories:
        return memories[key].read_shas
    return {key: files[key]} if key in files else {}


def without_moot(findings: list[Finding], actions: list[Action], live: list[str]) -> list[Finding]:
    """The findings still worth reading once the plan's final actions are known: one whose kind
    yields to retirements (a missing tracker) goes when every memory it names is retired by an
    automatic action. A retirement that needs the user may be declined: the advice stays."""
    keys = set(live)
    retired = {t for a in actions if not a.needs_user for t in retired_by(a, keys)}
    return [f for f in findings
            if not (finding_yields_to_retirements(f.kind) and f.targets and all(t in retired for t in f.targets))]


def run_rules(corpus: Corpus, settings: Settings) -> Outcome:
    """The deterministic pass: the shared rules and the layout's own, over what the reader found."""
    try:
        with gc_paused():  # one pass building long-lived groups and indexes (see storage/gc_pause.py)
            return _deterministic(corpus, settings)
    finally:
        thaw()  # what a reader froze (a big bank's memories): the collector's again from here on


def _deterministic(corpus: Corpus, settings: Settings) -> Outcome:
    layout = layout_of(corpus)
    out = Outcome()
    out.findings.extend(corpus.findings)
    groups = text_groups(corpus.memories)  # one pass over the texts for both rules
    out.extend(merge_duplicates(corpus.memories, groups))
    out.extend(report_reorders(corpus.memories, groups))
    out.extend(layout.rules(corpus, settings))
    if layout.staleness_without_repo or settings.repo:
        # The only reads of the pass besides the store's: repositories, git history, consult logs.
        context = load_context(corpus, settings, layout.memory_file)
        out.extend(staleness(corpus, settings, context, layout.evergreen_without_frontmatter))
    out.extend(index_drift(corpus))
    if layout.links_by_name:
        out.extend(relinks(corpus))
    out.extend(absolutize_dates(corpus.memories))
    return out


def build_plan(corpus: Corpus, settings: Settings, run_stages: StageRunner | None = None) -> Plan:
    outcome = run_rules(corpus, settings)
    errors: list[StageError] = []
    stats = Stats()
    if run_stages is not None:
        staged, errors, stats = run_stages(corpus, settings, outcome)
        outcome = staged
    layout = layout_of(corpus)
    outcome = ask_before_leaving_aliases(corpus, layout.guard(outcome, settings))
    live = [m.key for m in corpus.memories if not layout.is_archived(m)]
    # What apply never does goes first: it takes no slot of the cap, and claims no memory in
    # `reconcile` (a conflict under a consolidation apply never makes stays).
    feasible = reconcile(layout.before_cap(corpus, outcome.actions, live))
    capped = cap_retirements(feasible, live, settings.max_retire_fraction, layout.retire_first(corpus, settings))
    kept = layout.after_cap(corpus, capped.actions, live)
    actions, unhashed = with_target_hashes(corpus, sorted(kept, key=action_sort_key), lambda a: layout.depends_on(corpus, a))
    actions = layout.explain(corpus, actions, settings)  # what applying them does, said before
    # of the actions the plan keeps, after every guard
    dangling = dangling_links(corpus, actions) if layout.links_by_name else []
    return Plan(
        layout=corpus.layout,
        root=corpus.root,
        now=settings.now,
        model=settings.llm.model,
        memories=len(corpus.memories),
        actions=actions,
        findings=sorted(without_moot(outcome.findings, actions, live) + capped.findings + dangling, key=finding_sort_key),
        errors=sorted(errors + unhashed, key=lambda e: (e.stage, e.message)),
        stats=stats,
    )
