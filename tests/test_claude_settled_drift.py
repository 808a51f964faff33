"""A `rebuild_index` is proposed only for drift the bare apply leaves: a file that a merge or prune
of the same plan archives (automatically) needs no entry and leaves no repeated line, the run's own
index edits taking its lines away. Before, such a file alone asked for a rebuild that apply then
skipped as "index already up to date" (a user pinning it by number got a skip). A retirement that
needs the user settles nothing: it may be declined, and the rebuild applied alone must index the file.
Stores built here."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from helpers import NOW, apply_json, git, plan_json, run_cli, snapshot

from pipeline.actions import MergeDuplicateAction, PruneStaleAction
from pipeline.config import Settings
from pipeline.layouts.claude import LAYOUT as CLAUDE
from pipeline.layouts.claude import reader as claude
from pipeline.model import Action

S = Settings(now=dt.date.fromisoformat(NOW))
FRONT = "---\nname: {name}\ndescription: {name}\ntype: project\n---\n\n{body}\n"
OLD = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc).timestamp()  # past the prune guard
OLDER = OLD - 86400  # the duplicate's survivor: the older file


def memory(folder: Path, name: str, body: str = "Same text.", mtime: float = OLD) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(FRONT.format(name=name, body=body), encoding="utf-8")
    os.utime(path, (mtime, mtime))


def index(folder: Path, *lines: str) -> None:
    (folder / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"{line}\n" for line in lines), encoding="utf-8")


def duplicates(folder: Path, *also: str) -> Path:
    """gamma.md (indexed, the older: the survivor) and copy.md (its duplicate), and each of `also`,
    a file of its own."""
    memory(folder, "gamma", mtime=OLDER)
    memory(folder, "copy")
    for name in also:
        memory(folder, name, f"The {name} notes, unlike any other.")
    return folder


def plan_of(store: Path) -> dict:
    return plan_json(store, "--model", "none", "--now", NOW)


def apply(store: Path, *extra: str) -> dict:
    return apply_json(store, "--model", "none", "--now", NOW, *extra)


def rebuilds(plan: dict) -> list[dict]:
    return [a for a in plan["actions"] if a["kind"] == "rebuild_index"]


def kinds(plan: dict) -> list[tuple[str, bool]]:
    return [(a["kind"], a["needs_user"]) for a in plan["actions"]]


def test_a_file_the_plan_merges_away_asks_for_no_rebuild(tmp_path):
    """The issue's store: copy.md, not indexed, is merged into gamma.md. The merge leaves MEMORY.md
    right; no rebuild is proposed, and apply skips nothing."""
    store = duplicates(tmp_path / "s")
    index(store, "- [Gamma](gamma.md) — gamma")
    plan = plan_of(store)
    assert kinds(plan) == [("merge_duplicate", False)]
    result = apply(store)
    assert result["skipped"] == [] and [a["kind"] for a in result["applied"]] == ["merge_duplicate"]
    assert not (store / "copy.md").exists()
    assert rebuilds(plan_of(store)) == []


def test_a_repeated_line_of_a_file_the_plan_merges_away_asks_for_no_rebuild(tmp_path):
    """copy.md listed twice: the merge takes both its lines away, so the repeat is no reason."""
    store = duplicates(tmp_path / "s")
    index(store, "- [Gamma](gamma.md) — gamma", "- [Copy](copy.md) — copy", "- [Copy](copy.md) — copy")
    assert kinds(plan_of(store)) == [("merge_duplicate", False)]
    result = apply(store)
    assert result["skipped"] == []
    assert (store / "MEMORY.md").read_text(encoding="utf-8") == "# Memory\n\n- [Gamma](gamma.md) — gamma\n"
    assert rebuilds(plan_of(store)) == []


def test_a_rebuild_with_other_reasons_names_only_them_and_undo_restores_every_byte(tmp_path):
    """copy.md (merged away) and notes.md (kept) are not indexed: the rebuild is for notes.md alone."""
    store = duplicates(tmp_path / "s", "notes")
    index(store, "- [Gamma](gamma.md) — gamma", "- [Gone](gone.md) — a file deleted by hand")
    before = snapshot(store)
    [rebuild] = rebuilds(plan_of(store))
    assert rebuild["reason"] == "1 file not indexed: notes.md; 1 entry without a file: gone.md (“a file deleted by hand”)"
    result = apply(store)
    assert result["skipped"] == []
    assert sorted(a["kind"] for a in result["applied"]) == ["merge_duplicate", "rebuild_index"]
    text = (store / "MEMORY.md").read_text(encoding="utf-8")
    assert "(notes.md)" in text and "copy.md" not in text and "gone.md" not in text
    assert rebuilds(plan_of(store)) == []
    res = run_cli("undo", str(store))
    assert res.returncode == 0, res.stderr
    assert snapshot(store) == before


def test_a_file_reached_through_a_sub_index_is_settled_alike(tmp_path):
    """MEMORY.md lists a sub-index, which lists gamma.md; copy.md, listed nowhere, is merged away."""
    store = duplicates(tmp_path / "s")
    index(store, "- [Topics](topics.md) — the topic index")
    (store / "topics.md").write_text("# Topics\n\n- [Gamma](gamma.md) — gamma\n", encoding="utf-8")
    assert kinds(plan_of(store)) == [("merge_duplicate", False)]
    before = snapshot(store)
    assert apply(store)["skipped"] == []
    assert rebuilds(plan_of(store)) == []
    assert run_cli("undo", str(store)).returncode == 0
    assert snapshot(store) == before


def test_each_folder_keeps_the_drift_of_its_own(tmp_path):
    """Two memory folders: one's duplicate is merged away (no rebuild there), the other's unindexed
    file is its own drift (its rebuild stays, as before)."""
    merged, drifted = tmp_path / "s" / ".claude/agent-memory/a", tmp_path / "s" / ".claude/agent-memory/b"
    duplicates(merged)
    index(merged, "- [Gamma](gamma.md) — gamma")
    memory(drifted, "alone", "Only here.")
    index(drifted)
    plan = plan_of(tmp_path / "s")
    assert [(a["targets"], a["reason"]) for a in rebuilds(plan)] == [
        ([".claude/agent-memory/b/MEMORY.md"], "1 file not indexed: .claude/agent-memory/b/alone.md")]


def test_a_merge_that_needs_the_user_leaves_the_rebuild_and_the_rebuild_alone_indexes_the_file(tmp_path):
    """A symlink pointing at copy.md makes its merge ask the user: declined, copy.md stays, so the
    rebuild is still proposed for it, and applied alone it lists copy.md."""
    store = duplicates(tmp_path / "s")
    index(store, "- [Gamma](gamma.md) — gamma")
    (store / "link.md").symlink_to("copy.md")
    plan = plan_of(store)
    assert kinds(plan) == [("merge_duplicate", True), ("rebuild_index", False)]
    assert "copy.md" in rebuilds(plan)[0]["reason"]
    result = apply(store)
    assert [a["kind"] for a in result["applied"]] == ["rebuild_index"] and result["skipped"] == []
    assert "(copy.md)" in (store / "MEMORY.md").read_text(encoding="utf-8")
    assert (store / "copy.md").exists()
    assert rebuilds(plan_of(store)) == []


# --- prunes: with git history a prune is automatic, without it the user decides ---------------


def stale_project(root: Path, history: bool) -> Path:
    """A repository whose `src/legacy/exporter.py` is gone (deleted in its history, or never in it),
    with a subagent memory folder: exporter.md (about that file, not indexed) and server.md."""
    (root / "src" / "api").mkdir(parents=True)
    (root / "src" / "api" / "server.py").write_text("def serve():\n    pass\n", encoding="utf-8")
    if history:
        (root / "src" / "legacy").mkdir(parents=True)
        (root / "src" / "legacy" / "exporter.py").write_text("def export():\n    pass\n", encoding="utf-8")
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "first")
        git(root, "rm", "-q", "src/legacy/exporter.py")
        git(root, "commit", "-q", "-m", "delete")
    folder = root / ".claude/agent-memory/dev"
    memory(folder, "exporter", "CSV export lives in `src/legacy/exporter.py` and is run weekly.")
    memory(folder, "server", "The API starts in `src/api/server.py`.")
    index(folder, "- [Server](server.md) — server")
    return root


def test_a_file_the_plan_prunes_asks_for_no_rebuild(tmp_path):
    store = stale_project(tmp_path / "p", history=True)
    assert kinds(plan_of(store)) == [("prune_stale", False)]
    result = apply(store)
    assert result["skipped"] == [] and [a["kind"] for a in result["applied"]] == ["prune_stale"]
    assert rebuilds(plan_of(store)) == []


def test_a_prune_that_needs_the_user_leaves_the_rebuild(tmp_path):
    store = stale_project(tmp_path / "p", history=False)
    plan = plan_of(store)
    assert kinds(plan) == [("prune_stale", True), ("rebuild_index", False)]
    assert rebuilds(plan)[0]["reason"] == "1 file not indexed: .claude/agent-memory/dev/exporter.md"
    assert [a["kind"] for a in apply(store)["applied"]] == ["rebuild_index"]
    assert "(exporter.md)" in (store / ".claude/agent-memory/dev/MEMORY.md").read_text(encoding="utf-8")


def test_a_pruned_survivor_s_stand_in_is_not_settled(tmp_path):
    """What apply archives decides, not what each action names: a merge whose survivor the plan
    prunes hands over to copy.md, which stays, so its missing entry still asks for the rebuild."""
    store = duplicates(tmp_path / "s")
    index(store, "- [Gamma](gamma.md) — gamma")
    corpus = claude.load(store, S)
    merge = MergeDuplicateAction(targets=["gamma.md", "copy.md"], survivor="gamma.md", reason="normalized text identical",
                                 handover=["copy.md"])
    prune = PruneStaleAction(targets=["gamma.md"], reason="fully stale (constructed)")
    rebuild = Action(kind="rebuild_index", targets=["MEMORY.md"], reason="1 file not indexed: copy.md")
    live = ["copy.md", "gamma.md"]
    assert CLAUDE.after_cap(corpus, [merge, prune, rebuild], live) == [merge, prune, rebuild]
    # without the hand-over, copy.md goes with the merge: the rebuild goes too
    alone = merge.model_copy(update={"handover": []})
    assert CLAUDE.after_cap(corpus, [alone, prune, rebuild], live) == [alone, prune]
