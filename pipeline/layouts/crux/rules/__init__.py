"""The crux layout's rule set (CRUX REM sleep steps 2, 4, 5, 6, 9, 10, 11, and 13.6-7 for members a
consolidation left behind).

Each step is its own module; this one calls them and settles overlaps, one move per memory:
archive beats demote beats promote. A memory that is strong enough to promote but unreferenced past
the demote threshold is demoted (or archived), not promoted: its strength was earned before it went
unused, and the staleness is the newer evidence. The skipped promotion is named in the reason.
A goal past the archive threshold keeps its `goal_review`, and its archive needs the user. With no
tracking data at all, "unreferenced" is unknown: demotions and archives then need the user, and a
finding says the usage data is missing. A member a live consolidation already holds (`merged_into`)
gets no type move: its archive, to finish the consolidation, is proposed to the user (`leftovers.py`).
A move apply cannot make (onto a file of its slug in the target folder) is not proposed: the
`shared_slug` finding names it (`shared_slugs.py`). A memory whose `type` field disagrees with its
type folder is judged by the folder (`members.type_of`: a file move cut short), so no move is into
the folder it is in; a `type_mismatch` finding names it (`consistency.py`).
"""

from __future__ import annotations

from ....kinds import ActionKind, FindingKind, claim_rank
from ....config import Settings
from ....model import Action, Corpus
from .archive import archivals
from .leftovers import leftover_archivals
from ..members import absorbed
from .usage import usage_data_missing, without_usage_data
from .common import existing_files, trackers_by_slug
from .consistency import missing_trackers, orphan_trackers, stale_sources, strength_sync, type_mismatches
from .demote import demotions
from .promote import promotions
from .rule_promotion import rule_promotions
from .shared_slugs import blocked_moves, shared_slug_findings
from ....rules.outcome import Outcome

def _claim(a: Action) -> int:
    rank = claim_rank(a.kind)
    assert rank is not None, a.kind  # only moves (archive, demote, promote) are settled here
    return rank


def settle_moves(moves: list[Action]) -> list[Action]:
    """Keep the strongest move per memory; note a promotion it overrides."""
    best: dict[str, Action] = {}
    promoted: dict[str, Action] = {}
    for a in moves:
        key = a.targets[0]
        if a.kind == ActionKind.PROMOTE:
            promoted[key] = a
        held = best.get(key)
        # archive beats demote beats promote: the plan's claim ranks
        if held is None or _claim(a) < _claim(held):
            best[key] = a
    kept = []
    for key in sorted(best):
        a = best[key]
        p = promoted.get(key)
        if p is not None and a is not p:
            note = f"; not promoted to {p.to_type} ({p.reason}) because it is unreferenced"
            a = a.model_copy(update={"reason": a.reason + note})
        kept.append(a)
    return kept


def rules(corpus: Corpus, settings: Settings) -> Outcome:
    crux, now = settings.crux, settings.now
    store = corpus.extra.get("crux", {})
    trackers = trackers_by_slug(corpus)
    existing = existing_files(corpus)
    memories = sorted(corpus.memories, key=lambda m: m.key)

    # A member a live consolidation already holds is never moved between types on its own usage:
    # the user is asked whether to archive it to finish the consolidation (leftovers.py).
    movable = [m for m in memories if not absorbed(m)]
    promote = promotions(movable, crux, trackers)
    demote = demotions(movable, trackers, crux, now)
    archive = archivals(movable, trackers, crux, now)
    out = Outcome(findings=promote.findings + demote.findings)
    # Settled first: a memory whose due move apply cannot make gets no weaker move in its place.
    moves, blocked = blocked_moves(settle_moves(archive.actions + demote.actions + promote.actions), existing)
    out.actions.extend(without_usage_data(moves, corpus, crux))
    out.extend(leftover_archivals(memories, crux))  # not "unreferenced": tracking data does not bear on it
    out.findings.extend(usage_data_missing(corpus, crux))

    out.extend(orphan_trackers(corpus.trackers, store.get("memory_files") or [m.key for m in memories], store.get("unread_folders")))
    out.extend(strength_sync(memories, trackers))
    out.findings.extend(shared_slug_findings(existing, memories, trackers, blocked, crux.trackingDir))
    out.findings.extend(type_mismatches(memories, crux))
    out.extend(missing_trackers(memories, trackers, crux.trackingDir))
    out.extend(stale_sources(memories, store))
    out.extend(rule_promotions(memories, trackers, crux.promotionToRuleThreshold))
    return out
