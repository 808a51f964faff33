"""The claude layout's own rules; staleness and index drift are shared with other layouts.

MEMORY.md is loaded into every session and silently degrades past its read limit (~24 KB), so dream
keeps it within 17 KB (seed 001, "Rebuild MEMORY.md"). An index over that target is reported here,
and one past the read limit gets a `trim_budget` (the rebuild that trims hooks at word boundaries
belongs to apply); below the limit every hook is loaded, so the author's are left as written.

Nothing is proposed that apply would skip every time for a reason the reader knew (`uneditable`):
the drift of an index apply leaves as it is and its size past the read limit are findings saying
so, a memory it never moves or edits gets a finding and no action.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ...config import Settings
from ...kinds import ActionKind, FindingKind
from ...actions import BudgetFinding, MergeDuplicateAction
from ...kinds import StaleClass, retires
from ...model import Action, Corpus, Finding
from ...rules.index_drift import index_drift
from ...rules.outcome import Outcome
from ...storage.since_plan import DiskReads
from ...storage.text_edits import TEXT_EDIT_KINDS
from ...text.counts import plural
from . import index_rebuild
from .decisions import INDEX_KINDS, StaleInfo, decide
from .memory_md import MAX_LINES
from .paths import folder_of
from .uneditable import Left, archives_left, held_in_index, memory_left, uneditable_indexes


def over(corpus: Corpus, measure: str, limit: int) -> list[tuple[str, int]]:
    """(MEMORY.md, its size) for each index whose `measure`, as the reader took it, is over `limit`."""
    return [(index, size) for index, size in sorted(corpus.extra.get(measure, {}).items()) if size > limit]


def index_budget(corpus: Corpus, budget: int, load_bytes: int) -> Outcome:
    """An index past what Claude Code loads is trimmed (its hooks, never its entries); one only over
    the 17 KB target is reported, its hand-written hooks left as written: they are all loaded. One
    apply leaves as it is (`uneditable`) is not trimmed, and its finding says so."""
    out = Outcome()
    left = uneditable_indexes(corpus) if over(corpus, "index_bytes", load_bytes) else {}
    for index, size in over(corpus, "index_bytes", budget):
        if size <= load_bytes:
            out.findings.append(BudgetFinding(
                kind=FindingKind.NEAR_BUDGET, targets=[index], size=size, budget=budget,
                reason=f"{size} bytes, over the {budget}-byte MEMORY.md target but within the {load_bytes} Claude Code loads: "
                       "hooks are left as written"))
            continue
        over_load = f"{size} bytes, over the {load_bytes} bytes of MEMORY.md Claude Code loads"
        if index in left:
            out.findings.append(BudgetFinding(kind=FindingKind.OVER_BUDGET, targets=[index], size=size, budget=load_bytes,
                                              reason=f"{over_load}: not trimmed, {left_as_it_is(left[index], ActionKind.TRIM_BUDGET)}"))
            continue
        out.findings.append(
            BudgetFinding(kind=FindingKind.OVER_BUDGET, targets=[index], size=size, budget=load_bytes,
                    reason=f"{over_load}: a rebuild trims hooks, never entries")
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


def left_as_it_is(left: Left, kind: str) -> str:
    """What becomes of an index apply leaves as it is (`uneditable.index_left`), where the plan
    would have proposed `kind` of it: why not, and what makes the next plan propose it."""
    return f"{left.being}: {left.then(kind)}"


def unedited_drift(corpus: Corpus) -> Outcome:
    """The drift (files not indexed, entries without a file, repeats) of each index apply leaves as
    it is (`uneditable.index_left`: one the reader reported, a `parse_error` such as a code fence
    never closed, or a symlink), as `manual_review` findings: no `rebuild_index` of it is proposed
    (`without_unedited_indexes`), and without these what it misses went unsaid until it was fixed."""
    left = uneditable_indexes(corpus)
    out = Outcome()
    if not left.keys() & corpus.indexes.keys():
        return out  # the usual store: index_drift's walk of every index is not made for nothing
    for a in index_drift(corpus).actions:  # one target each
        if a.targets[0] in left:
            out.findings.append(Finding(kind=FindingKind.MANUAL_REVIEW, targets=list(a.targets),
                                        reason=f"{a.reason}: left as it is, {left_as_it_is(left[a.targets[0]], ActionKind.REBUILD_INDEX)}"))
    return out


def memories_left(corpus: Corpus) -> Outcome:
    """`manual_review` findings on the memories apply never moves or edits (`uneditable.memory_left`:
    a symlinked topic file, every file of a folder reached through a linked one), one for those of a
    folder left for one reason, and one for each MEMORY.md holding memories it never cuts (a
    symlinked one): no action of the plan archives, merges, consolidates or edits them
    (`without_what_apply_leaves`), and without these why a stale or duplicate one was not proposed
    went unsaid. One only never moved (its folder's archive left, `uneditable.archive_left`) is
    said so: its text edits are still proposed."""
    left, unarchived = memory_left(corpus, moving=False), archives_left(Path(corpus.root))
    files: dict[tuple[str, str, str], list[str]] = {}  # (folder, what apply never does, why) -> the files left for it
    held: dict[str, list[str]] = {}  # MEMORY.md -> why each memory kept inside it is left
    for m in corpus.memories:
        index = held_in_index(m.key)
        why, never = left(m.key), "archives, merges, consolidates or edits"
        if why is None and index is None:
            why, never = unarchived(m.key), "archives, merges or consolidates"
        if why is None:
            continue
        if index is not None:
            held.setdefault(index, []).append(why)
        else:
            files.setdefault((folder_of(m.key), never, why), []).append(m.key)
    out = Outcome()
    for (_, never, why), keys in sorted(files.items()):
        them, it = ("a memory", "it") if len(keys) == 1 else (f"{len(keys)} memories", "them")
        out.findings.append(Finding(kind=FindingKind.MANUAL_REVIEW, targets=sorted(keys),
                                    reason=f"read as {them}, but apply never {never} {it} ({why})"))
    for index, whys in sorted(held.items()):
        out.findings.append(Finding(kind=FindingKind.MANUAL_REVIEW, targets=[index], reason=(
            f"{plural(len(whys), 'memory', 'memories')} kept inside it, which apply never cuts, merges or archives ({whys[0]})")))
    return out


def rules(corpus: Corpus, settings: Settings) -> Outcome:
    claude = settings.claude
    return (index_budget(corpus, claude.index_budget_bytes, claude.index_load_bytes)
            .extend(index_lines(corpus)).extend(unedited_drift(corpus)).extend(memories_left(corpus)))


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


def archived_by_apply(corpus: Corpus, actions: list[Action]) -> set[str]:
    """The memories the bare `apply` archives of `actions` (a merge's duplicates, prunes, a
    consolidation's members: `decisions.decide`, as apply will); what needs the user is not counted,
    it may be declined."""
    automatic = [a for a in actions if not a.needs_user and retires(a.kind)]
    return set(decide(corpus, automatic, None, memory_left(corpus), StaleInfo(None)).retire) if automatic else set()


def without_edits_of_archived(actions: list[Action], archived: set[str]) -> list[Action]:
    """`actions` without a text edit (absolutize_dates, update_ref) of a memory the bare `apply`
    archives in the same run (`archived`: `archived_by_apply`): apply moves the file into the
    archive as it was and skips the edit, every time. Beside an archive that waits for the user
    the edit stays."""
    return [a for a in actions if not (a.kind in TEXT_EDIT_KINDS and a.targets and all(t in archived for t in a.targets))]


def without_settled_drift(corpus: Corpus, actions: list[Action], archived: set[str]) -> list[Action]:
    """`actions` with no `rebuild_index` reason the bare `apply` settles anyway: a file it archives
    (a merge's duplicate, a prune, a consolidation's member: `decisions.decide`, as apply will)
    needs no entry and leaves no repeated line, its run's own index edits taking its lines away. A
    rebuild with no other reason goes (applied, it was skipped: the index already up to date); one
    with others names only those. What needs the user settles nothing: it may be declined, and the
    rebuild applied without it must index the file. `archived`: `archived_by_apply`."""
    if not archived or not any(a.kind == ActionKind.REBUILD_INDEX for a in actions):
        return actions
    left = {a.targets[0]: a.reason for a in index_drift(corpus, archived).actions}  # one target each
    out: list[Action] = []
    for a in actions:
        if a.kind == ActionKind.REBUILD_INDEX and a.targets:
            if a.targets[0] not in left:
                continue
            a = a.model_copy(update={"reason": left[a.targets[0]]}) if a.reason != left[a.targets[0]] else a
        out.append(a)
    return out


def without_unedited_indexes(corpus: Corpus, actions: list[Action]) -> list[Action]:
    """`actions` without a `rebuild_index` or `trim_budget` of an index apply leaves as it is
    (`uneditable.index_left`): apply would skip it every time, and the findings say why (its drift,
    `unedited_drift`'s; its size, `index_budget`'s)."""
    left = uneditable_indexes(corpus) if any(a.kind in INDEX_KINDS for a in actions) else {}
    return [a for a in actions if not (a.kind in INDEX_KINDS and a.targets and a.targets[0] in left)]


# What the writer archives or edits the memories of: each target (a merge's but its survivor) one
# apply never moves or edits makes it skip it, or, a prune or merge of several, leave that one.
MOVES_OR_EDITS = (ActionKind.PRUNE_STALE, ActionKind.MERGE_DUPLICATE, ActionKind.CONSOLIDATE, *TEXT_EDIT_KINDS)


def without_what_apply_leaves(corpus: Corpus, actions: list[Action]) -> list[Action]:
    """`actions` without what apply would skip every time because the memories they name are never
    moved or edited (`uneditable.memory_left`, the writer's `decide` and text edits ask the same; a
    text edit asks it of an edit in place, which its folder's archive left does not stop): a
    prune, consolidation or text edit of one goes, a merge or prune of several keeps the others (a
    merge needs a member to retire besides its survivor, which stays). `memories_left` says why. A
    conflict stays: it is the user's to settle by hand, and its reason says `--resolve` leaves it."""
    if not any(a.kind in MOVES_OR_EDITS for a in actions):
        return actions
    moved, edited = memory_left(corpus), memory_left(corpus, moving=False)
    out: list[Action] = []
    for a in actions:
        left = edited if a.kind in TEXT_EDIT_KINDS else moved  # an edit in place writes nothing into the archive
        if a.kind not in MOVES_OR_EDITS or not any(left(t) for t in a.targets):
            out.append(a)
        elif a.kind == ActionKind.PRUNE_STALE and (kept := [t for t in a.targets if not left(t)]):
            out.append(a.model_copy(update={"targets": kept}))
        elif a.kind == ActionKind.MERGE_DUPLICATE and a.survivor and (members := [
                t for t in a.targets if t != a.survivor and not left(t)]):
            out.append(_merge_of(a, members))
    return out


def conflicts_left(corpus: Corpus, actions: list[Action], dated: list[Action]) -> list[Action]:
    """`dated` (`decisions.newer_sides` of `actions`, one for one) with each conflict a side of which
    apply never moves or notes (`uneditable.memory_left`) as it is in `actions`, its reason saying
    that `--resolve` leaves it, and why: the user settles it by hand (`without_what_apply_leaves`
    keeps it, the one statement of the contradiction), and no side is said to be archived."""
    if not any(a.kind == ActionKind.CONFLICT for a in actions):
        return dated
    left = memory_left(corpus)
    out: list[Action] = []
    for a, d in zip(actions, dated, strict=True):
        sides = list(dict.fromkeys(a.targets))[:2] if a.kind == ActionKind.CONFLICT else []  # as `decisions.decide` reads them
        whys = [f"{t}: {why}" for t in sides if (why := left(t))]
        out.append(a.model_copy(update={"reason": f"{a.reason}; --resolve leaves it ({'; '.join(whys)}): settle it by hand"})
                   if whys else d)
    return out


def _merge_of(merge: Action, members: list[str]) -> Action:
    """`merge` retiring only `members` (besides its survivor, which stays): a plan's `handover`
    named among them."""
    update: dict[str, object] = {"targets": [t for t in merge.targets if t == merge.survivor or t in members]}
    if isinstance(merge, MergeDuplicateAction) and merge.handover is not None:
        update["handover"] = [t for t in merge.handover if t in members]
    return merge.model_copy(update=update)


# At most this many actions that need the user and can change an index are each said with what
# applying it does: each costs a dry run of the rebuild (two where the bare apply rebuilds their
# folder). Past it, the first of them in a folder says what selecting them all does.
EACH_SAID = 12


def explain(corpus: Corpus, actions: list[Action], settings: Settings) -> list[Action]:
    """The plan's final actions, with what applying them does to each MEMORY.md beyond its entries
    (hooks shortened, lines past what Claude Code loads) added to their reasons: the user reads it
    before apply, not only in the run's notes after.

    Which hand-written hooks a rebuild shortens depends on all the run does to the index (a
    consolidation's one entry for two long ones can keep it within what Claude Code loads, where the
    rebuild alone must cut), so each is said for a set of actions the user can apply:
    - the bare `apply` (the actions not needing the user), on the first of them asking for the
      index's rebuild, else changing its folder;
    - when the bare apply rebuilds the index, its other actions applied without the rebuild
      (`--select` of them), on the first of them;
    - each action that needs the user, on itself: selected with the automatic ones, when that says
      something else than the bare apply, and, when the bare apply rebuilds its index, selected
      alone. What one brings about is its own to say, never the automatic rebuild's (reckoned with
      it, a plan promised 75 hooks kept that a bare apply cut), nor another's (reckoned with a second
      consolidation, it promised hooks kept that selecting the first cut).
    Apply does not keep a promise instead: an index past what Claude Code loads is cut off unread,
    worse than a hook shortened."""
    said = _consequences_by_set(corpus, settings)
    out = list(actions)

    def tell(i: int | None, what: list[str] | None, label: str = "applying it") -> None:
        if i is not None and what:
            out[i] = _saying(out[i], label, what)

    automatic = [a for a in actions if not a.needs_user]  # what `apply --yes` runs (`apply.select_actions`)
    rebuilds = _rebuilds_by_folder(automatic)
    bare = said(automatic)
    own = said([a for a in automatic if a.kind not in INDEX_KINDS]) if rebuilds else {}
    for index_key in sorted(set(bare) | set(own)):
        changes = [i for i, a in enumerate(out) if not a.needs_user and a.kind not in INDEX_KINDS and _in_folder_of(a, index_key)]
        asks = [i for i, a in enumerate(out) if not a.needs_user and a.kind in INDEX_KINDS and index_key in a.targets]
        tell(next(iter(asks + changes), None), bare.get(index_key))
        if asks and changes:
            tell(changes[0], own.get(index_key))

    # Only what archives memories (and writes a consolidation's file) or asks for a rebuild changes
    # what the rebuild is given (`decisions.decide`): selecting anything else says what the bare apply does.
    asked = [i for i, a in enumerate(actions) if a.needs_user and (retires(a.kind) or a.kind in INDEX_KINDS)]
    if len(asked) > EACH_SAID:
        return _said_for_all(out, asked, said, bare, rebuilds)
    for i in asked:
        action = actions[i]
        rebuilt = any(folder_of(t) in rebuilds for t in action.targets)
        alone = said([action]) if rebuilt and action.kind not in INDEX_KINDS else {}
        with_automatic = said([a for a in actions if not a.needs_user or a is action])
        for index_key in sorted(k for k in set(alone) | set(with_automatic) if _in_folder_of(action, k)):
            rebuild = rebuilds.get(folder_of(index_key))
            if rebuild:
                tell(i, alone.get(index_key))
            if with_automatic.get(index_key) != bare.get(index_key):
                tell(i, with_automatic.get(index_key), f"applying it with {rebuild} too" if rebuild else "applying it")
    return out


def _said_for_all(
    out: list[Action], asked: list[int], said: Callable[[list[Action]], dict[str, list[str]]],
    bare: dict[str, list[str]], rebuilds: dict[str, str],
) -> list[Action]:
    """`out` with, past `EACH_SAID` actions asked, what selecting every one of them with the
    automatic ones does to an index, on the first of them changing its folder, in words saying so."""
    everything = said([a for i, a in enumerate(out) if not a.needs_user or i in asked])
    for index_key in sorted(everything):
        first = next((i for i in asked if _in_folder_of(out[i], index_key)), None)
        if first is None or everything[index_key] == bare.get(index_key):
            continue
        rebuild = rebuilds.get(folder_of(index_key))
        others = plural(len(asked) - 1, "other action that needs you and archives memories", "other actions that need you and archive memories")
        label = f"applying it with the {others}" + (f", and {rebuild} too" if rebuild else "")
        out[first] = _saying(out[first], label, everything[index_key])
    return out


def _saying(action: Action, label: str, what: list[str]) -> Action:
    """`action` with `label: what` (what applying it does to an index) added to its reason."""
    return action.model_copy(update={"reason": f"{action.reason}; {label}: {'; '.join(what)}"})


def _rebuilds_by_folder(actions: list[Action]) -> dict[str, str]:
    """What of `actions` asks for each folder's MEMORY.md to be rebuilt, by folder, in words
    (`trim_budget and rebuild_index`): the label of a clause reckoned with them."""
    kinds: dict[str, list[str]] = {}
    for a in actions:
        if a.kind in INDEX_KINDS:
            for t in a.targets:
                kinds.setdefault(folder_of(t), []).append(a.kind)
    return {folder: " and ".join(dict.fromkeys(k)) for folder, k in kinds.items()}


def _in_folder_of(action: Action, index_key: str) -> bool:
    """Whether `action` touches the folder of `index_key` (its MEMORY.md, or a file beside it)."""
    return any(folder_of(t) == folder_of(index_key) for t in action.targets)


def _consequences_by_set(corpus: Corpus, settings: Settings) -> Callable[[list[Action]], dict[str, list[str]]]:
    """`index_rebuild.consequences` of an action set, each set computed once: a plan without actions
    that need the user, or without a rebuild, asks the same set more than once (each is a dry run of
    the rebuild)."""
    done: dict[tuple[int, ...], dict[str, list[str]]] = {}
    disk = DiskReads(Path(corpus.root), settings.max_file_bytes)  # the files every dry run reads, read once

    def said(chosen: list[Action]) -> dict[str, list[str]]:
        key = tuple(id(a) for a in chosen)
        if key not in done:
            done[key] = index_rebuild.consequences(corpus, chosen, settings, disk)
        return done[key]

    return said
