"""iii's safety cap: at most `max_supersedes_per_run` records retired per run; the rest wait."""

from __future__ import annotations

from ...text.counts import plural
from ...kinds import ActionKind
from ...model import Action, Finding
from ...rules.outcome import Outcome, action_sort_key


def cap_supersedes(actions: list[Action], limit: int) -> Outcome:
    """Keep merges (in plan order) until the cap; report what waits for the next pass."""
    out = Outcome()
    budget = limit
    waiting: list[str] = []
    for action in sorted(actions, key=action_sort_key):
        if action.kind != ActionKind.MERGE_DUPLICATE:
            out.actions.append(action)
            continue
        retired = [t for t in action.targets if t != action.survivor]
        if len(retired) <= budget:
            out.actions.append(action)
            budget -= len(retired)
            continue
        if budget > 0:
            keep = retired[:budget]
            out.actions.append(action.model_copy(update={"targets": [action.survivor, *keep]}))
            waiting.extend(retired[budget:])
            budget = 0
        else:
            waiting.extend(retired)
    if waiting:
        out.findings.append(
            Finding(
                kind="capped",
                targets=sorted(waiting),
                reason=f"max_supersedes_per_run={limit} reached: {plural(len(waiting), 'duplicate')} wait for the next run",
            )
        )
    return out
