"""A crux memory in an `archived` type folder is archived whatever its `type` says (`members.is_archived`,
the one answer every rule and stage asks): the seed's file move (step 13) moves the file into
`archived/` first and sets `type` after, so a file there still typed `learning` is an archive cut
short. No rule or stage treats it as live: it is not promoted out of the archive, demoted into
another type folder, archived onto itself, proposed as a rule, consolidated or compressed, and it
does not count as a live memory lacking usage data."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import FIXTURES, copy_store
from stage_helpers import plan_with, settings_for

MOVES = ("promote", "demote", "archive", "promote_rule", "consolidate", "compress", "rebalance_volumes")
# Fixture memories each rule or stage would act on, put in an `archived` folder with their type left as it was.
INTO_ARCHIVED = {
    "memories/learning/retry-with-idempotency-keys.memory.md": "learning, strength 15: promoted to core",
    "memories/agents/release-bot/learning/tag-releases-from-main-only.memory.md": "agent learning: promoted",
    "memories/core/deploy-freeze-on-fridays.memory.md": "core unreferenced 113 days: demoted",
    "memories/idea/graphql-gateway-for-mobile-clients.memory.md": "idea past the threshold: archived onto itself",
    "memories/core/never-log-full-card-numbers.memory.md": "referenced 42 times: a rule candidate",
    "memories/learning/ack-webhooks-before-processing.memory.md": "consolidated with two webhook learnings",
    "memories/learning/payment-outage-incident-runbook.memory.md": "50 lines: compressed",
}


def archived_folder_of(key: str) -> str:
    folder, name = key.rsplit("/", 2)[0], key.rsplit("/", 1)[1]
    return f"{folder}/archived/{name}"


def acting_on(plan: dict, keys: set[str]) -> list[tuple[str, str]]:
    return sorted((a["kind"], t) for a in plan["actions"] if a["kind"] in MOVES for t in a["targets"] if t in keys)


def test_no_rule_or_stage_acts_on_a_memory_in_an_archived_folder(tmp_path):
    store = copy_store(FIXTURES / "crux", tmp_path / "crux")
    moved = set()
    for key in INTO_ARCHIVED:
        dest = store / archived_folder_of(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        (store / key).rename(dest)
        assert "type: \"archived\"" not in dest.read_text()
        moved.add(archived_folder_of(key))
    plan = plan_with(store, settings_for())
    assert plan["errors"] == []
    assert acting_on(plan, moved) == []
    # the rest of the store is judged as before: the two webhook learnings left still consolidate
    consolidated = [a["targets"] for a in plan["actions"] if a["kind"] == "consolidate"]
    assert consolidated and all(len(targets) >= 2 and not set(targets) & moved for targets in consolidated)


def test_archived_memories_alone_lack_no_usage_data(tmp_path):
    root = tmp_path / "crux"
    (root / ".crux").mkdir(parents=True)
    (root / ".crux/crux-memories.json").write_text(json.dumps({"flags": [{"enableMemories": "true"}]}))
    key = "memories/archived/old-lesson.memory.md"
    (root / key).parent.mkdir(parents=True)
    (root / key).write_text('---\ntitle: "Old lesson"\ntype: "learning"\nstrength: 1\ncreated: 2025-01-01\n---\n\nOld.\n')
    plan = plan_with(root, settings_for())
    assert [f for f in plan["findings"] if f.get("class") == "no_usage_data"] == []
    assert acting_on(plan, {key}) == []


def test_the_old_rule_answer_is_kept_for_memories_typed_archived_elsewhere(tmp_path):
    # typed `archived` in another type folder: archived by either test, as before
    store = copy_store(FIXTURES / "crux", tmp_path / "crux")
    key = "memories/learning/retry-with-idempotency-keys.memory.md"
    text = (store / key).read_text()
    (store / key).write_text(text.replace('type: "learning"', 'type: "archived"', 1))
    assert 'type: "archived"' in (store / key).read_text()
    assert acting_on(plan_with(store, settings_for()), {key}) == []


def test_every_fixture_memory_moved_is_one_a_rule_acts_on_where_it_was(tmp_path):
    # the first test's memories are ones the plan acts on in their own folder (else it proves nothing)
    plan = plan_with(copy_store(FIXTURES / "crux", tmp_path / "crux"), settings_for())
    acted = {t for _, t in acting_on(plan, set(INTO_ARCHIVED))}
    assert acted == set(INTO_ARCHIVED)
