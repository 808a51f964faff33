"""CRUX step 10, promote to rule: a tracker with `references ≥ promotionToRuleThreshold` flags its
memory as a candidate for a permanent rule. Advisory: the user decides, so `needs_user` is true.
"""

from __future__ import annotations

from ....model import Action, Memory, Tracker
from .common import is_archived
from ....rules.outcome import Outcome


def rule_promotions(memories: list[Memory], trackers: dict[str, Tracker], threshold: int) -> Outcome:
    out = Outcome()
    for m in memories:
        t = trackers.get(m.slug)
        if t is None or is_archived(m) or t.references < threshold:
            continue
        out.actions.append(
            Action(
                kind="promote_rule",
                targets=[m.key],
                needs_user=True,
                reason=f"referenced {t.references} times (threshold: {threshold}): consider a permanent rule",
                title=m.label,
                references=t.references,
            )
        )
    return out
