"""The blast-radius cap (issue 11, item 13): one run retires at most `max_retire_fraction` (25 % by
default) of a store's live memories in every layout; the rest are `capped` and wait."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import NOW, plan_json, run_cli
from test_crux_judgement import write_store

from pipeline.model import Action
from pipeline.rules.blast_cap import cap_retirements, retire_budget

FOLDER = ".claude/memory/"


def claude_store(root: Path, pairs: int, singles: int) -> Path:
    """A `.claude/memory` folder with `pairs` exact duplicates and `singles` distinct memories."""
    folder = root / ".claude" / "memory"
    folder.mkdir(parents=True)
    names = []
    for i in range(pairs):
        body = f"---\nname: tip {i}\ndescription: build tip {i}\ntype: feedback\n---\n\nRun the build with cache layer {i} warmed first.\n"
        for suffix in ("", "_copy"):
            (folder / f"tip_{i}{suffix}.md").write_text(body)
            names.append(f"tip_{i}{suffix}")
    for i in range(singles):
        (folder / f"note_{i}.md").write_text(f"---\nname: note {i}\ndescription: topic {i}\ntype: project\n---\n\nTopic {i} has its own owner.\n")
        names.append(f"note_{i}")
    (folder / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"- [{n}]({n}.md) — {n}\n" for n in names))
    return root


def merges(plan: dict) -> list[str]:
    return [a["targets"][1].removeprefix(FOLDER) for a in plan["actions"] if a["kind"] == "merge_duplicate"]


def capped(plan: dict) -> list[dict]:
    return [f for f in plan["findings"] if f["kind"] == "capped"]


def test_budget_is_a_quarter_rounded_down_but_one_at_least():
    assert [retire_budget(n, 0.25) for n in (0, 1, 3, 4, 8, 75)] == [0, 1, 1, 1, 2, 18]
    assert retire_budget(75, 0.0) == 0


def test_a_claude_store_retires_at_most_a_quarter_and_reports_the_rest(tmp_path):
    root = claude_store(tmp_path / "repo", pairs=4, singles=0)  # 8 memories, 4 merges would retire half
    plan = plan_json(root, "--model", "none", "--now", NOW)
    assert merges(plan) == ["tip_0_copy.md", "tip_1_copy.md"]  # the first ones in plan order
    [finding] = capped(plan)
    assert finding["targets"] == [FOLDER + "tip_2_copy.md", FOLDER + "tip_3_copy.md"]
    assert "at most 2 of 8" in finding["reason"]
    assert plan_json(root, "--model", "none", "--now", NOW) == plan  # the same choice every time


def test_max_retire_lifts_the_cap_from_the_command_line_and_config(tmp_path):
    root = claude_store(tmp_path / "repo", pairs=4, singles=0)
    assert len(merges(plan_json(root, "--model", "none", "--now", NOW, "--max-retire", "1"))) == 4
    config = tmp_path / "c.toml"
    config.write_text("max_retire_fraction = 0.5\n")
    assert len(merges(plan_json(root, "--model", "none", "--now", NOW, "--config", str(config)))) == 4
    bad = run_cli("plan", str(root), "--max-retire", "1.5")
    assert bad.returncode == 2 and "--max-retire" in bad.stderr and "Traceback" not in bad.stderr


def test_apply_retires_only_what_the_cap_allows_and_the_next_run_the_rest(tmp_path):
    root = claude_store(tmp_path / "repo", pairs=4, singles=4)  # 12 memories: 3 per run
    first = run_cli("apply", str(root), "--now", NOW, "--model", "none", "--yes", "--json")
    assert first.returncode == 0, first.stderr
    assert sum(a["kind"] == "merge_duplicate" for a in json.loads(first.stdout)["applied"]) == 3
    again = plan_json(root, "--model", "none", "--now", NOW)
    assert merges(again) == ["tip_3_copy.md"] and capped(again) == []


def test_a_crux_store_archives_at_most_a_quarter(tmp_path):
    root = write_store(tmp_path / "crux", 12, trackers=True)  # 11 old memories without a tracker
    plan = plan_json(root, "--model", "none", "--now", "2026-11-29")
    archives = [a for a in plan["actions"] if a["kind"] == "archive" and not a["needs_user"]]
    assert len(archives) == 3
    assert len(capped(plan)[0]["targets"]) == 8


def test_automatic_actions_fit_before_those_that_need_the_user():
    acts = [
        Action(kind="prune_stale", targets=["a"], reason="r", needs_user=True),
        Action(kind="archive", targets=["b"], reason="r", to_type="archived"),
        Action(kind="demote", targets=["c"], reason="r", to_type="idea"),
    ]
    out = cap_retirements(acts, ["a", "b", "c", "d"], 0.25)
    assert [a.targets for a in out.actions] == [["b"], ["c"]]  # a demote retires nothing
    assert out.findings[0].targets == ["a"]


def test_a_capped_crux_run_archives_its_lowest_types_and_longest_unreferenced_first(tmp_path):
    """A crux store idle for months has every memory past archiveAfterDaysUnreferenced. Taken in path
    order, the cap archived `core/` first while older ideas waited; the store's own typePriority says
    what it values least, and the seed's days unreferenced which is the stalest."""
    root = tmp_path / "crux"
    (root / ".crux").mkdir(parents=True)
    (root / ".crux" / "crux-memories.json").write_text(json.dumps({"flags": [{"enableMemories": "true"}], "cruxMemories": {}}))
    # (type, name, created): every one past 180 days on 2026-11-29; 8 live memories, a quarter: 2 a run
    made = [("core", "always-pin-the-toolchain", "2025-01-10"), ("core", "build-from-clean-checkouts", "2025-02-10"),
            ("redflag", "never-force-push-main", "2025-03-01"), ("learning", "cache-keys-need-the-lockfile", "2025-04-01"),
            ("learning", "flaky-tests-hide-races", "2025-01-20"), ("learning", "small-commits-review-faster", "2025-05-01"),
            ("idea", "try-remote-build-cache", "2025-05-20"), ("idea", "nightly-dependency-bumps", "2025-03-15")]
    for type_, name, created in made:
        folder = root / "memories" / type_
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.memory.md").write_text(
            f"---\ntitle: {name.replace('-', ' ')}\ntype: {type_}\nstrength: 1\ncreated: {created}\n---\n\n{name.replace('-', ' ').capitalize()}.\n")
    plan = plan_json(root, "--model", "none", "--now", "2026-11-29")
    archived = [a["targets"][0].split("/")[1:] for a in plan["actions"] if a["kind"] == "archive"]
    # the ideas first (oldest first), then nothing more: a quarter of 8 is 2
    assert archived == [["idea", "nightly-dependency-bumps.memory.md"], ["idea", "try-remote-build-cache.memory.md"]]
    waiting = capped(plan)[0]["targets"]
    assert "memories/core/always-pin-the-toolchain.memory.md" in waiting and len(waiting) == 6
    # a larger cap: the learnings next, the longest unreferenced first; the core and redflag wait
    plan = plan_json(root, "--model", "none", "--now", "2026-11-29", "--max-retire", "0.5")
    archived = [a["targets"][0].removeprefix("memories/") for a in plan["actions"] if a["kind"] == "archive"]
    assert archived == ["idea/nightly-dependency-bumps.memory.md", "idea/try-remote-build-cache.memory.md",
                        "learning/cache-keys-need-the-lockfile.memory.md", "learning/flaky-tests-hide-races.memory.md"]


