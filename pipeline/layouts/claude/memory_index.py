"""MEMORY.md: one line per memory file, sorted, within a byte budget, never dropping an entry.

Dream's rebuild replaced the whole file; here the prose a MEMORY.md also holds is kept, and only the
entry lines are rebuilt (at the place the first entry stood). The binding constraint is bytes (the
file stops loading past its read limit): over the budget, hooks are trimmed at word boundaries to a
per-line budget derived from the overhead, keeping their leading clause; entries are never dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...text.truncate import HOOK_STRIP, shorten

ENTRY = re.compile(r"^\s*[-*]\s+\[(?P<title>[^\]]*)\]\((?P<target>[^)\s]+)\)\s*(?:(?P<sep>—|–|--|-|:)\s*(?P<hook>.*))?$")
DEFAULT_SEP = "—"


@dataclass(frozen=True)
class IndexItem:
    filename: str  # relative to the MEMORY.md folder
    title: str
    hook: str


@dataclass
class RebuiltIndex:
    text: str
    warnings: list[str]
    indexed: list[str]


def parse_entries(text: str) -> dict[str, tuple[str, str]]:
    """Existing entries: target file name -> (title, hook)."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        m = ENTRY.match(line)
        if m and m.group("target").endswith(".md") and "://" not in m.group("target"):
            out.setdefault(m.group("target").lstrip("./"), (m.group("title"), (m.group("hook") or "").strip()))
    return out


def _trim(hook: str, limit: int) -> str:
    return shorten(hook, limit, strip=HOOK_STRIP)


def _line(item: IndexItem, sep: str, hook: str) -> str:
    one_line = " ".join(hook.split())
    return f"- [{item.title}]({item.filename})" + (f" {sep} {one_line}" if one_line else "")


def rebuild(existing: str | None, heading: str, items: list[IndexItem], budget: int, min_hook: int) -> RebuiltIndex:
    items = sorted(items, key=lambda i: i.filename)
    lines = existing.splitlines() if existing else [f"# {heading}", ""]
    sep = DEFAULT_SEP
    keep: list[str] = []
    anchor: int | None = None
    for line in lines:
        m = ENTRY.match(line)
        if m and m.group("target").endswith(".md") and "://" not in m.group("target"):
            if anchor is None:
                anchor = len(keep)
                sep = m.group("sep") or sep
            continue
        keep.append(line)
    if anchor is None:
        while keep and not keep[-1].strip():
            keep.pop()
        keep.append("")
        anchor = len(keep)
    hooks = [" ".join(i.hook.split()) for i in items]

    def render(hs: list[str]) -> str:
        body = keep[:anchor] + [_line(i, sep, h) for i, h in zip(items, hs)] + keep[anchor:]
        return "\n".join(body).rstrip("\n") + "\n"

    text = render(hooks)
    warnings: list[str] = []
    if len(text.encode()) > budget and items:
        overhead = len(render([""] * len(items)).encode())
        per_line = max(0, (budget - overhead) // len(items))
        limit = per_line
        while True:
            trimmed = [_trim(h, limit) for h in hooks]
            text = render(trimmed)
            if len(text.encode()) <= budget or limit <= 0:
                break
            limit -= 4
        if limit < min_hook:
            warnings.append(
                f"index needs hooks under {min_hook} characters to fit {budget} bytes; every entry kept, review it by hand"
            )
        if len(text.encode()) > budget:
            warnings.append(f"index is {len(text.encode())} bytes, over its {budget}-byte budget, with every hook trimmed")
    indexed = sorted(parse_entries(text))
    if indexed != sorted(i.filename for i in items):
        raise AssertionError("rebuilt index is not 1:1 with the files")
    return RebuiltIndex(text=text, warnings=warnings, indexed=indexed)
