"""Rule candidates past what anyone uses are one finding with a count, not thousands of actions
(issue 14, item 4)."""

from __future__ import annotations

from pipeline.model import Memory
from pipeline.rules.rule_candidates import MAX_LISTED, rule_candidates


def _memories(n: int) -> list[Memory]:
    return [Memory(key=f"b/m{i:04d}", layout="bank", body=f"memory {i}", corroboration=3 + i % 40) for i in range(n)]


def _candidates(memories: list[Memory], **kw):
    return rule_candidates(memories, lambda m: m.corroboration, 3, lambda m, n: f"seen {n}", **kw)


def test_a_few_candidates_are_all_listed_and_nothing_is_summed_up():
    out = _candidates(_memories(12))
    assert len(out.actions) == 12 and out.findings == []


def test_past_the_listed_number_the_most_seen_are_actions_and_the_rest_one_finding():
    memories = _memories(MAX_LISTED * 40)
    out = _candidates(memories)
    assert len(out.actions) == MAX_LISTED
    listed = {a.targets[0] for a in out.actions}
    weakest_listed = min(m.corroboration for m in memories if m.key in listed)
    assert all(m.corroboration <= weakest_listed for m in memories if m.key not in listed)
    [finding] = out.findings
    assert finding.kind == "capped" and finding.targets == []
    assert finding.reason.startswith(f"{len(memories) - MAX_LISTED} more rule candidates (promote_rule) not listed")
    assert _candidates(list(reversed(memories))).actions == out.actions  # the same choice in any order