def test_a_crux_merge_is_ranked_by_what_it_retires_not_by_its_survivor(tmp_path):
    from pipeline.api import open_store
    from pipeline.config import Settings
    from pipeline.layouts.crux.rules.retire_order import least_valued_first

    root = tmp_path / "crux"
    (root / ".crux").mkdir(parents=True)
    (root / ".crux" / "crux-memories.json").write_text(json.dumps({"flags": [{"enableMemories": "true"}], "cruxMemories": {}}))
    for type_, name in (("core", "keep-this"), ("idea", "retire-this"), ("learning", "other")):
        (root / "memories" / type_).mkdir(parents=True)
        (root / "memories" / type_ / f"{name}.memory.md").write_text(
            f"---\ntitle: {name}\ntype: {type_}\nstrength: 1\ncreated: 2025-01-01\n---\n\nSame words.\n")
    corpus, settings = open_store(root, Settings.model_validate({"now": "2026-11-29", "llm": {"model": "none"}}))
    key = least_valued_first(corpus, settings.crux, settings.now)
    core, idea, learning = "memories/core/keep-this.memory.md", "memories/idea/retire-this.memory.md", "memories/learning/other.memory.md"
    merge = Action(kind="merge_duplicate", targets=[core, idea], reason="r", survivor=idea)
    archive = Action(kind="archive", targets=[learning], reason="r", to_type="archived")
    assert key(archive) < key(merge)  # a core retired: after a learning (ranked by the idea survivor: before it)
