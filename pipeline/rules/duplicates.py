"""Duplicates: identical normalized text merges; equal token sets are only reported.

Groups come from hashing (normalized text, token set) within a memory's group, never from comparing
all pairs, so the rule is linear in the size of the store. One differing word is never a duplicate:
"always publishes" and "never publishes" have different token sets; "Alice manages Bob" and
"Bob manages Alice" share a token set but not a normalized text, so they are a `reorder_candidate`
for the reorder judge and nothing more. A memory whose body is not all it holds (a zylos entry:
its statement) carries the rest as parts (`MERGE_PARTS`); members whose parts differ are merged
only when the user says so.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from itertools import compress, count
from operator import attrgetter, methodcaller, ne, not_
from typing import Callable, Hashable, Iterable, TypeVar

from ..actions import MergeDuplicateAction
from ..model import Finding, Memory
from .outcome import Outcome
from .text import normalized_body

_FAR_FUTURE = dt.date.max
_K = TypeVar("_K", bound=Hashable)
# Set by a reader on a memory no merge may retire (zylos: importance 1-2). Such a duplicate is kept,
# and survives in place of an unprotected survivor; the plan says so, the writer only executes it.
MERGE_PROTECTED = "merge_protected"
# Set by a reader on a memory whose `body` is not all it holds: {part name: text} of the rest (zylos:
# an entry's title when a field gives its statement, its fields but the dates and importance, its
# notes). A merge archives a retired member whole, so it is automatic only among members whose parts
# are the same too: two entries with one statement and another scope or exception are two memories.
MERGE_PARTS = "merge_parts"


# Whether a memory's adapter lets the text rules compare it, from its `extra` (zylos sets "compare":
# False on its tier files): a C-level callable, so a pass over a whole store can map it.
compared_by_adapter = methodcaller("get", "compare", True)


def comparable_texts(memories: list[Memory]) -> tuple[list[Memory], list[str], list[bool] | None]:
    """The memories the text rules may group (not excluded by their adapter, with some text), their
    normalized texts, and which of `memories` they are: None when all of them (the list itself is
    given back, not a copy: most stores exclude none). By maps over all the memories; a memory its
    adapter excludes is never normalized."""
    allowed = list(map(compared_by_adapter, map(attrgetter("extra"), memories)))
    candidates = memories if all(allowed) else list(compress(memories, allowed))
    texts = list(map(normalized_body, candidates))
    if candidates is memories and all(texts):
        return memories, texts, None
    has_text = iter(list(map(bool, texts)))
    is_live = [a and next(has_text) for a in allowed]  # over `memories`, in their order
    return list(compress(candidates, texts)), list(filter(None, texts)), is_live


def comparable(m: Memory) -> bool:
    """`comparable_texts` of one memory: may the text rules group it?"""
    return bool(comparable_texts([m])[0])


def survivor_key(m: Memory) -> tuple:
    """Pinned first, then most corroborated / strongest, then oldest, then key."""
    weight = max(m.corroboration, m.strength or 0)
    # The mtime's UTC date, as every other rule reads it: a local date made the survivor depend on TZ.
    born = m.created or (dt.datetime.fromtimestamp(m.mtime, tz=dt.timezone.utc).date() if m.mtime is not None else _FAR_FUTURE)
    return (not m.pinned, -weight, born, m.key)


def _by_group(memories: list[Memory], values: list[_K]) -> list[Hashable]:
    """Each memory's value as a key that tells groups apart: (group, value), or the value alone when
    every memory is of one group (a bank, a folder: no tuple per memory)."""
    groups = list(map(attrgetter("group"), memories))
    return list(zip(groups, values)) if len(set(groups)) > 1 else list(values)


def _alike(memories: list[Memory], keys: list[Hashable]) -> tuple[list[int], dict[int, list[Memory]]]:
    """The place of each key's first memory, in order; and for each key seen more than once, by
    that place, all its memories, survivor first (a stable sort: the first of them in the survivor
    order). C-level maps over all the memories, Python steps only over the repeats (on a bank of
    200k records, 5 %). By place, not identity: a list holding one memory twice groups it twice."""
    first_at: dict[Hashable, int] = {}
    held = list(map(first_at.setdefault, keys, count()))  # the place of each key's first memory
    if len(first_at) == len(keys):  # no two alike
        return list(range(len(keys))), {}
    del first_at
    repeats = list(map(ne, held, count()))
    more: dict[int, list[Memory]] = {}
    for at, i in compress(zip(held, count()), repeats):
        members = more.get(at)
        if members is None:
            more[at] = [memories[at], memories[i]]
        else:
            members.append(memories[i])
    for members in more.values():
        members.sort(key=survivor_key)
    return list(compress(count(), map(not_, repeats))), more


def _groups(memories: list[Memory], key_fn: Callable[[Memory], Hashable]) -> list[list[Memory]]:
    """Memories with an equal key in the same group, survivor first, groups in order of first sight."""
    places, more = _alike(memories, _by_group(memories, list(map(key_fn, memories))))
    return [more[p] for p in places if p in more]


def _word_set(m: Memory) -> str:
    # The set of words as one string (sorted, distinct, space-joined; a word holds no space): equal
    # exactly when the frozensets are, at a tenth of the memory on a store of 200k memories.
    return " ".join(sorted(set(normalized_body(m).split())))


@dataclass(frozen=True)
class TextGroups:
    """What both text rules start from, made in one pass over the memories (`text_groups`).

    `duplicates`: the memories of equal normalized text in one group, survivor first, groups in
    the order of their first members. `representatives`: one memory per distinct (group, normalized
    text), its survivor, in the order each text was first seen.
    """

    duplicates: list[list[Memory]]
    representatives: list[Memory]
    texts: list[str]  # each representative's normalized text


def text_groups(memories: list[Memory]) -> TextGroups:
    """The duplicate groups and the representatives, each comparable memory's text looked up once."""
    memories, texts, _ = comparable_texts(memories)
    places, more = _alike(memories, _by_group(memories, texts))
    representatives = list(map(memories.__getitem__, places))
    duplicates: list[list[Memory]] = []
    for j in compress(count(), map(more.__contains__, places)):
        duplicates.append(more[places[j]])
        representatives[j] = more[places[j]][0]  # its survivor
    return TextGroups(duplicates, representatives, list(map(texts.__getitem__, places)))


