"""CRUX step 10, promote to rule: a tracker with `references ≥ promotionToRuleThreshold` flags its
memory as a candidate for a permanent rule. Advisory: the user decides, so `needs_user` is true.
"""

from __future__ import annotations

from ....model import Memory, Tracker
from ....rules.outcome import Outcome
from ....rules.rule_candidates import rule_candidates
from ..members import is_archived


def rule_promotions(memories: list[Memory], trackers: dict[str, Tracker], threshold: int) -> Outcome:
    def references(m: Memory) -> int | None:
        t = trackers.get(m.slug)
        return None if t is None or is_archived(m) else t.references

    return rule_candidates(
        memories,
        references,
        threshold,
        lambda m, n: f"referenced {n} times (threshold: {threshold}): consider a permanent rule",
        lambda m, n: {"title": m.label, "references": n},
    )
