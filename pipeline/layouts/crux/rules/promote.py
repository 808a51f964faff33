"""CRUX step 4, promote: `strength ≥ promoteAt` moves a memory to `promoteTo` (values verbatim from config).

`promoteAt: null` (or no transition for the type) is terminal. A `promoteTo` that is not in
`typePriority` is a config problem: the promotion is skipped and reported (seed error table).
"""

from __future__ import annotations

from ....config import CruxConfig
from ....model import Finding, Memory
from .common import is_archived, move_action
from ....rules.outcome import Outcome


def promotions(memories: list[Memory], crux: CruxConfig, existing: set[str]) -> Outcome:
    out = Outcome()
    for m in memories:
        if m.type is None or is_archived(m) or m.strength is None:
            continue
        rule = crux.typeTransitions.get(m.type)
        if rule is None or rule.promoteAt is None or m.strength < rule.promoteAt:
            continue
        because = f"strength {m.strength} ≥ threshold {rule.promoteAt}"
        if not rule.promoteTo or rule.promoteTo not in crux.typePriority:
            what = f"promoteTo {rule.promoteTo!r} is not in typePriority" if rule.promoteTo else "has no promoteTo"
            out.findings.append(
                Finding(
                    kind="config_issue",
                    targets=[m.key],
                    reason=f"typeTransitions.{m.type} {what}: promotion skipped ({because})",
                )
            )
            continue
        out.actions.append(move_action("promote", m, rule.promoteTo, because, crux, existing))
    return out
