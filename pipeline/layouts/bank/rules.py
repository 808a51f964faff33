"""Rule candidates: memories seen often enough to become a standing rule.

crux: trackers with `references >= promotionToRuleThreshold` (seed step 10, advisory).
bank: records with `corroboration >= promote_corroboration_threshold` (iii), strongest first.
Both need a judgement (instruction or plain fact?), so the deterministic pass only proposes them with
`needs_user: true`; the rules stage turns a bank candidate into a one-line learned rule.
"""

from __future__ import annotations

from ...model import Action, Corpus
from ...rules.outcome import Outcome


def bank_rule_candidates(corpus: Corpus, threshold: int) -> Outcome:
    out = Outcome()
    banks = corpus.extra.get("banks", {})
    for m in corpus.memories:
        promoted = banks.get(m.group, {}).get("learned", {}).get("sources", [])
        if m.corroboration >= threshold and m.id not in promoted:
            out.actions.append(
                Action(
                    kind="promote_rule",
                    targets=[m.key],
                    needs_user=True,
                    reason=f"corroborated {m.corroboration} times (threshold {threshold}): rule candidate",
                )
            )
    return out
