"""A claude plan proposes only what apply can do, and the retirement cap counts only that.

- The cap (`max_retire_fraction`) ran before the layout dropped what apply never does (a merge
  retiring a symlinked memory): such a merge took a slot, so another memory waited for the next run
  for nothing, and the `capped` finding could name the symlink, which no run ever retires. The
  layout's `before_cap` drops them first.
- A folder whose `.archive` is a symlink (a dangling one too) or no folder: apply refuses every move
  into it and every index edit (each copies the index there first); a dangling link or a file made
  the whole run fail, every night. The plan proposes none of them, a finding says why, and the run
  applies the rest: a text edit writes the file alone, and is still proposed and applied.
Stores built here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import NOW, run_cli

from pipeline.api import apply_plan, build_plan, open_store
from pipeline.config import Settings
from pipeline.model import Corpus, Plan

FOLDER = ".claude/memory"


def duplicates(root: Path, pairs: int, linked: tuple[int, ...] = ()) -> Path:
    """`pairs` exact duplicates `tip_<i>.md` and `tip_<i>_copy.md`, each copy in `linked` a symlink
    to a file of the same text elsewhere in the store."""
    folder = root / FOLDER
    folder.mkdir(parents=True)
    (root / "shared").mkdir()
    names = []
    for i in range(pairs):
        body = f"---\nname: tip {i}\ndescription: build tip {i}\ntype: feedback\n---\n\nRun the build with cache layer {i} warmed first.\n"
        (folder / f"tip_{i}.md").write_text(body, encoding="utf-8")
        if i in linked:
            (root / "shared" / f"tip_{i}.txt").write_text(body, encoding="utf-8")
            (folder / f"tip_{i}_copy.md").symlink_to(f"../../shared/tip_{i}.txt")
        else:
            (folder / f"tip_{i}_copy.md").write_text(body, encoding="utf-8")
        os.utime(folder / f"tip_{i}.md", (1e9, 1e9))  # the older: the survivor
        names += [f"tip_{i}", f"tip_{i}_copy"]
    (folder / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"- [{n}]({n}.md) — {n}\n" for n in names), encoding="utf-8")
    return root


def plan_of(root: Path, **settings: object) -> Plan:
    return planned(root, **settings)[2]


def planned(root: Path, **settings: object) -> tuple[Corpus, Settings, Plan]:
    corpus, chosen = open_store(root, Settings.model_validate({"now": NOW, "llm": {"model": "none"}, **settings}))
    return corpus, chosen, build_plan(corpus, chosen)


def merged_away(plan: Plan) -> list[str]:
    return [t.removeprefix(f"{FOLDER}/") for a in plan.actions if a.kind == "merge_duplicate" for t in a.targets if t != a.survivor]


def test_the_cap_counts_only_the_retirements_apply_makes(tmp_path):
    # 10 memories, a quarter: 2 retired a run; the copies of tip_0 and tip_4 are symlinks, never archived
    store = duplicates(tmp_path, pairs=5, linked=(0, 4))
    corpus, settings, plan = planned(store, max_retire_fraction=0.25)
    # before: tip_0's merge took a slot, then was dropped: one merge, and tip_2, tip_3 waited
    assert merged_away(plan) == ["tip_1_copy.md", "tip_2_copy.md"]
    [capped] = [f for f in plan.findings if f.kind == "capped"]
    assert capped.targets == [f"{FOLDER}/tip_3_copy.md"]  # before: tip_4_copy.md too, which no run retires
    assert "at most 2 of 10" in capped.reason
    left = [f.targets for f in plan.findings if f.kind == "manual_review"]
    assert left == [[f"{FOLDER}/tip_0_copy.md", f"{FOLDER}/tip_4_copy.md"]]  # said once, why they stay
    assert apply_plan(corpus, plan, settings).changes.skipped == []


def test_what_apply_never_does_is_dropped_before_the_cap_and_what_it_may_after(tmp_path):
    """An edit of a memory a capped retirement would have archived stays: only what apply skips
    whatever else the plan holds goes before the cap (`before_cap`), the rest once it is known
    what the capped plan archives (`after_cap`)."""
    from pipeline.actions import PruneStaleAction
    from pipeline.layouts.claude import LAYOUT
    from pipeline.model import Action

    store = duplicates(tmp_path, pairs=2, linked=(1,))
    corpus, _ = open_store(store, Settings.model_validate({"now": NOW, "llm": {"model": "none"}}))
    prune = PruneStaleAction(targets=[f"{FOLDER}/tip_0.md"], reason="fully stale (constructed)")
    linked_prune = PruneStaleAction(targets=[f"{FOLDER}/tip_1_copy.md"], reason="fully stale (constructed)")
    edit = Action(kind="absolutize_dates", targets=[f"{FOLDER}/tip_0.md"], reason="dates (constructed)")
    live = [m.key for m in corpus.memories]
    assert LAYOUT.before_cap(corpus, [prune, linked_prune, edit], live) == [prune, edit]
    assert LAYOUT.after_cap(corpus, [prune, edit], live) == [prune]  # archived by the same run: the edit is moot
    assert LAYOUT.after_cap(corpus, [edit], live) == [edit]  # the prune capped: the edit applies


def linked_archive(root: Path, how: str) -> Path:
    """`.archive` of the memory folder as `how`: a symlink out of the store, a dangling one, a file."""
    archive = root / FOLDER / ".archive"
    if how == "outside":
        (root.parent / f"{root.name}-outside").mkdir()
        archive.symlink_to(root.parent / f"{root.name}-outside")
    elif how == "dangling":
        archive.symlink_to("nowhere")
    else:
        archive.write_text("not a folder\n", encoding="utf-8")
    return root


DATED = "---\nname: cache\ndescription: cache move\ntype: project\nmodified: 2026-11-20\n---\n\nWe moved the cache yesterday.\n"


@pytest.mark.parametrize("how", ["outside", "dangling", "file"])
def test_a_folder_whose_archive_apply_refuses_gets_findings_and_only_its_text_edits(tmp_path, how):
    store = linked_archive(duplicates(tmp_path / "s", pairs=2), how)
    (store / FOLDER / "cache.md").write_text(DATED, encoding="utf-8")  # not indexed: a rebuild's reason
    plan = plan_of(store, max_retire_fraction=1)
    # before: two merges and a rebuild_index too, each refused at apply ("a folder on its path is a
    # symlink"), or the whole run refused (a dangling link, a file)
    assert [(a.kind, a.targets) for a in plan.actions] == [("absolutize_dates", [f"{FOLDER}/cache.md"])]
    why = {"outside": "it is a symlink", "dangling": "it is a symlink", "file": "it is no folder"}[how]
    refused = f"{FOLDER}/.archive/ is where apply never writes: {why}"
    reviews = {", ".join(f.targets): f.reason for f in plan.findings if f.kind == "manual_review"}
    memories = ", ".join(f"{FOLDER}/{n}.md" for n in ("cache", "tip_0", "tip_0_copy", "tip_1", "tip_1_copy"))
    assert reviews == {
        memories: f"read as 5 memories, but apply never archives, merges or consolidates them ({refused})",
        f"{FOLDER}/MEMORY.md": (f"1 file not indexed: {FOLDER}/cache.md: left as it is, the index being never edited, its old "
                                f"copy never archived ({refused}): make .archive beside it a folder of the store, and the "
                                "next plan proposes rebuild_index")}
    ran = run_cli("run", str(store), "--now", NOW, "--model", "none", "--max-retire", "1")
    assert ran.returncode == 0, ran.stderr  # before, with a dangling link or a file: 1, every night
    assert "on 2026-11-19" in (store / FOLDER / "cache.md").read_text(encoding="utf-8")
    assert all((store / FOLDER / f"tip_{i}_copy.md").exists() for i in (0, 1))
    if how == "outside":
        assert list((tmp_path / "s-outside").iterdir()) == []


def test_a_conflict_under_a_consolidation_apply_never_makes_is_kept(tmp_path):
    """A conflict yields to a consolidation claiming both its sides. When that consolidation takes a
    symlinked memory, apply never makes it, so the plan drops it; the conflict must stay. It was lost:
    `reconcile` dropped it for the consolidation before `before_cap` dropped the consolidation."""
    from pipeline.actions import ConflictAction, ConsolidateAction
    from pipeline.model import Stats

    folder = tmp_path / FOLDER
    folder.mkdir(parents=True)
    (tmp_path / "shared").mkdir()
    texts = {"deploy": "Deploy on Fridays after the freeze.", "freeze": "Never deploy on Fridays."}
    (folder / "deploy.md").write_text(f"---\nname: deploy\ndescription: when\ntype: feedback\n---\n\n{texts['deploy']}\n", encoding="utf-8")
    (tmp_path / "shared" / "freeze.txt").write_text(f"---\nname: freeze\ndescription: when not\ntype: feedback\n---\n\n{texts['freeze']}\n", encoding="utf-8")
    (folder / "freeze.md").symlink_to("../../shared/freeze.txt")
    (folder / "MEMORY.md").write_text("# Memory\n\n- [deploy](deploy.md) — when\n- [freeze](freeze.md) — when not\n", encoding="utf-8")
    plain, linked = f"{FOLDER}/deploy.md", f"{FOLDER}/freeze.md"
    consolidation = ConsolidateAction(targets=[plain, linked], reason="one topic (constructed)", needs_user=True)
    conflict = ConflictAction(targets=[plain, linked], reason="they disagree (constructed)", needs_user=True)

    def stages(corpus, settings, outcome):
        outcome.actions.extend([consolidation, conflict])
        return outcome, [], Stats()

    corpus, settings = open_store(tmp_path, Settings.model_validate({"now": NOW, "llm": {"model": "none"}}))
    plan = build_plan(corpus, settings, stages)
    assert [(a.kind, a.targets) for a in plan.actions] == [("conflict", [plain, linked])]  # before: no action
