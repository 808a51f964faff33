"""CRUX with no reference-tracking data at all (issue 11, item 14).

Demotion and archival mean "not referenced for N days". When the tracking folder holds no tracker
for any memory, that is not known: every memory would otherwise be aged from its `created` date and
most of a long-lived store archived in one night. So the moves stay proposals for the user, and one
finding says why.
"""

from __future__ import annotations

from ....config import CruxConfig
from ....model import Action, Corpus, Finding
from ..members import is_archived

UNKNOWN_WHEN_UNTRACKED = ("demote", "archive")


def has_no_usage_data(corpus: Corpus) -> bool:
    live = [m for m in corpus.memories if not is_archived(m)]
    return bool(live) and not corpus.trackers


def without_usage_data(actions: list[Action], corpus: Corpus, crux: CruxConfig) -> list[Action]:
    if not has_no_usage_data(corpus):
        return actions
    note = f"; no tracking data in {crux.trackingDir}, so 'unreferenced' is unknown: you decide"
    return [
        a.model_copy(update={"needs_user": True, "reason": a.reason + note}) if a.kind in UNKNOWN_WHEN_UNTRACKED else a
        for a in actions
    ]


def usage_data_missing(corpus: Corpus, crux: CruxConfig) -> list[Finding]:
    if not has_no_usage_data(corpus):
        return []
    return [
        Finding(
            kind="missing_tracker",
            targets=[],
            reason=(
                f"usage data is missing: reference tracking has no data in {crux.trackingDir} for any memory, "
                "so how long a memory went unreferenced is unknown; nothing is demoted or archived automatically"
            ),
            class_="no_usage_data",
        )
    ]
