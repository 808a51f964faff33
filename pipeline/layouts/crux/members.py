"""Members of a consolidation still on disk (CRUX seed 000, steps 7b and 13): `merged_into`.

A consolidation writes one memory whose `consolidated_from` lists its members' ids, then archives
the members and deletes them from the working folders (13.6-7). A member still there is a leftover
of a consolidation cut short: its text lives on in the consolidated memory, so it is not indexed as
a memory of its own, never grouped into another consolidation, and archived to finish the job.

A listed name reaches a memory by its written `id`; a memory without one by the id the seed gives a
memory (`sha256(title)[:7]`, which the real store's `consolidated_from` lists for its id-less
members) or by its slug (what this tool lists for a member without an id). Because being named
takes a memory out of the store, a name links only when nothing about it is in doubt:

- the name reaches exactly one memory (an id two files share, or a written id equal to another
  memory's title hash, names neither);
- the holder is live (not archived) and is not the member itself, nor a volume of the member's own
  `consolidation_topic` (volumes share the topic's full list);
- the member was created no later than the consolidation (`modified`, else `created`, of the
  holder): a memory written afterwards reuses the id but was never merged;
- no chain of holders comes back to where it started (A lists B and B lists A: each would take the
  other away).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict

from ...model import Memory

ARCHIVED = "archived"
BY_ID = "id"
BY_TITLE_HASH = "title hash"
BY_SLUG = "slug"


def seed_id(title: str) -> str:
    """The id the seed gives a memory: the first 7 hex digits of sha256 of its title (step 7b)."""
    return hashlib.sha256(title.encode("utf-8")).hexdigest()[:7]


def names_of(m: Memory) -> list[tuple[str, str]]:
    """The names a `consolidated_from` entry may reach `m` by, and how each was found."""
    if m.id:
        return [(m.id, BY_ID)]
    names = [(seed_id(m.title), BY_TITLE_HASH)] if m.title else []
    return names + [(m.slug, BY_SLUG)]


def consolidated_on(m: Memory) -> dt.date | None:
    """The day a consolidated memory was written: its `modified` (step 7b sets it to that day)."""
    return m.modified or m.created


def _owners(memories: list[Memory]) -> dict[str, list[tuple[Memory, str]]]:
    owners: dict[str, list[tuple[Memory, str]]] = defaultdict(list)
    for m in memories:
        for name, how in names_of(m):
            if all(o is not m for o, _ in owners[name]):
                owners[name].append((m, how))
    return owners


def _may_hold(holder: Memory, member: Memory) -> bool:
    if member is holder:
        return False
    topic = holder.extra.get("consolidation_topic")
    if topic and topic == member.extra.get("consolidation_topic") and holder.group == member.group:
        return False  # a sibling volume: volumes share the topic's list
    day = consolidated_on(holder)
    return member.created is None or day is None or member.created <= day


def _holders(memories: list[Memory]) -> dict[str, list[tuple[Memory, str, str]]]:
    """By member key: (holder, the name it lists, how the name reached the member), holders by key."""
    owners = _owners(memories)
    found: dict[str, list[tuple[Memory, str, str]]] = defaultdict(list)
    for holder in sorted(memories, key=lambda m: m.key):
        if holder.type == ARCHIVED:
            continue
        for name in dict.fromkeys(holder.extra.get("consolidated_from") or []):
            reached = owners.get(name, [])
            if len(reached) != 1:
                continue  # nobody, or a name two memories answer to: it names neither
            member, how = reached[0]
            if _may_hold(holder, member) and all(h is not holder for h, _, _ in found[member.key]):
                found[member.key].append((holder, name, how))
    return found


def _in_cycle(start: str, into: dict[str, str]) -> bool:
    seen = {start}
    key = into.get(start)
    while key is not None:
        if key in seen:
            return True
        seen.add(key)
        key = into.get(key)
    return False


def link_merged_members(memories: list[Memory]) -> None:
    """Mark each leftover member: `merged_into` (its first holder's key), `merged_as` (the name the
    holder lists) and `merged_by` (how that name reached it: id, title hash or slug)."""
    found = _holders(memories)
    into = {key: holders[0][0].key for key, holders in found.items()}
    for m in memories:
        holders = found.get(m.key)
        if not holders or _in_cycle(m.key, into):
            continue
        holder, name, how = holders[0]
        m.extra["merged_into"] = holder.key
        m.extra["merged_as"] = name
        m.extra["merged_by"] = how


def absorbed(m: Memory) -> bool:
    """A member a live consolidated memory already holds (see the module's rules)."""
    return bool(m.extra.get("merged_into"))
