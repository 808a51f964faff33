"""Freshness of zylos reference files, and the entries a fading or stale file should archive.

The seed's Phase 1 rule: a reference file's freshness is its mtime's age against `--now` (active
< 7 days, aging < 30, fading <= 90, stale beyond, as consolidate.js's `freshnessState`). Ages are
whole days between `--now` and the mtime's UTC date, so the plan is the same on every machine.
In a fading or stale file, entries whose Status says they are over (superseded, completed,
abandoned, dropped, archived) move to `archive/`; entries of importance 1-2 are immune to these
age-based suggestions and are only reported, in the file's freshness finding, as kept.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from ....config import Settings, ZylosConfig
from ....actions import ArchiveAction, FreshnessFinding
from ....model import Corpus, Memory
from ....rules.outcome import Outcome
from ....storage.files import mtime_date

OBSOLETE_STATUSES = frozenset({"superseded", "completed", "abandoned", "dropped", "archived"})
REVIEW_BANDS = frozenset({"fading", "stale"})
ADVICE = {
    "active": "no action",
    "aging": "no action",
    "fading": "review entries by their dates and status; archive obsolete ones",
    "stale": "review entries first (stale); archive obsolete ones, keep what is clearly still critical",
}


def age_days(mtime: float, now: dt.date) -> int:
    return (now - mtime_date(mtime)).days


def band(age: int, cfg: ZylosConfig) -> str:
    if age < cfg.freshness_active_days:
        return "active"
    if age < cfg.freshness_aging_days:
        return "aging"
    if age <= cfg.freshness_fading_days:
        return "fading"
    return "stale"


def immune(entry: Memory, cfg: ZylosConfig) -> bool:
    importance = entry.extra.get("importance")
    return isinstance(importance, int) and 1 <= importance <= cfg.immune_importance_max


def obsolete(entry: Memory) -> bool:
    return entry.extra.get("status") in OBSOLETE_STATUSES


def file_freshness(file: Memory, entries: list[Memory], now: dt.date, cfg: ZylosConfig) -> Outcome:
    """The freshness finding of one reference file and the archive actions its band calls for."""
    out = Outcome()
    if file.mtime is None:
        return out
    age = age_days(file.mtime, now)
    cls = band(age, cfg)
    kept: list[str] = []
    if cls in REVIEW_BANDS:
        for entry in sorted(entries, key=lambda m: m.extra.get("line_start", 0)):
            if not obsolete(entry):
                continue
            status = entry.extra["status"]
            if immune(entry, cfg):
                kept.append(entry.key)
                continue
            out.actions.append(
                ArchiveAction(
                    targets=[entry.key],
                    from_type=entry.type,
                    to_type="archived",
                    reason=f"status {status} in a {cls} file ({age} days since {file.key} changed): move to archive/",
                    file=file.key,
                    lines=[entry.extra.get("line_start"), entry.extra.get("line_end")],
                )
            )
    reason = f"last modified {mtime_date(file.mtime).isoformat()}, {age} days before {now.isoformat()}: {ADVICE[cls]}"
    if kept:
        reason += f"; kept (importance 1-{cfg.immune_importance_max}, immune to age-based archival): {', '.join(kept)}"
    out.findings.append(
        FreshnessFinding(targets=[file.key], class_=cls, reason=reason, age_days=age, kept=kept)
    )
    return out


def freshness(corpus: Corpus, settings: Settings) -> Outcome:
    out = Outcome()
    entries: dict[str, list[Memory]] = defaultdict(list)
    for m in corpus.memories:
        if m.extra.get("entry"):
            entries[m.extra["file"]].append(m)
    for m in sorted(corpus.memories, key=lambda m: m.key):
        if m.extra.get("tier") == "reference":
            out.extend(file_freshness(m, entries.get(m.key, []), settings.now, settings.zylos))
    return out
