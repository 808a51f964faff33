"""The deterministic fields of a consolidated memory (CRUX seed 000, step 7b), computed by code.

The model writes title, description and body; everything here comes from the members:
id = sha256(title)[:7] (a volume: sha256("{topic} part {n}")[:7]); type = the members' type that
comes first in `typePriority` (types it does not list come last); strength = the sum of the
strengths the members have (as the writer checks it); created = the earliest; modified = --now;
source = the most frequent, the one seen earliest on a tie; tags = the union in order of first
appearance (members oldest first); consolidated_from = the members' ids (a member without an id
contributes its slug; a volume contributes its own list: the full list of the topic).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections import Counter
from pathlib import PurePosixPath
from typing import Any, Iterable, Sequence

from ...config import CruxConfig
from ...model import Memory
from ...rules.text import normalize

SLUG_MAX = 60


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:7]


def volume_hash(topic: str, part: int) -> str:
    return short_hash(f"{topic} part {part}")


def top_type(types: Iterable[str | None], priority: Sequence[str]) -> str:
    ranked = sorted({t for t in types if t}, key=lambda t: (priority.index(t) if t in priority else len(priority), t))
    return ranked[0] if ranked else "learning"


def strength_sum(members: Iterable[Memory]) -> int:
    return sum(m.strength for m in members if m.strength is not None and m.strength > 0)


def earliest(members: Iterable[Memory], now: dt.date) -> dt.date:
    dates = [m.created for m in members if m.created]
    return min(dates) if dates else now


def source_mode(members: Sequence[Memory]) -> str | None:
    """The most frequent source; on a tie the one whose first member (oldest first) comes first."""
    order = [m.source for m in members if m.source]
    if not order:
        return None
    counts = Counter(order)
    return sorted(counts, key=lambda s: (-counts[s], order.index(s)))[0]


def tag_union(members: Iterable[Memory]) -> list[str]:
    seen: dict[str, str] = {}
    for m in members:
        for t in m.tags:
            seen.setdefault(t.lower(), t)
    return list(seen.values())


def consolidated_from(members: Iterable[Memory]) -> list[str]:
    out: dict[str, None] = {}
    for m in members:
        if m.extra.get("consolidation_topic") and m.extra.get("consolidated_from"):
            for member_id in m.extra["consolidated_from"]:
                out.setdefault(str(member_id), None)
        else:
            out.setdefault(m.id or m.slug, None)
    return list(out)


def slug_words(text: str, limit: int = SLUG_MAX) -> str:
    """A file-name slug cut at a word boundary."""
    words = normalize(text).split()
    slug = ""
    for w in words:
        candidate = f"{slug}-{w}" if slug else w
        if len(candidate) > limit:
            break
        slug = candidate
    return slug or (words[0][:limit] if words else "memory")


def unique_slug(base: str, taken: set[str]) -> str:
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def crux_folder(member: Memory, type_: str, crux: CruxConfig) -> str:
    """`{memoriesDir}/{type}` or, for agent scope, `{agentMemoriesDir}/{agent}/{type}`; the folder
    `member` is in when the type (a memory's own front matter says it) is no plain folder name
    ("../../x", "/tmp/x"): a plan must not propose a file outside the store, even one apply refuses."""
    if not _FOLDER_NAME.fullmatch(type_):
        return str(PurePosixPath(member.key).parent)
    if member.extra.get("scope") == "agent" and member.extra.get("agent"):  # a folder the member is in
        return str(PurePosixPath(crux.storage.agentMemoriesDir) / member.extra["agent"] / type_)
    return str(PurePosixPath(crux.storage.memoriesDir) / type_)


_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def crux_frontmatter(title: str, description: str, members: Sequence[Memory], crux: CruxConfig, now: dt.date) -> dict[str, Any]:
    fm: dict[str, Any] = {
        "id": short_hash(title),
        "title": title,
        "description": description,
        "type": top_type((m.type for m in members), crux.typePriority),
        "strength": strength_sum(members),
        "created": earliest(members, now).isoformat(),
        "modified": now.isoformat(),
    }
    source = source_mode(members)
    if source:
        fm["source"] = source
    fm["tags"] = tag_union(members)
    fm["consolidated_from"] = consolidated_from(members)
    return fm


def plain(value: Any) -> Any:
    """Front-matter values as plain JSON (dates as YYYY-MM-DD)."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()[:10] if not isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
