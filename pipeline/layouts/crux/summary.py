"""The REM summary (`{archiveDir}/rem-{yyyymmdd}.md`) in the format of the seed's step 14.

Every section of the seed is written, with its count, even when it is empty, so summaries of
different nights can be compared line by line. Duplicate merges are consolidations of identical
memories and are listed with them; pruned memories are listed as archived. The corpus figures
describe the store as it is after the run.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

from ...actions import MoveAction, PromoteRuleAction
from ...model import Action, Corpus, Memory
from .rules.common import trackers_by_slug
from .rules.rule_promotion import rule_promotions
from ...printable import printable
from .state import Summary


def _q(text: str) -> str:
    # One line per item: a title with line breaks must not forge headings or items of the summary.
    return '"' + " ".join(text.splitlines()) + '"'


def _member(m: Memory) -> str:
    return f"{m.id or m.slug} {_q(m.label)}"


def _skipped_line(a: Action, why: str) -> str:
    title = a.title if isinstance(a, (MoveAction, PromoteRuleAction)) else None
    what = title or ", ".join(a.targets)
    return f"- {a.kind} {_q(what) if title else what}: {why}"


def corpus_lines(after: Corpus, type_priority: list[str]) -> list[str]:
    ms = after.memories
    consolidated = [m for m in ms if m.extra.get("consolidated_from")]
    topics = {m.extra.get("consolidation_topic") or f"key:{m.key}" for m in consolidated}
    volumes = [m for m in ms if m.extra.get("consolidation_topic")]
    multi = {m.extra["consolidation_topic"] for m in volumes}
    types = Counter(m.type or "untyped" for m in ms)
    order = list(type_priority) + sorted(t for t in types if t not in type_priority)
    by_type = ", ".join(f"{t}={types.get(t, 0)}" for t in order)
    compressed = sum(1 for m in ms if m.extra.get("compressed"))
    trackers = trackers_by_slug(after)
    tracked = sum(1 for m in ms if m.slug in trackers)
    return [
        f"- Total memories: {len(ms)} ({len(ms) - len(consolidated)} standalone, {len(consolidated)} consolidated "
        f"across {len(topics)} topics)",
        f"- By type: {by_type}",
        f"- Compressed: {compressed} | Uncompressed: {len(ms) - compressed}",
        f"- Multi-volume topics: {len(multi)} (total volumes: {len(volumes)})",
        f"- Tracked (with .refs.yml): {tracked}",
        f"- Untracked: {len(ms) - tracked}",
    ]


def render_rem_summary(
    now: dt.date, s: Summary, skipped: list[tuple[Action, str]], after: Corpus, type_priority: list[str],
    rule_threshold: int, unit: str,
) -> str:
    trackers = trackers_by_slug(after)
    rules = rule_promotions(sorted(after.memories, key=lambda m: m.key), trackers, rule_threshold).actions
    lines = [f"# REM Sleep Summary — {now.isoformat()}", "", "## Changes Applied", ""]

    def section(title: str, items: list[str]) -> None:
        lines.append(f"### {title}")
        lines.extend(items)
        lines.append("")

    section(f"Promotions ({len(s.promotions)})", [f"- {_q(t)}: {a} → {b}" for t, a, b in s.promotions])
    section(f"Demotions ({len(s.demotions)})", [f"- {_q(t)}: {a} → {b}" for t, a, b in s.demotions])
    section(
        f"Archived ({len(s.archived)})",
        [f"- {_q(t)}: {a} → archived" + (f" ({note})" if note else "") for t, a, note in s.archived],
    )
    merged = sum(len(c["members"]) for c in s.consolidated)
    items = []
    for c in s.consolidated:
        note = f", {c['note']}" if c["note"] else ""
        items.append(f"- {_q(c['title'])} ← {len(c['members'])} memories ({c['combined']} → {c['result']} {unit}{note})")
        items.append("  - " + ", ".join(_member(m) for m in c["members"]))
    section(f"Consolidated ({len(s.consolidated)} groups, {merged} memories merged)", items)
    section(
        f"Volume Rebalanced ({len(s.rebalanced)} topics)",
        [f'- topic "{t}": {a} → {b} volumes ({why})' for t, a, b, why in s.rebalanced],
    )
    section(
        f"Compressed ({len(s.compressed)})",
        [f"- {_q(t)}: {a} → {b} {unit} ({pct}% reduction)" for t, a, b, pct in s.compressed],
    )
    section(
        f"Strength Rebalanced ({len(s.strength)})",
        [f"- {_q(t)}: tracker strength {'none' if a is None else a} → {b}" for t, a, b in s.strength],
    )
    section(f"Conflicts Resolved ({len(s.conflicts)})", [f"- {_q(a)} vs {_q(b)}: {how}" for a, b, how in s.conflicts])
    section(f"Cleaned Up ({len(s.cleaned)})", [f"- {name} (orphaned)" for name in s.cleaned])
    section(
        f"Rule Promotion Candidates ({len(rules)})",
        [f"- {_q(getattr(r, 'title', r.targets[0]))} ({getattr(r, 'references', 0)} references)" for r in rules],
    )
    lines.append("## Skipped")
    lines.extend(_skipped_line(a, why) for a, why in skipped)
    lines.append("")
    lines.append("## Corpus Summary")
    lines.extend(corpus_lines(after, type_priority))
    return "\n".join(printable(line) for line in lines) + "\n"
