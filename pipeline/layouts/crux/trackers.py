"""Reference trackers (`.refs.yml`): render, merge for consolidation, distribute across volumes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import yaml

from ...model import Tracker

HEADER = "# Managed by crux-skill-memory-reference-tracker — do not edit manually\n"


def render_tracker(t: Tracker) -> str:
    data: dict[str, Any] = {"slug": t.slug, "references": t.references}
    if t.last_referenced:
        data["last_referenced"] = t.last_referenced
    if t.strength is not None:
        data["strength"] = t.strength
    data["recent_references"] = t.recent_references
    for key, value in t.meta.items():
        data.setdefault(key, value)
    return HEADER + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)


def _recent_key(r: dict[str, Any]) -> str:
    last = r.get("last")
    return last.isoformat() if isinstance(last, dt.date) else str(last or "")


def merge_trackers(trackers: list[Tracker], slug: str, key: str, strength: int | None, max_refs: int) -> Tracker:
    """Sum references, keep the latest last_referenced, combine recent_references re-capped."""
    dates = [t.last_referenced for t in trackers if t.last_referenced]
    recent = [r for t in trackers for r in t.recent_references if isinstance(r, dict)]
    recent.sort(key=_recent_key, reverse=True)
    return Tracker(
        key=key,
        slug=slug,
        references=sum(t.references for t in trackers),
        last_referenced=max(dates) if dates else None,
        strength=strength,
        recent_references=recent[:max_refs],
    )


def distribute(total: int, weights: list[int], minimum: int = 1) -> list[int]:
    """Split `total` proportionally to `weights` (largest remainder), each part at least `minimum`
    when the total allows it. The parts always sum to `total` unless the minimum forces more."""
    n = len(weights)
    if n == 0:
        return []
    if total <= 0:
        return [0] * n
    floor = minimum if total >= minimum * n else 0
    spare = total - floor * n
    wsum = sum(max(w, 0) for w in weights) or n
    shares = [spare * (max(w, 0) if sum(weights) else 1) / wsum for w in weights]
    parts = [int(s) for s in shares]
    order = sorted(range(n), key=lambda i: (-(shares[i] - parts[i]), i))
    for i in order[: spare - sum(parts)]:
        parts[i] += 1
    return [p + floor for p in parts]
