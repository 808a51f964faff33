"""Rule candidates: a memory seen often enough to be offered as a standing rule.

Each layout says what "seen" counts (crux: tracker references, bank: corroborations); the candidate
is the same everywhere: one `promote_rule` on the memory, advisory (`needs_user: true`), because
only a judgement (the rules stage, or the user) tells an instruction from a plain fact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..kinds import FindingKind
from ..actions import PromoteRuleAction
from ..model import Finding, Memory
from ..text.counts import plural
from .outcome import Outcome

# Candidates listed as actions, strongest first. The rules stage judges far fewer (bank: the
# strongest `rule_candidates_max`) and a person reads a few dozen at most; a store with thousands
# of much-used memories gets one finding with the count, not thousands of actions.
MAX_LISTED = 50


def rule_candidates(
    memories: Iterable[Memory],
    count: Callable[[Memory], int | None],
    threshold: int,
    reason: Callable[[Memory, int], str],
    fields: Callable[[Memory, int], dict[str, Any]] = lambda m, n: {},
    listed: int = MAX_LISTED,
) -> Outcome:
    """A `promote_rule` for each memory whose `count` (None: not a candidate) reaches `threshold`,
    the `listed` most-seen of them (ties by key); the rest summed up in one `capped` finding."""
    seen = [(n, m) for m in memories if (n := count(m)) is not None and n >= threshold]
    seen.sort(key=lambda nm: (-nm[0], nm[1].key))
    out = Outcome()
    for n, m in seen[:listed]:
        out.actions.append(
            PromoteRuleAction(targets=[m.key], needs_user=True, reason=reason(m, n), **fields(m, n))
        )
    rest = seen[listed:]
    if rest:
        out.findings.append(Finding(
            kind=FindingKind.CAPPED, targets=[],
            reason=f"{plural(len(rest), 'more rule candidate')} (promote_rule) not listed: seen {rest[-1][0]}-{rest[0][0]} "
            f"times, fewer than the {listed} listed; they come up again as those are promoted or judged",
        ))
    return out
