"""Apply for crux stores (CRUX REM sleep, seed 000 steps 13–15), without ever deleting a file.

The actions are handled in a fixed order, whatever their order in the plan, so one memory can be
named by several actions and the outcome does not depend on the plan's order:

1. `prune_stale` (only planned with --repo), `merge_duplicate`, `conflict` (only under --resolve):
   retired memories and their twins move, bytes unchanged, to
   `{compressionSourceArchive}/{yyyymmdd}/` (a name already there gets `-2`, `-3`...); their
   trackers move to `.../trackers/`. A duplicate merge keeps the survivor, sets its front-matter
   strength to the sum (strength sums are preserved) and `modified` to --now, and merges the
   retired trackers into the survivor's (`merge_trackers`). `--resolve newer` archives the older
   side (by `modified`, then `created`; a tie is left to the user); `keep-both` appends one note
   line to both bodies, once.
2. `remove_orphan_tracker`: the tracker moves to the archive folder.
3. `promote`, `demote`, `archive`: the seed's file-move procedure (target folder by scope and new
   type, the twin moves too, front matter `type`, `promoted_from` or `demoted_from` — an archive
   is a move down, so it records `demoted_from` — and `modified`). A move onto an existing file is
   never done (nor planned: `rules/shared_slugs.py`); trackers are keyed by slug and stay where they are. An `archive` with
   `consolidated_into` (a member a consolidation left behind) is not a type move: the member goes
   where the consolidation would have put it, `{compressionSourceArchive}/{yyyymmdd}/`, with its
   twin and tracker, after the other moves, if the consolidated memory still lists it and this run
   neither archived nor moved it.
4. `consolidate`, `rebalance_volumes`, `compress` (`crux_content`): only on memories no earlier
   step changed, since their content was planned from the old state.
5. `absolutize_dates`, `update_ref` (`edits.py`): replacements in the memory and its twin, in place,
   both files or neither; skipped on a memory an earlier step archived or rewrote.
   `sync_strength`: the tracker's `strength:` line is set to the front-matter value.
6. `promote_rule` is advisory (the user writes the rule): never executed, always listed in the REM
   summary's "Rule Promotion Candidates" (recomputed on the store after the run).

Then the edited memories are written (front-matter changes through `set_keys`: other keys, their
order and quoting, and the body bytes stay), then trackers (a merged tracker is re-rendered; a
strength change is a one-line edit keeping the header and the other keys), the REM summary
`{archiveDir}/rem-{yyyymmdd}.md` (`-2`, `-3`... when one exists for the day), and the index
`storage.indexFile`, rebuilt from the store as it will be (step 15) but written only when what it
records changes (`index.records_the_same`: its entries and their order, not the "Last rebuilt"
comment), entries that rank alike in the order the old index has them; never over an index changed
since the plan, nor listing a memory file added since (`index_write.py`).

Files named by a parse_error finding, and symlinks, are never moved or edited; a memory whose twin
or tracker is such a file is left alone too. Nothing is written when no action applies.
"""

from __future__ import annotations

from ...kinds import ActionKind
from ...changes import ChangeSet
from ...config import Settings
from ...errors import RunFailed
from ...model import Action, Corpus, Tracker
from . import actions as acts
from . import content
from .after import after_corpus
from .index_write import index_write
from .render import set_tracker_strength
from .state import Run
from .summary import render_rem_summary
from .trackers import merge_trackers, render_tracker
from ...storage.files import Unreadable
from ...text.lines import encode_utf8, split_bom
from ...storage.text_edits import TEXT_EDIT_KINDS
from .edits import text_edit

PHASES: list[tuple[str, ...]] = [
    ("prune_stale",),
    ("merge_duplicate",),
    ("conflict",),
    ("remove_orphan_tracker",),
    acts.MOVE_KINDS,
    ("consolidate", "rebalance_volumes"),
    ("compress",),  # after the consolidations: it may compress the file one of them wrote
    TEXT_EDIT_KINDS,  # in place, on memories no earlier step archived or rewrote
    ("sync_strength",),
]
ADVISORY = "advisory: the user writes the rule by hand (listed under Rule Promotion Candidates in the REM summary)"


def _handle(run: Run, a: Action, resolve: str | None) -> None:
    changed = run.changed_since_plan(a)
    if changed:
        run.skip(a, changed)
    elif a.kind == ActionKind.PRUNE_STALE:
        acts.prune(run, a)
    elif a.kind == ActionKind.MERGE_DUPLICATE:
        acts.merge(run, a)
    elif a.kind == ActionKind.CONFLICT:
        acts.conflict(run, a, resolve)
    elif a.kind == ActionKind.REMOVE_ORPHAN_TRACKER:
        acts.orphan(run, a)
    elif a.kind in acts.MOVE_KINDS:
        acts.move(run, a)
    elif a.kind in (ActionKind.CONSOLIDATE, ActionKind.REBALANCE_VOLUMES):
        content.consolidate(run, a)
    elif a.kind == ActionKind.COMPRESS:
        content.compress(run, a)
    elif a.kind == ActionKind.SYNC_STRENGTH:
        acts.sync(run, a)
    elif a.kind in TEXT_EDIT_KINDS:
        text_edit(run, a)


