"""dream's prune guards (seed 001, STEP 2d): FULLY_STALE is necessary, never sufficient, to prune.

Checked in dream's order; the first that holds downgrades the memory to PARTIALLY_STALE (kept and
flagged). A wrong prune is the expensive mistake, so every doubt keeps the memory: a memory whose age
cannot be told is treated as recent, and pinned memories are never pruned in any layout.
"""

from __future__ import annotations

import datetime as dt
import re

from ..model import Memory

LESSON_TYPES = ("feedback", "reference")
_DIRECTIVE = re.compile(r"\b(?:do not|don't|don’t|never|avoid)\b", re.IGNORECASE)


def last_modified(m: Memory) -> dt.date | None:
    """The front-matter date when the memory has one, else the file's mtime (UTC date)."""
    if m.modified is not None:
        return m.modified
    if m.mtime is not None:
        return dt.datetime.fromtimestamp(m.mtime, tz=dt.timezone.utc).date()
    return None


def has_directive(m: Memory) -> bool:
    return bool(_DIRECTIVE.search(m.body) or _DIRECTIVE.search(m.description))


def guard_reason(m: Memory, now: dt.date, guard_days: int) -> str | None:
    """Why a FULLY_STALE memory must be kept anyway, or None when it may be pruned."""
    if m.pinned:
        return "pinned memories are never auto-pruned"
    if m.type == "user":
        return "type:user is never auto-pruned"
    if m.type in LESSON_TYPES:
        return f"type:{m.type} value is the lesson, not its file refs"
    changed = last_modified(m)
    if changed is None:
        return "age unknown, so treated as recent"
    if (now - changed).days < guard_days:
        return f"modified within {guard_days}d ({changed.isoformat()})"
    if has_directive(m):
        return "carries a do-not/never directive"
    return None
