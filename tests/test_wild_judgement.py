"""Every real Claude Code store in ../shared/real-stores/wild/, planned as a long-lived checkout sees
it (conftest's `wild_plans`: copied once for the session, mtimes aged 200 days as
scripts/wild_stores.py does): no automatic `prune_stale`, and at most 2 stub conflicts over all
stores (issue 11)."""

from __future__ import annotations

import pytest

from helpers import WILD

pytestmark = pytest.mark.skipif(not WILD.is_dir(), reason=f"the wild stores are not beside the clone ({WILD})")


@pytest.fixture(scope="module")
def plans(wild_plans) -> dict[str, dict | str]:
    return {name: plan for name, (_store, plan) in wild_plans.items()}


def test_every_wild_store_is_planned(plans):
    missing = {k: v for k, v in plans.items() if isinstance(v, str)}
    if set(missing) - {"webeverything"}:
        pytest.fail(f"stores not planned: {missing}")
    if "webeverything" in missing:
        # Its memory folder is reached through an in-repository symlink; discovery is issue 11 item 2
        # (another branch). Until then it is not found at all, which is not a judgement to check here.
        pytest.skip(f"webeverything not found on this branch (store discovery, item 2): {missing['webeverything'][:120]}")


def test_no_automatic_prune_in_any_wild_store(plans):
    automatic = [(name, a["targets"][0]) for name, p in plans.items() if isinstance(p, dict)
                 for a in p["actions"] if a["kind"] == "prune_stale" and not a["needs_user"]]
    assert automatic == []


def test_at_most_two_stub_conflicts_over_all_wild_stores(plans):
    conflicts = [(name, a["targets"], a["reason"]) for name, p in plans.items() if isinstance(p, dict)
                 for a in p["actions"] if a["kind"] == "conflict"]
    assert len(conflicts) <= 2, conflicts
    for _name, _targets, reason in conflicts:
        assert "\u201c" in reason  # each quotes the two clauses that clash