def changes(corpus: Corpus, actions: list[Action], settings: Settings, run_id: str, resolve: str | None) -> ChangeSet:
    try:
        return _changes(Run(corpus, settings, run_id), actions, resolve)
    except Unreadable as exc:
        # The handlers checked their files against the plan; only a file that became unreadable
        # while this run was being built (grown past the size cap, say) gets here.
        raise RunFailed(f"a file of the run can no longer be read ({exc}): nothing applied; run apply again") from None


def _changes(run: Run, actions: list[Action], resolve: str | None) -> ChangeSet:
    order = {id(a): i for i, a in enumerate(actions)}
    handled: set[int] = set()
    # Within a phase, a member's archive (`consolidated_into`) comes after the other moves: it
    # checks that no action of the run archived or moved its consolidated memory.
    phased = sorted(actions, key=lambda a: bool(getattr(a, "consolidated_into", None)))
    for kinds in PHASES:
        for a in phased:
            if a.kind in kinds:
                _handle(run, a, resolve)
                handled.add(id(a))
    for a in actions:
        if id(a) in handled:
            continue
        changed = run.changed_since_plan(a)  # the index as the plan read it: no earlier step writes it
        if changed:
            run.skip(a, changed)
        elif a.kind == ActionKind.REBUILD_INDEX:
            run.applied(a)  # the index is rebuilt after every run that changes something (written if it differs)
        elif a.kind == ActionKind.PROMOTE_RULE:
            run.skip(a, ADVISORY)
        else:
            run.skip(a, f"{a.kind} does not apply to crux stores")
    out = run.out
    out.applied.sort(key=lambda a: order[id(a)])
    out.skipped.sort(key=lambda item: order[id(item[0])])
    if not out.applied:
        out.ops = []
        return out
    _write_memories(run)
    _write_trackers(run)
    _write_summary_and_index(run)
    out.ops = run.ov.ops
    return out


def _write_memories(run: Run) -> None:
    for live in sorted(run.lives.values(), key=lambda x: x.m.key):
        if live.retired_by or not (live.updates or live.notes or live.text_edits):
            continue
        for path in live.files:
            run.ov.write(path, run.edited(path, live.updates, live.notes, live.text_edits.get(path)))


def _write_trackers(run: Run) -> None:
    # Memories sharing a slug share one tracker: a second merge into it builds on the first.
    merged_by_slug: dict[str, Tracker] = {}
    for live in sorted(run.lives.values(), key=lambda x: x.m.key):
        if live.retired_by:
            continue
        slug = live.m.slug
        own = run.tracker_of(slug)
        if live.tracker_merge:
            prior = merged_by_slug.get(slug) or own
            base = [prior] if prior else []
            key = prior.key if prior else run.tracker_path(slug)
            merged = merge_trackers(base + live.tracker_merge, slug, key, live.strength, run.crux.maxReferencesStored)
            if own:
                merged.meta = dict(own.meta)  # unknown keys of the survivor's tracker survive
            merged_by_slug[slug] = merged
            run.ov.write(key, render_tracker(merged).encode("utf-8"))
            continue
        changed = live.strength != live.m.strength
        if own is None or live.strength is None or not (changed or live.tracker_sync) or own.strength == live.strength:
            continue
        data = run.ov.read(own.key)
        text = data.decode("utf-8-sig") if data is not None else None
        edited = set_tracker_strength(text, live.strength) if text is not None else None
        if edited is None:
            run.out.notes.append(f"{own.key}: strength could not be set without rewriting the tracker; left as it was")
            continue
        bom = data is not None and split_bom(data)[0]  # a one-line edit keeps the BOM too
        run.ov.write(own.key, encode_utf8(edited, bom))
        if live.tracker_sync:
            run.summary.strength.append((live.m.label, own.strength, live.strength))


def _write_summary_and_index(run: Run) -> None:
    settings, crux = run.settings, run.crux
    after, primaries = after_corpus(run.root, run.ov, settings, run.unreadable)
    # The index is decided first: a skipped rebuild's reason the summary lists may change with it.
    index = index_write(run, after, primaries)
    summary = render_rem_summary(
        run.now, run.summary, run.out.skipped, after, crux.typePriority, crux.promotionToRuleThreshold, crux.sizeUnit
    )
    path = run.ov.free_variant(f"{crux.storage.archiveDir}/rem-{run.day}.md")
    run.ov.write(path, summary.encode("utf-8"))
    if index.text is None:
        return
    if index.archive_old:
        # The old index could not be read: keep it in the archive rather than write over it.
        run.ov.move(crux.storage.indexFile, run.archive_target(crux.storage.indexFile))
    run.ov.write(crux.storage.indexFile, index.text.encode("utf-8"))
