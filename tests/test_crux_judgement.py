"""CRUX judgements people can trust (issue 11, items 14-15): no usage data means "unreferenced" is
unknown; a demotion is not undone the next night; a much-referenced demoted memory stays a rule
candidate; a goal is reviewed, not archived on its own. Built on hand-made records and on a small
store written here in the shape of the real CRUX store."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from helpers import plan_json

from pipeline.config import Settings
from pipeline.layouts.crux import rules as crux_rules
from pipeline.model import Corpus, Memory, Tracker
from pipeline.plan import build_plan

NOW = dt.date(2026, 11, 29)


def ago(n: int) -> dt.date:
    return NOW - dt.timedelta(days=n)


def mem(type_: str, slug: str, *, strength: int = 1, created: int = 10, demoted_from: str | None = None,
        modified: int | None = None) -> Memory:
    meta = {"demoted_from": demoted_from} if demoted_from else {}
    return Memory(
        key=f"memories/{type_}/{slug}.memory.md", layout="crux", title=slug, body=f"about {slug}", type=type_,
        strength=strength, created=ago(created), modified=ago(modified) if modified is not None else None,
        meta=meta, group="base", extra={"scope": "base", "agent": None, "twin": None},
        read_shas={f"memories/{type_}/{slug}.memory.md": f"sha-of-{slug}"},  # what a reader keeps
    )


def tracker(slug: str, *, last: int | None, refs: int = 1, strength: int = 1) -> Tracker:
    return Tracker(key=f".crux/reference-tracking/{slug}.refs.yml", slug=slug, references=refs,
                   last_referenced=ago(last) if last is not None else None, strength=strength)


def corpus(memories: list[Memory], trackers: list[Tracker]) -> Corpus:
    store = {"memory_files": sorted(m.key for m in memories), "work_dir_exists": False}
    return Corpus(layout="crux", root="/x", memories=memories, trackers=trackers, extra={"crux": store})


def moves(out) -> list[tuple[str, str, str | None, bool]]:
    return [(a.kind, a.targets[0].rsplit("/", 1)[-1], a.to_type, a.needs_user) for a in out.actions if a.kind != "sync_strength"]


# --- item 15 ------------------------------------------------------------------------------------


def test_a_demoted_memory_is_not_promoted_back_the_next_night():
    # was core (strength 20), demoted to learning yesterday after 120 days unreferenced
    m = mem("learning", "retry-budget", strength=20, created=400, demoted_from="core", modified=1)
    out = crux_rules.rules(corpus([m], [tracker("retry-budget", last=121, strength=20)]), Settings(now=NOW))
    assert moves(out) == []


def test_a_reference_newer_than_the_demotion_earns_the_promotion_back():
    m = mem("learning", "retry-budget", strength=20, created=400, demoted_from="core", modified=5)
    out = crux_rules.rules(corpus([m], [tracker("retry-budget", last=2, strength=20)]), Settings(now=NOW))
    assert moves(out) == [("promote", "retry-budget.memory.md", "core", False)]


def test_a_demoted_memory_referenced_past_the_rule_threshold_keeps_its_promote_rule():
    m = mem("core", "pin-versions", strength=40, created=400)
    t = tracker("pin-versions", last=120, refs=45, strength=40)
    plan = build_plan(corpus([m], [t]), Settings(now=NOW, max_retire_fraction=1.0))
    kinds = sorted(a.kind for a in plan.actions if a.kind != "sync_strength")
    assert kinds == ["demote", "promote_rule"]


def test_a_goal_past_the_archive_threshold_gets_review_and_its_archive_needs_the_user():
    g = mem("goal", "ship-v2", created=400)
    out = crux_rules.rules(corpus([g], [tracker("ship-v2", last=200)]), Settings(now=NOW))
    assert moves(out) == [("archive", "ship-v2.memory.md", "archived", True)]
    assert [f.kind for f in out.findings] == ["goal_review"]


# --- item 14 ------------------------------------------------------------------------------------


def test_without_any_tracking_data_nothing_is_demoted_or_archived_on_its_own():
    memories = [mem("core", "a", created=300), mem("learning", "b", created=200), mem("idea", "c", created=120)]
    out = crux_rules.rules(corpus(memories, []), Settings(now=NOW))
    assert {(k, n) for k, n, _, _ in moves(out)} == {("archive", "a.memory.md"), ("archive", "b.memory.md"), ("archive", "c.memory.md")}
    assert all(needs for *_, needs in moves(out))
    [missing] = [f for f in out.findings if f.class_ == "no_usage_data"]
    assert "usage data is missing" in missing.reason


def test_with_some_tracking_data_the_usual_rules_hold():
    memories = [mem("core", "a", created=300), mem("learning", "b", created=5)]
    out = crux_rules.rules(corpus(memories, [tracker("b", last=1)]), Settings(now=NOW))
    assert moves(out) == [("archive", "a.memory.md", "archived", False)]
    assert not [f for f in out.findings if f.class_ == "no_usage_data"]


def write_store(root: Path, n: int, trackers: bool) -> Path:
    """A CRUX store shaped like the real one: flags list, referenceTracking on, memories per type."""
    (root / ".crux" / "reference-tracking").mkdir(parents=True)
    config = {
        "flags": [{"enableMemories": "true"}],
        "cruxMemories": {"enabled": "${flags.enableMemories}", "referenceTracking": {"enabled": True, "trackingDir": ".crux/reference-tracking"}},
    }
    (root / ".crux" / "crux-memories.json").write_text(json.dumps(config, indent=2))
    for i in range(n):
        type_ = ("core", "learning", "redflag")[i % 3]
        folder = root / "memories" / type_
        folder.mkdir(parents=True, exist_ok=True)
        slug = f"lesson-number-{chr(97 + i % 26)}{i}"
        (folder / f"{slug}.memory.md").write_text(
            f"---\ntitle: Lesson {slug}\ntype: {type_}\nstrength: 1\ncreated: 2025-06-01\n---\n\nKeep {slug} in mind when planning work item {i}.\n"
        )
        if trackers and i == 0:
            (root / ".crux" / "reference-tracking" / f"{slug}.refs.yml").write_text(
                f"slug: {slug}\nreferences: 1\nlast_referenced: 2026-11-20\nstrength: 1\n"
            )
    return root


def test_a_store_with_tracking_on_and_no_data_plans_no_automatic_retirement(tmp_path):
    plan = plan_json(write_store(tmp_path / "crux", 12, trackers=False), "--model", "none", "--now", NOW.isoformat())
    assert [a for a in plan["actions"] if a["kind"] in ("archive", "demote") and not a["needs_user"]] == []
    assert any(f.get("class") == "no_usage_data" for f in plan["findings"])
