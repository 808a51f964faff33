"""Duplicates: identical normalized text merges; equal token sets are only reported.

Groups come from hashing (normalized text, token set) within a memory's group, never from comparing
all pairs, so the rule is linear in the size of the store. One differing word is never a duplicate:
"always publishes" and "never publishes" have different token sets; "Alice manages Bob" and
"Bob manages Alice" share a token set but not a normalized text, so they are a `reorder_candidate`
for the reorder judge and nothing more.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Iterable

from ..actions import MergeDuplicateAction
from ..model import Finding, Memory
from .outcome import Outcome
from .text import normalize

_FAR_FUTURE = dt.date.max
# Set by a reader on a memory no merge may retire (zylos: importance 1-2). Such a duplicate is kept,
# and survives in place of an unprotected survivor; the plan says so, the writer only executes it.
MERGE_PROTECTED = "merge_protected"


def comparable(m: Memory) -> bool:
    """Memories the text rules may group: not excluded by their adapter, with some text."""
    return m.extra.get("compare", True) and bool(normalize(m.body))


def survivor_key(m: Memory) -> tuple:
    """Pinned first, then most corroborated / strongest, then oldest, then key."""
    weight = max(m.corroboration, m.strength or 0)
    # The mtime's UTC date, as every other rule reads it: a local date made the survivor depend on TZ.
    born = m.created or (dt.datetime.fromtimestamp(m.mtime, tz=dt.timezone.utc).date() if m.mtime is not None else _FAR_FUTURE)
    return (not m.pinned, -weight, born, m.key)


def _groups(memories: Iterable[Memory], key_fn) -> list[list[Memory]]:
    buckets: dict[tuple, list[Memory]] = defaultdict(list)
    for m in memories:
        buckets[(m.group, key_fn(m))].append(m)
    return [sorted(b, key=survivor_key) for b in buckets.values() if len(b) > 1]


def duplicate_groups(memories: list[Memory]) -> list[list[Memory]]:
    """Groups of memories whose normalized text is identical, survivor first."""
    return _groups((m for m in memories if comparable(m)), lambda m: normalize(m.body))


def reorder_groups(memories: list[Memory]) -> list[list[Memory]]:
    """Groups of memories with equal token sets but more than one normalized text.

    Each returned group holds one representative per distinct normalized text (the survivor of its
    duplicate group), so exact duplicates are not offered to the judge twice.
    """
    representatives: dict[tuple[str, str], list[Memory]] = {}
    for m in memories:
        if comparable(m):
            representatives.setdefault((m.group, normalize(m.body)), []).append(m)
    reps = [sorted(ms, key=survivor_key)[0] for ms in representatives.values()]
    return _groups(reps, lambda m: frozenset(normalize(m.body).split()))


def merge_action(members: list[Memory], reason: str, source: str = "deterministic", needs_user: bool = False) -> MergeDuplicateAction:
    """A merge of `members` (the text rules' survivor first) into one survivor, decided here."""
    survivor = members[0]
    protected = [m for m in members if m.extra.get(MERGE_PROTECTED)]
    instead_of = None
    if protected and survivor not in protected:
        instead_of, survivor = survivor.key, protected[0]
    kept = [m.key for m in protected if m is not survivor]
    return MergeDuplicateAction(
        targets=[m.key for m in members], survivor=survivor.key, kept=kept or None, survivor_instead_of=instead_of,
        reason=reason, source=source, needs_user=needs_user,
    )


def merge_duplicates(memories: list[Memory]) -> Outcome:
    out = Outcome()
    for group in duplicate_groups(memories):
        survivor = group[0]
        retired = [m for m in group[1:] if not m.pinned]
        for kept in (m for m in group[1:] if m.pinned):
            out.findings.append(
                Finding(
                    kind="pinned_skipped",
                    targets=[kept.key],
                    reason=f"pinned: kept although it duplicates {survivor.key}",
                )
            )
        if retired:
            out.actions.append(merge_action([survivor, *sorted(retired, key=lambda m: m.key)], "normalized text identical"))
    return out


def report_reorders(memories: list[Memory]) -> Outcome:
    out = Outcome()
    for group in reorder_groups(memories):
        out.findings.append(
            Finding(
                kind="reorder_candidate",
                targets=sorted(m.key for m in group),
                reason="same words in a different order: merged only if the reorder judge says same meaning",
            )
        )
    return out
