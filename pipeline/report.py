"""The run report written into a store after an apply: what a run did, by kind.

The plan as a person reads it is `pipeline.render.plan`; this module sits below the layouts, whose
writers put the run report into the store.
"""

from __future__ import annotations

from collections import Counter

from .printable import printable
from .kinds import action_heading, action_rank


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