def reorder_groups(memories: list[Memory], groups: TextGroups | None = None) -> list[list[Memory]]:
    """Groups of memories with equal token sets but more than one normalized text.

    Each returned group holds one representative per distinct normalized text (the survivor of its
    duplicate group), so exact duplicates are not offered to the judge twice.
    """
    groups = groups or text_groups(memories)
    reps = groups.representatives
    # Only a representative whose (group, word set) hashes as another's can be in a group: found by
    # C-level maps over all of them (no Python step per memory), then grouped exactly among those few.
    # In a store of one group (a bank) the word set alone: no tuple per memory.
    word_sets: Iterable[Hashable] = map(frozenset, map(str.split, groups.texts))
    if len(set(map(attrgetter("group"), reps))) > 1:
        word_sets = zip(map(attrgetter("group"), reps), word_sets)
    keys = list(map(hash, word_sets))
    seen = Counter(keys)
    if len(seen) == len(keys):
        return []
    again = {k for k, n in seen.items() if n > 1}
    return _groups(list(compress(reps, map(again.__contains__, keys))), _word_set)


def _part_text(text: str) -> str:
    # Case and spacing only, not `normalized_text`: punctuation in a note can be code (`x > 0`).
    return " ".join(text.casefold().split())


def _parts(m: Memory) -> dict[str, str]:
    parts = m.extra.get(MERGE_PARTS) or {}
    return {name: said for name, text in parts.items() if (said := _part_text(text))}


def differing_parts(members: list[Memory]) -> list[str]:
    """The names of the parts (`MERGE_PARTS`) not the same in all of `members` (a part one member
    lacks differs from the others' text), sorted."""
    each = [_parts(m) for m in members]
    names = sorted(set().union(*each))
    return [name for name in names if len({parts.get(name) for parts in each}) > 1]


def merge_action(members: list[Memory], reason: str, source: str = "deterministic", needs_user: bool = False) -> MergeDuplicateAction:
    """A merge of `members` (the text rules' survivor first) into one survivor, decided here. Members
    whose parts differ (`MERGE_PARTS`) are never merged without the user, whoever proposes it."""
    differ = differing_parts(members)
    if differ:
        needs_user = True
        reason = (f"{reason}, but not the rest ({', '.join(differ)}): merging archives what only the retired say; "
                  "apply it with --select once you have read them")
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


def merge_duplicates(memories: list[Memory], groups: TextGroups | None = None) -> Outcome:
    out = Outcome()
    for group in (groups or text_groups(memories)).duplicates:
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
        retired.sort(key=lambda m: m.key)
        own = _parts(survivor)
        differs = [_parts(m) != own for m in retired]  # `differing_parts` of the two, the survivor's read once
        same = [m for m, d in zip(retired, differs) if not d]
        if same:
            merge = merge_action([survivor, *same], "normalized text identical")
            out.actions.append(merge)
            # The rest goes to the same survivor (a protected member may have taken its place).
            survivor = next(m for m in (survivor, *same) if m.key == merge.survivor)
        other = [m for m, d in zip(retired, differs) if d]
        if other:
            out.actions.append(merge_action([survivor, *other], "normalized text identical"))  # needs the user
    return out


def report_reorders(memories: list[Memory], groups: TextGroups | None = None) -> Outcome:
    out = Outcome()
    for group in reorder_groups(memories, groups):
        out.findings.append(
            Finding(
                kind="reorder_candidate",
                targets=sorted(m.key for m in group),
                reason="same words in a different order: merged only if the reorder judge says same meaning",
            )
        )
    return out
