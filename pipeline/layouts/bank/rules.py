"""Rule candidates: memories seen often enough to become a standing rule.

crux: trackers with `references >= promotionToRuleThreshold` (seed step 10, advisory).
bank: records with `corroboration >= promote_corroboration_threshold` (iii), strongest first.
Both need a judgement (instruction or plain fact?), so the deterministic pass only proposes them with
`needs_user: true`; the rules stage turns a bank candidate into a one-line learned rule.
"""

from __future__ import annotations

from ...model import Corpus, Memory
from ...rules.outcome import Outcome
from ...rules.rule_candidates import rule_candidates


def bank_rule_candidates(corpus: Corpus, threshold: int) -> Outcome:
    # The ids each bank's learned.md already holds a rule from, as a set: asked of every memory.
    promoted = {name: set(bank.get("learned", {}).get("sources", [])) for name, bank in corpus.extra.get("banks", {}).items()}

    def corroborations(m: Memory) -> int | None:
        n = m.corroboration
        # below the threshold it is no candidate either way: only one at or above it is looked up
        return None if n >= threshold and m.id in promoted.get(m.group, ()) else n

    return rule_candidates(
        corpus.memories,
        corroborations,
        threshold,
        lambda m, n: f"corroborated {n} times (threshold {threshold}): rule candidate",
    )
