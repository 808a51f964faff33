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

from ..model import Action, Finding, Memory
from .outcome import Outcome
from .text import normalized_body

_FAR_FUTURE = dt.date.max


def comparable(m: Memory) -> bool:
    """Memories the text rules may group: not excluded by their adapter, with some text."""
    return m.extra.get("compare", True) and bool(normalized_body(m))


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


def _word_set(m: Memory) -> str:
    # The set of words as one string (sorted, distinct, space-joined; a word holds no space): equal
    # exactly when the frozensets are, at a tenth of the memory on a store of 200k memories.
    return " ".join(sorted(set(normalized_body(m).split())))


def duplicate_groups(memories: list[Memory]) -> list[list[Memory]]:
    """Groups of memories whose normalized text is identical, survivor first."""
    return _groups((m for m in memories if comparable(m)), normalized_body)


def reorder_groups(memories: list[Memory]) -> list[list[Memory]]:
    """Groups of memories with equal token sets but more than one normalized text.

    Each returned group holds one representative per distinct normalized text (the survivor of its
    duplicate group), so exact duplicates are not offered to the judge twice.
    """
    representatives: dict[tuple[str, str], list[Memory]] = {}
    for m in memories:
        if comparable(m):
            representatives.setdefault((m.group, normalized_body(m)), []).append(m)
    reps = [sorted(ms, key=survivor_key)[0] for ms in representatives.values()]
    return _groups(reps, _word_set)


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
            out.actions.append(
                Action(
                    kind="merge_duplicate",
                    targets=[survivor.key] + sorted(m.key for m in retired),
                    survivor=survivor.key,
                    reason="normalized text identical",
                )
            )
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
