"""A file name the journal will not record (a backslash: legal on POSIX, a separator on Windows)
costs the one action that would move or write it, never the whole run (red-team bug 7: every
nightly run exited 1 and no other action of the store was ever applied); a claude plan does not
propose that action, a finding saying why."""

from __future__ import annotations

import json
import os

import pytest

from helpers import NOW, files, plan_json, run_cli, snapshot

from pipeline.journal_check import path_problem

P = ".claude/projects/-home-dev-acme-shop/memory/"
ODD = "zz\\migrations.md"


def test_path_problem_names_a_backslash():
    assert path_problem(P + ODD) == "holds a backslash (a folder separator on Windows)"
    assert path_problem(P + "project_migrations.md") is None
    assert path_problem(".memconsolidate/reports/r.md") is None and path_problem(".memconsolidate/key") == "is inside the state folder"


def test_an_action_on_a_file_named_with_a_backslash_is_skipped_and_the_rest_applied(fixture_store):
    from pipeline.actions import MergeDuplicateAction
    from pipeline.api import apply_plan, build_plan, open_store, select_actions
    from pipeline.config import Settings

    store = fixture_store("claude")
    (store / P / ODD).write_bytes((store / P / "project_migrations.md").read_bytes())  # an exact duplicate
    os.utime(store / P / "project_migrations.md", (1_577_836_800, 1_577_836_800))
    before = snapshot(store)
    # the plan proposes no merge of it, which apply would skip every time: a finding says why
    # (layouts/claude/uneditable.py, the journal's refusal asked before)
    plan = plan_json(store, "--model", "none")
    assert not [a for a in plan["actions"] if P + ODD in a["targets"]]
    assert [f["reason"] for f in plan["findings"] if f["targets"] == [P + ODD] and f["kind"] == "manual_review"] == [
        f"read as a memory, but apply never archives, merges, consolidates or edits it "
        f"(path {P + ODD!r} holds a backslash (a folder separator on Windows))"]
    # asked anyway (a caller's), it costs that one action, never the run
    corpus, settings = open_store(store, Settings.model_validate({"now": NOW, "llm": {"model": "none"}}))
    built = build_plan(corpus, settings)
    merge = MergeDuplicateAction(targets=[P + "project_migrations.md", P + ODD], survivor=P + "project_migrations.md",
                                 reason="normalized text identical")
    result = apply_plan(corpus, built, settings, actions=[*select_actions(built, None, None), merge])
    assert [why for a, why in result.changes.skipped if a is merge] == [
        f"{P + ODD}: path {P + ODD!r} holds a backslash (a folder separator on Windows)"]
    assert ("merge_duplicate", P + "project_ci_cache_copy.md") in [(a.kind, a.targets[-1]) for a in result.changes.applied]
    after = files(store)
    assert after[P + ODD] == before[P + ODD] and not (store / P / "project_ci_cache_copy.md").exists()
    # the nightly run too, every night
    assert run_cli("run", str(store), "--now", NOW, "--model", "none").returncode == 0
    assert run_cli("undo", str(store)).returncode == 0  # the first run (the second applied nothing)
    assert snapshot(store) == before


@pytest.mark.parametrize("writer_knows", [True, False])
def test_a_folder_whose_every_move_is_refused_costs_two_builds_not_one_per_action(tmp_path, monkeypatch, writer_knows):
    """A red-team's case: a claude folder whose `.archive` is linked out of the store refuses every
    move into it; each action's change set was built alone, each build re-making the folder's index
    edits (600 duplicates: six minutes with the store locked). The plan proposes none of them now
    (tests/test_claude_plan_feasible.py), but a caller may still ask: the claude writer skips each
    itself (`uneditable.archive_left`), in one build; a writer that does not know (as a third-party
    layout's may not) costs two builds, the actions naming the refused files found at once. Either
    way every one is skipped with its own reason, and the run goes on."""
    from pipeline.actions import MergeDuplicateAction
    from pipeline.api import apply_plan, build_plan, open_store
    from pipeline.config import Settings
    from pipeline.layouts.claude import ClaudeLayout, uneditable

    folder = tmp_path / ".claude" / "memory"
    folder.mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("")
    index = ["# Memory", ""]
    for n in range(40):  # 40 pairs of exact duplicates: 40 merges, each archiving one file
        for copy in ("a", "b"):
            (folder / f"note{n}_{copy}.md").write_text(f"---\nname: note{n}_{copy}\ndescription: n{n}\ntype: project\n---\n\nRule {n}: keep it.\n")
            index.append(f"- [note {n} {copy}](note{n}_{copy}.md) — n{n}")
    (folder / "MEMORY.md").write_text("\n".join(index) + "\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (folder / ".archive").symlink_to(outside)
    settings = Settings.model_validate({"now": NOW, "llm": {"model": "none"}, "max_retire_fraction": 1.0})
    corpus, settings = open_store(tmp_path, settings)
    plan = build_plan(corpus, settings)
    assert plan.actions == []  # apply would refuse every one
    p = ".claude/memory/"
    merges = [MergeDuplicateAction(targets=[f"{p}note{n}_a.md", f"{p}note{n}_b.md"], survivor=f"{p}note{n}_a.md",
                                   reason="normalized text identical") for n in range(40)]
    if not writer_knows:
        monkeypatch.setattr(uneditable, "archive_left", lambda root, folder: None)
    builds = []
    real = ClaudeLayout.changes
    monkeypatch.setattr(ClaudeLayout, "changes", lambda self, *a, **k: builds.append(1) or real(self, *a, **k))
    result = apply_plan(corpus, plan, settings, actions=merges)
    assert result.changes.applied == [] and len(result.changes.skipped) == 40
    said = f"{p}.archive/ is where apply never writes: it is a symlink" if writer_knows else "leads outside the store"
    assert all(said in why for _, why in result.changes.skipped)
    assert len(builds) == (1 if writer_knows else 2)
    assert list(outside.iterdir()) == []
