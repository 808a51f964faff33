"""Members of a consolidation still on disk (CRUX seed 000, steps 7b and 13): `merged_into`.

A consolidation writes one memory whose `consolidated_from` lists its members' ids, then archives
the members to `{compressionSourceArchive}/{yyyymmdd}/` and deletes them from the working folders
(13.6-7). A member still there is a leftover of a consolidation cut short: it is not indexed as a
memory of its own (the owner's index is left as it is about it), never grouped into another
consolidation, and its archive is proposed to the user (`rules/leftovers.py`).

A listed name reaches a memory by its written `id`; a memory without one by the id the seed gives a
memory (`sha256(title)[:7]`, which the real store's `consolidated_from` lists for its id-less
members) or by its slug (what this tool lists for a member without an id). Because being named
takes a memory out of the store, a name links only when nothing about it is in doubt:

- the name reaches exactly one memory, counting the files already in `compressionSourceArchive`
  (where finished consolidations put their members): an id two files share, a written id equal to
  another memory's title hash, or a name an archived member already answers to names no live
  memory. An archived copy byte for byte the same as the live file is that memory's own copy (step
  13.6 done, 13.7 not), not another owner;
- holder and member are live memories, by their `type` and by their folder (neither in an
  `archived` one), in the same scope (a base memory is never a member of an agent's consolidation,
  nor one agent's of another's), and the holder is not the member itself, nor a volume of the
  member's own `consolidation_topic` (volumes share the topic's full list);
- the member was created no later than the consolidation's day (`consolidated_on`): a memory
  written afterwards reuses the name but was never merged. Either date unknown: no link;
- no chain of holders comes back to where it started (A lists B and B lists A: each would take the
  other away).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from typing import Sequence

from ...config import CruxConfig
from ...model import Memory

ARCHIVED = "archived"
BY_ID = "id"
BY_TITLE_HASH = "title hash"
BY_SLUG = "slug"
ARCHIVED_COPY = "archived_copy"  # extra key of a file read from compressionSourceArchive
DECLARED_TYPE = "declared_type"  # extra key: the `type` field, where `Memory.type` is `type_of` (`declared_type`)
# The keys a move records (seed step 13, "Moving Files"): the move also sets `modified` to its day.
MOVED_KEYS = ("promoted_from", "demoted_from")


def seed_id(title: str) -> str:
    """The id the seed gives a memory: the first 7 hex digits of sha256 of its title (step 7b)."""
    return hashlib.sha256(title.encode("utf-8")).hexdigest()[:7]


def names_of(m: Memory) -> list[tuple[str, str]]:
    """The names a `consolidated_from` entry may reach `m` by, and how each was found."""
    if m.id:
        return [(m.id, BY_ID)]
    names = [(seed_id(m.title), BY_TITLE_HASH)] if m.title else []
    return names + [(m.slug, BY_SLUG)]


def is_archived(m: Memory) -> bool:
    """Typed `archived`, or in an `archived` type folder whatever its `type` says: the one answer the
    rules (no promotion, demotion, archive, rule promotion, consolidation or compression of an
    archived memory) and the members' links (holder and member are live: not archived) share.

    The seed's file move (step 13, "File Move Procedure") moves the file into `{type}/` first and
    sets `type` after: a file in `archived/` still typed `learning` is an archive cut short, not a
    learning to promote out of the archive, demote into `idea/` or archive onto itself."""
    return declared_type(m) == ARCHIVED or m.extra.get("folder_type") == ARCHIVED


def declared_type(m: Memory) -> str | None:
    """Its `type` field as the file writes it (its type folder's when it writes none). The reader
    keeps it apart (`DECLARED_TYPE`) because `Memory.type` is `type_of`; a memory made elsewhere
    (a test's, say) has only `Memory.type`, which then is the field."""
    declared: str | None = m.extra.get(DECLARED_TYPE, m.type)
    return declared


def effective_type(declared: str | None, folder: str | None, crux: CruxConfig) -> str | None:
    """`archived` when either says so (`is_archived`), else the type folder's type (one of
    `typePriority`) when the file sits in one, else its `declared` type: what `type_of` answers,
    from the parts the reader has before the memory. A file typed `archived` in `learning/` is read
    as archived everywhere, the index and the REM summary included: the agent must not load it as a
    learning while the rules leave it alone as archived."""
    if ARCHIVED in (declared, folder):
        return ARCHIVED
    if folder and folder in crux.typePriority:
        return folder
    return declared


def type_of(m: Memory, crux: CruxConfig) -> str | None:
    """The type the rules judge a memory by (`effective_type`): `archived` when its field or its
    folder says so, else its type folder's when it sits in one, else its `type` field. The reader gives it as `Memory.type`,
    so everything that reads a crux memory's type (grouping, conflicts, the index, the REM summary)
    reads this one.

    The seed's file move (step 13, "File Move Procedure") moves the file into `{new_type}/` first
    and sets `type` after: a file in `learning/` still typed `idea` is a move cut short, and the
    folder says where it went. Judged by its `type`, it would be promoted or demoted into the
    folder it is already in, which apply skips ("already in") and the next plan offers again."""
    return effective_type(declared_type(m), m.extra.get("folder_type"), crux)


def folder_type(m: Memory, crux: CruxConfig) -> str | None:
    """The type of the type folder it sits in (one of `typePriority`, or `archived`), or None."""
    folder: str | None = m.extra.get("folder_type")
    return folder if folder and (folder in crux.typePriority or folder == ARCHIVED) else None


def type_mismatch(m: Memory, crux: CruxConfig) -> bool:
    """Its `type` field (`declared_type`) disagrees with the type folder it sits in."""
    folder = folder_type(m, crux)
    return folder is not None and declared_type(m) != folder


def consolidated_on(m: Memory) -> dt.date | None:
    """The day the consolidation wrote `m`: its `modified`, which step 7b sets to that day and nothing
    in the consolidation changes (`created` is the members' earliest, not the consolidation's). A
    move since (`promoted_from`/`demoted_from`, this tool's or the seed's) set `modified` to the
    move's day: then the consolidation's day is unknown (None), as it is without a `modified`."""
    if any(m.meta.get(k) for k in MOVED_KEYS):
        return None
    return m.modified


def after_consolidation(day: dt.date | None, holder: Memory) -> bool | None:
    """Whether `day` is later than the holder's consolidation; None when either date is unknown."""
    done = consolidated_on(holder)
    if day is None or done is None:
        return None
    return day > done


def _owners(memories: list[Memory], archived: Sequence[Memory]) -> dict[str, list[tuple[Memory, str]]]:
    owners: dict[str, list[tuple[Memory, str]]] = defaultdict(list)
    for m in memories:
        for name, how in names_of(m):
            if all(o is not m for o, _ in owners[name]):
                owners[name].append((m, how))
    for copy in archived:
        sha = copy.extra.get("sha")
        for name, how in names_of(copy):
            if not any(sha and sha in o.read_shas.values() for o, _ in owners[name]):
                owners[name].append((copy, how))
    return owners


def _may_hold(holder: Memory, member: Memory) -> bool:
    if member is holder or is_archived(member) or member.group != holder.group:
        return False
    topic = holder.extra.get("consolidation_topic")
    if topic and topic == member.extra.get("consolidation_topic"):
        return False  # a sibling volume: volumes share the topic's list
    return after_consolidation(member.created, holder) is False


def _holders(memories: list[Memory], archived: Sequence[Memory]) -> dict[str, list[tuple[Memory, str, str]]]:
    """By member key: (holder, the name it lists, how the name reached the member), holders by key."""
    owners = _owners(memories, archived)
    found: dict[str, list[tuple[Memory, str, str]]] = defaultdict(list)
    for holder in sorted(memories, key=lambda m: m.key):
        if is_archived(holder):
            continue
        for name in dict.fromkeys(holder.extra.get("consolidated_from") or []):
            reached = owners.get(name, [])
            if len(reached) != 1:
                continue  # nobody, or a name two memories answer to: it names neither
            member, how = reached[0]
            if member.extra.get(ARCHIVED_COPY):
                continue  # the member is archived already: nothing live is left of it
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


def link_merged_members(memories: list[Memory], archived: Sequence[Memory] = ()) -> None:
    """Mark each leftover member: `merged_into` (its first holder's key), `merged_as` (the name the
    holder lists) and `merged_by` (how that name reached it: id, title hash or slug). `archived`:
    the memory files in `compressionSourceArchive` (`archived_copy`, and `sha`: the file's sha256)."""
    found = _holders(memories, archived)
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
