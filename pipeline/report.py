"""The terminal report of a plan: counts first, then one section per kind, like the seeds' reports.

Plain text with a fixed layout so the same plan always prints the same bytes, whatever the terminal.
"""

from __future__ import annotations

from collections import Counter

from .model import Action, Finding, Plan
from .printable import printable
from .kinds import QUIET_STALE_CLASSES, FindingKind, action_heading, action_rank, finding_heading, finding_rank

def _action_lines(a: Action) -> list[str]:
    head = ", ".join(a.targets)
    if a.survivor:
        retired = [t for t in a.targets if t != a.survivor]
        head = f"{', '.join(retired)} → {a.survivor}"
    elif a.from_type or a.to_type:
        head = f"{head}  ({a.from_type or '?'} → {a.to_type or '?'})"
    tags = []
    if a.source != "deterministic":
        tags.append(a.source)
    if a.needs_user:
        tags.append("needs you")
    suffix = f"  [{'; '.join(tags)}]" if tags else ""
    return [f"  - {head}{suffix}", f"    {a.reason}"]


def _finding_lines(f: Finding) -> list[str]:
    cls = f" {f.class_}" if f.class_ else ""
    return [f"  - {', '.join(f.targets)}{cls}", f"    {f.reason}"]


def render(plan: Plan) -> str:
    auto = sum(1 for a in plan.actions if not a.needs_user)
    lines = [
        f"=== memconsolidate plan — {plan.layout} store {plan.root} ===",
        f"now {plan.now.isoformat()} · model {plan.model} · {plan.memories} memories",
        f"{len(plan.actions)} actions ({auto} automatic, {len(plan.actions) - auto} need you) · "
        f"{len(plan.findings)} findings · {len(plan.errors)} errors",
        "",
    ]
    action_counts = Counter(a.kind for a in plan.actions)
    finding_counts = Counter(f.kind for f in plan.findings)
    if action_counts or finding_counts:
        lines.append("| Kind | Count |")
        lines.append("|------|-------|")
        for kind in sorted(action_counts, key=lambda k: (action_rank(k), k)):
            lines.append(f"| {kind} | {action_counts[kind]} |")
        for fkind in sorted(finding_counts, key=lambda k: (finding_rank(k), k)):
            lines.append(f"| {fkind} (finding) | {finding_counts[fkind]} |")
        lines.append("")
    for kind in sorted(action_counts, key=lambda k: (action_rank(k), k)):
        lines.append(f"## {action_heading(kind)} ({action_counts[kind]})")
        for a in plan.actions:
            if a.kind == kind:
                lines.extend(_action_lines(a))
        lines.append("")
    for fkind in sorted(finding_counts, key=lambda k: (finding_rank(k), k)):
        lines.append(f"## {finding_heading(fkind)} ({finding_counts[fkind]})")
        quiet: Counter[str] = Counter()
        for f in plan.findings:
            if f.kind != fkind:
                continue
            if fkind == FindingKind.STALE and f.class_ in QUIET_STALE_CLASSES:
                quiet[f.class_] += 1
                continue
            lines.extend(_finding_lines(f))
        if quiet:
            lines.append("  - " + ", ".join(f"{n} {cls}" for cls, n in sorted(quiet.items())) + " (kept; listed in --json)")
        lines.append("")
    if plan.errors:
        lines.append(f"## Errors ({len(plan.errors)})")
        for e in plan.errors:
            lines.append(f"  - {e.stage}: {e.message}")
        lines.append("")
    s = plan.stats
    lines.append(
        f"LLM: {s.llm_calls} calls, {s.cache_hits} cache hits, {s.prompt_tokens}+{s.completion_tokens} tokens, "
        f"${s.cost_usd:.4f}"
    )
    if not plan.actions and not plan.findings:
        lines.append(f"All {plan.memories} memories are current, nothing to do.")
    return _joined(lines)


def _joined(lines: list[str]) -> str:
    # Each line as one line: a file name or reason with a line break cannot forge another.
    return "\n".join(printable(line) for line in lines) + "\n"


def render_run_report(layout: str, run_id: str, now, changes) -> str:
    """The run report written into the store after an apply (markdown, stable order)."""
    lines = [f"# memconsolidate run {run_id}", "", f"- layout: {layout}", f"- date: {now.isoformat()}", ""]
    applied = Counter(a.kind for a in changes.applied)
    lines.append(f"## Applied ({len(changes.applied)})")
    for kind in sorted(applied, key=lambda k: (action_rank(k), k)):
        lines.append(f"### {action_heading(kind)} ({applied[kind]})")
        for a in changes.applied:
            if a.kind == kind:
                lines.append(f"- {', '.join(a.targets)}: {a.reason}")
    lines.append("")
    lines.append(f"## Skipped ({len(changes.skipped)})")
    for a, why in changes.skipped:
        lines.append(f"- {a.kind} {', '.join(a.targets)}: {why}")
    if changes.notes:
        lines.append("")
        lines.append(f"## Notes ({len(changes.notes)})")
        lines.extend(f"- {n}" for n in changes.notes)
    return _joined(lines)
