"""Rule candidates: a memory seen often enough to be offered as a standing rule.

Each layout says what "seen" counts (crux: tracker references, bank: corroborations); the candidate
is the same everywhere: one `promote_rule` on the memory, advisory (`needs_user: true`), because
only a judgement (the rules stage, or the user) tells an instruction from a plain fact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..kinds import ActionKind
from ..model import Action, Memory
from .outcome import Outcome


def rule_candidates(
    memories: Iterable[Memory],
    count: Callable[[Memory], int | None],
    threshold: int,
    reason: Callable[[Memory, int], str],
    fields: Callable[[Memory, int], dict[str, Any]] = lambda m, n: {},
) -> Outcome:
    """A `promote_rule` for each memory whose `count` (None: not a candidate) reaches `threshold`."""
    out = Outcome()
    for m in memories:
        n = count(m)
        if n is None or n < threshold:
            continue
        out.actions.append(
            Action(kind=ActionKind.PROMOTE_RULE, targets=[m.key], needs_user=True, reason=reason(m, n), **fields(m, n))
        )
    return out
