"""A claude plan proposes nothing apply would skip every time for a reason the reader knew
(layouts/claude/uneditable.py, which the writer asks too): a person reviews the plan, and an action
apply refuses is noise at best, and hides the real state at worst. Before, each case here was
proposed and then skipped at apply.

- An index apply leaves as it is (a `parse_error` such as a code fence never closed, a symlink, a
  dangling one, no regular file): no `rebuild_index` or `trim_budget`; its drift is a
  `manual_review` finding, its size an `over_budget` finding saying it is not trimmed.
- A memory apply never moves or edits (a symlinked topic file, a file of a folder reached through a
  linked one, a name the journal cannot record): no prune, merge of it (a merge keeps its other
  members), consolidation or text edit; a finding says so. A conflict with it stays (the one
  statement of the contradiction), its reason saying `--resolve` leaves it.
- What an action does not bring about because an index cannot follow (a symlinked MEMORY.md or
  sub-index, one that could not be read) is said in its reason, as the run's notes say it.
Stores built here."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from helpers import NOW, git, snapshot

from pipeline.api import apply_plan, build_plan, open_store
from pipeline.config import Settings
from pipeline.model import Action, Corpus, Plan
from pipeline.stages import stage_runner

AGENT = ".claude/agent-memory/a"
INDEX = f"{AGENT}/MEMORY.md"
# every retirement proposed: the stores are a few memories, which the cap (a quarter) would hold back
S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}, "max_retire_fraction": 1})
STUB = Settings.model_validate({"now": NOW, "llm": {"model": "stub"}, "max_retire_fraction": 1})
LOADED = S.claude.index_load_bytes


def topic(name: str, body: str | None = None, **meta: str) -> str:
    front = "".join(f"{k}: {v}\n" for k, v in {"name": name, "description": f"about {name}", "type": "project", **meta}.items())
    return f"---\n{front}---\n\n{body or f'Notes on {name}, unlike any other.'}\n"


def folder_of(root: Path, **files: str) -> Path:
    folder = root / AGENT
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    return folder


def linked(folder: Path, name: str, text: str) -> None:
    """`name`.md in the folder as a symlink to a file of the same text elsewhere in the store."""
    shared = folder.parents[2] / "shared"
    shared.mkdir(exist_ok=True)
    (shared / f"{name}.txt").write_text(text, encoding="utf-8")
    (folder / f"{name}.md").symlink_to(f"../../../shared/{name}.txt")


def entries(*names: str, hook: str = "notes") -> str:
    return "# Memory\n\n" + "".join(f"- [{n}]({n}.md) — {hook}\n" for n in names)


def plan_of(root: Path, settings: Settings = S) -> tuple[Corpus, Settings, Plan]:
    corpus, settings = open_store(root, settings)
    return corpus, settings, build_plan(corpus, settings, stage_runner(settings))


def kinds(plan: Plan) -> list[str]:
    return [a.kind for a in plan.actions]


def reviews(plan: Plan) -> dict[str, str]:
    """The plan's `manual_review` findings: their targets, joined, and reasons."""
    return {", ".join(f.targets): f.reason for f in plan.findings if f.kind == "manual_review"}


def applied_whole(corpus: Corpus, plan: Plan, settings: Settings) -> list[tuple[Action, str]]:
    """Every action of the plan applied, those needing the user too: what apply skipped."""
    return apply_plan(corpus, plan, settings, actions=list(plan.actions), resolve="keep-both").changes.skipped


# ---------------------------------------------------------------------------------------------
# indexes apply leaves as they are


def over_budget(folder: Path, names: list[str]) -> str:
    for n in names:
        (folder / f"{n}.md").write_text(topic(n), encoding="utf-8")
    return entries(*names, hook="word " * 40)


NAMES = [f"t{i:03d}" for i in range(130)]  # 130 entries of ~225 bytes: past the 24 KB Claude Code loads


def test_an_over_budget_index_with_an_unclosed_fence_says_it_is_not_trimmed(tmp_path):
    folder = folder_of(tmp_path)
    text = over_budget(folder, NAMES) + "\n```bash\necho hi\n"
    (folder / "MEMORY.md").write_text(text, encoding="utf-8")
    corpus, settings, plan = plan_of(tmp_path)
    assert "trim_budget" not in kinds(plan)
    [budget] = [f for f in plan.findings if f.kind == "over_budget" and f.size]
    # before: "a rebuild trims hooks, never entries", of an index no run edits
    assert budget.reason == (f"{len(text.encode())} bytes, over the {LOADED} bytes of MEMORY.md Claude Code loads: not trimmed, "
                             "the index being read but never edited while it has the parse_error said of it: fix that, "
                             "and the next plan proposes trim_budget")


def symlinked_index(folder: Path, text: str) -> None:
    (folder.parents[2] / "notes.txt").write_text(text, encoding="utf-8")  # not named MEMORY.md: no store of its own
    (folder / "MEMORY.md").symlink_to("../../../notes.txt")


SYMLINK_LEFT = ("left as it is, the index being a symlink, never edited (no file is written through a link): "
                "put the file it points at in its place, and the next plan proposes rebuild_index")


@pytest.mark.parametrize("dangling", [False, True])
def test_the_drift_of_a_symlinked_index_is_a_finding_and_never_a_rebuild(tmp_path, dangling):
    folder = folder_of(tmp_path, alpha=topic("alpha"), beta=topic("beta"), gamma=topic("gamma"))
    if dangling:
        (folder / "MEMORY.md").symlink_to("nowhere.md")
        drift = f"index file missing; 3 files not indexed: {AGENT}/alpha.md, {AGENT}/beta.md, {AGENT}/gamma.md"
    else:
        symlinked_index(folder, entries("alpha", "beta"))
        drift = f"1 file not indexed: {AGENT}/gamma.md"
    corpus, settings, plan = plan_of(tmp_path)
    assert kinds(plan) == []  # before: its rebuild_index, which apply skipped ("MEMORY.md is a symlink")
    assert reviews(plan) == {INDEX: f"{drift}: {SYMLINK_LEFT}"}
    before = snapshot(tmp_path)
    asked = Action(kind="rebuild_index", targets=[INDEX], reason="asked")  # by a caller: refused, and said why
    [(_, why)] = apply_plan(corpus, plan, settings, actions=[asked]).changes.skipped
    assert why == "MEMORY.md left untouched: it is a symlink"
    assert snapshot(tmp_path) == before and (folder / "MEMORY.md").is_symlink()


def test_an_over_budget_symlinked_index_is_not_trimmed_and_says_so(tmp_path):
    folder = folder_of(tmp_path)
    text = over_budget(folder, NAMES)
    symlinked_index(folder, text)
    corpus, settings, plan = plan_of(tmp_path)
    assert kinds(plan) == []  # before: trim_budget, skipped at apply
    [budget] = [f for f in plan.findings if f.kind == "over_budget" and f.size]
    assert budget.reason == (f"{len(text.encode())} bytes, over the {LOADED} bytes of MEMORY.md Claude Code loads: not trimmed, "
                             "the index being a symlink, never edited (no file is written through a link): put the file it "
                             "points at in its place, and the next plan proposes trim_budget")
    assert applied_whole(corpus, plan, settings) == []


def test_a_memory_md_that_is_a_folder_gets_a_finding_and_no_rebuild(tmp_path):
    folder = folder_of(tmp_path, alpha=topic("alpha"))
    (folder / "MEMORY.md").mkdir()
    corpus, settings, plan = plan_of(tmp_path)
    assert kinds(plan) == []  # before: rebuild_index, skipped ("could not be read again (not a regular file)")
    assert reviews(plan) == {INDEX: (f"index file missing; 1 file not indexed: {AGENT}/alpha.md: left as it is, the index being "
                                     "no regular file (a folder, a FIFO), never edited: move it aside, and the next plan "
                                     "proposes rebuild_index")}


def test_a_folder_reached_through_a_linked_folder_gets_findings_and_no_action(tmp_path):
    real = tmp_path / "node_modules" / "team-memory"  # a folder the walk skips: reached only through the link
    real.mkdir(parents=True)
    for name, text in {"alpha": topic("dup", SAME), "beta": topic("dup", SAME), "gamma": topic("gamma")}.items():
        (real / f"{name}.md").write_text(text, encoding="utf-8")
    os.utime(real / "alpha.md", (1e9, 1e9))
    (real / "MEMORY.md").write_text(entries("alpha", "beta"), encoding="utf-8")
    (tmp_path / AGENT).parent.mkdir(parents=True)
    (tmp_path / AGENT).symlink_to("../../node_modules/team-memory")
    corpus, settings, plan = plan_of(tmp_path)
    assert kinds(plan) == []  # before: the merge and the rebuild, each skipped ("a folder on its path is a symlink")
    why = "a folder on its path is a symlink (to node_modules/team-memory)"
    assert reviews(plan) == {
        INDEX: (f"1 file not indexed: {AGENT}/gamma.md: left as it is, the index being where apply never writes ({why}): "
                "move it where it may, and the next plan proposes rebuild_index"),
        ", ".join(f"{AGENT}/{n}.md" for n in ("alpha", "beta", "gamma")): (
            f"read as 3 memories, but apply never archives, merges, consolidates or edits them ({why})")}


def test_a_memory_the_journal_cannot_name_is_never_merged_away(tmp_path):
    folder = folder_of(tmp_path, alpha=topic("dup", SAME))
    (folder / "zz\\alpha.md").write_text(topic("dup", SAME), encoding="utf-8")  # a backslash: legal on POSIX
    os.utime(folder / "alpha.md", (1e9, 1e9))
    (folder / "MEMORY.md").write_text(entries("alpha") + "- [Odd](<zz%5Calpha.md>) — odd\n", encoding="utf-8")
    corpus, settings, plan = plan_of(tmp_path)
    assert kinds(plan) == []  # before: its merge, skipped ("the journal cannot record ...")
    assert reviews(plan) == {f"{AGENT}/zz\\alpha.md": (
        f"read as a memory, but apply never archives, merges, consolidates or edits it "
        f"(path '{AGENT}/zz\\\\alpha.md' holds a backslash (a folder separator on Windows))")}


# ---------------------------------------------------------------------------------------------
# what an action's index cannot follow, said in its reason


SAME = "The deploy runs the migrations before the web nodes restart."


def test_a_merge_beside_a_symlinked_sub_index_says_its_lines_stay(tmp_path):
    folder = folder_of(tmp_path, alpha=topic("alpha", SAME), copy=topic("copy", SAME))
    os.utime(folder / "alpha.md", (1e9, 1e9))  # the older: the survivor
    (folder / "MEMORY.md").write_text(entries("topics"), encoding="utf-8")
    linked(folder, "topics", "# Topics\n\n- [Alpha](alpha.md) — the deploy\n- [Copy](copy.md) — the deploy again\n")
    corpus, settings, plan = plan_of(tmp_path)
    [merge] = plan.actions
    assert merge.kind == "merge_duplicate" and merge.survivor == f"{AGENT}/alpha.md"
    # before: said only in the folder's REPORT.md after the run
    said = "topics.md: not edited for this run's changes, it is a symlink: 1 line still points at archived files"
    assert merge.reason.endswith(f"applying it: {said}")
    result = apply_plan(corpus, plan, settings)
    assert result.changes.skipped == [] and f"{AGENT}/{said}" in result.changes.notes


def test_a_merge_beside_an_unreadable_index_says_the_index_does_not_follow(tmp_path):
    folder = folder_of(tmp_path, alpha=topic("alpha", SAME), copy=topic("copy", SAME))
    os.utime(folder / "alpha.md", (1e9, 1e9))
    (folder / "MEMORY.md").write_bytes(b"# Memory\n\n- [Alpha](alpha.md) \xff broken\n")
    corpus, settings, plan = plan_of(tmp_path)
    [merge] = plan.actions
    said = ("not edited for this run's changes (MEMORY.md left untouched: not UTF-8 (byte 30)); it may still list what was "
            "archived or miss what was written: fix that, and the next plan proposes rebuild_index")
    assert merge.reason == f"normalized text identical; applying it: {said}"  # before: nothing said
    assert apply_plan(corpus, plan, settings).changes.notes == [f"{INDEX}: {said}"]


# ---------------------------------------------------------------------------------------------
# memories apply never moves or edits


LEFT = "read as a memory, but apply never archives, merges, consolidates or edits it (a symlink: left untouched)"


def test_a_symlinked_memory_is_never_pruned_edited_or_pointed_elsewhere(tmp_path):
    (tmp_path / "src").mkdir()
    for name in ("old.ts", "gone.ts", "keep.ts"):
        (tmp_path / "src" / name).write_text(f"// {name}\n" * 20, encoding="utf-8")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "one")
    git(tmp_path, "mv", "src/old.ts", "src/new.ts")
    git(tmp_path, "rm", "-q", "src/gone.ts")
    git(tmp_path, "commit", "-q", "-m", "two")
    folder = folder_of(tmp_path)
    dated = {"modified": "2025-01-01"}
    linked(folder, "cache", topic("cache", "The cache lives in src/gone.ts only.", **dated))  # fully stale: a prune
    linked(folder, "handler", topic("handler", "The handler lives in src/old.ts now.", **dated))  # moved: an update_ref
    linked(folder, "dates", topic("dates", "We switched yesterday to src/keep.ts.", **dated))  # an absolutize_dates
    (folder / "MEMORY.md").write_text(entries("cache", "handler", "dates"), encoding="utf-8")
    corpus, settings, plan = plan_of(tmp_path)
    assert kinds(plan) == []  # before: prune_stale, update_ref, absolutize_dates, each skipped ("a symlink")
    assert reviews(plan) == {", ".join(f"{AGENT}/{n}.md" for n in ("cache", "dates", "handler")): (
        "read as 3 memories, but apply never archives, merges, consolidates or edits them (a symlink: left untouched)")}
    stale = {f.targets[0]: f.class_ for f in plan.findings if f.kind == "stale"}
    assert stale[f"{AGENT}/cache.md"] == "FULLY_STALE"  # what it is, still said


def test_a_merge_keeps_its_members_but_a_symlinked_one(tmp_path):
    folder = folder_of(tmp_path, alpha=topic("dup", SAME), beta=topic("dup", SAME))
    linked(folder, "gamma", topic("dup", SAME))
    os.utime(folder / "alpha.md", (1e9, 1e9))  # the older: the survivor
    (folder / "MEMORY.md").write_text(entries("alpha", "beta", "gamma"), encoding="utf-8")
    corpus, settings, plan = plan_of(tmp_path)
    [merge] = plan.actions
    assert merge.targets == [f"{AGENT}/alpha.md", f"{AGENT}/beta.md"]  # before: gamma.md too, which apply left
    assert reviews(plan) == {f"{AGENT}/gamma.md": LEFT}
    result = apply_plan(corpus, plan, settings)
    assert result.changes.skipped == [] and not (folder / "beta.md").exists() and (folder / "gamma.md").is_symlink()


def test_a_merge_whose_only_duplicate_is_a_symlink_is_not_proposed(tmp_path):
    folder = folder_of(tmp_path, alpha=topic("dup", SAME))
    linked(folder, "beta", topic("dup", SAME))
    os.utime(folder / "alpha.md", (1e9, 1e9))
    (folder / "MEMORY.md").write_text(entries("alpha", "beta"), encoding="utf-8")
    corpus, settings, plan = plan_of(tmp_path)
    assert kinds(plan) == []  # before: the merge, skipped ("beta.md: a symlink: left untouched")
    assert reviews(plan) == {f"{AGENT}/beta.md": LEFT}


RETRIES = ("The checkout service retries payment provider calls three times with exponential backoff.\n"
           "Retries stop on a 4xx answer from the payment provider.")
BACKOFF = ("The checkout service retries payment provider calls with exponential backoff starting at 200 ms.\n"
           "Retries of payment provider calls log the attempt number.")


def checkout(root: Path, link: bool) -> Path:
    """Two memories the stub consolidates, the second a symlink when `link`."""
    folder = folder_of(root, retries=topic("Checkout retries", RETRIES))
    backoff = topic("Checkout retries backoff", BACKOFF)
    if link:
        linked(folder, "backoff", backoff)
    else:
        (folder / "backoff.md").write_text(backoff, encoding="utf-8")
    (folder / "MEMORY.md").write_text(entries("retries", "backoff"), encoding="utf-8")
    return root


def test_a_consolidation_of_a_symlinked_memory_is_not_proposed(tmp_path):
    assert "consolidate" in kinds(plan_of(checkout(tmp_path / "files", link=False), STUB)[2])
    corpus, settings, plan = plan_of(checkout(tmp_path / "linked", link=True), STUB)
    assert "consolidate" not in kinds(plan)  # before: proposed, and skipped ("backoff.md: a symlink")
    assert reviews(plan)[f"{AGENT}/backoff.md"] == LEFT


def test_a_conflict_with_a_symlinked_side_stays_and_says_resolve_leaves_it(tmp_path):
    folder = folder_of(tmp_path, pnpm=topic("pnpm", "Always use pnpm to install dependencies in this repository."))
    linked(folder, "npm", topic("npm", "Never use pnpm to install dependencies in this repository."))
    old = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp()
    os.utime(folder / "pnpm.md", (old, old))  # dated by the file times: a plan says which side `--resolve newer` keeps
    (folder / "MEMORY.md").write_text(entries("pnpm", "npm"), encoding="utf-8")
    corpus, settings, plan = plan_of(tmp_path, STUB)
    [conflict] = plan.actions
    assert conflict.kind == "conflict"
    # before: "--resolve newer archives pnpm.md, keeps npm.md", where apply archives neither
    assert "--resolve newer" not in conflict.reason and conflict.newer is None
    assert conflict.reason.endswith(f"; --resolve leaves it ({AGENT}/npm.md: a symlink: left untouched): settle it by hand")
    [(_, why)] = applied_whole(corpus, plan, settings)
    assert why == f"{AGENT}/npm.md: a symlink: left untouched"


@pytest.mark.parametrize("beside", ["folder", "symlink"])
def test_a_topic_file_with_a_hash_in_its_name_is_merged_as_any_other(tmp_path, beside):
    """`ci#cache.md` is a topic file, not a memory kept inside an index `ci`: a folder or a symlink
    named `ci` beside it made it "kept inside ci, left untouched", and its merge was dropped from
    the plan and skipped at apply (before, both merged it)."""
    folder = folder_of(tmp_path, ci=topic("dup", SAME))
    (folder / "ci#cache.md").write_text(topic("dup", SAME), encoding="utf-8")
    os.remove(folder / "ci.md")
    (folder / "ci-cache.md").write_text(topic("dup", SAME), encoding="utf-8")
    os.utime(folder / "ci-cache.md", (1e9, 1e9))  # the older: the survivor
    if beside == "folder":
        (folder / "ci").mkdir()
    else:
        (folder / "ci").symlink_to("ci-cache.md")
    (folder / "MEMORY.md").write_text(entries("ci-cache") + "- [CI](<ci%23cache.md>) — notes\n", encoding="utf-8")
    corpus, settings, plan = plan_of(tmp_path)
    assert [(a.kind, a.targets) for a in plan.actions if a.kind == "merge_duplicate"] == [
        ("merge_duplicate", [f"{AGENT}/ci-cache.md", f"{AGENT}/ci#cache.md"])]
    assert not any("kept inside" in r for r in reviews(plan).values())
    result = apply_plan(corpus, plan, settings)
    assert result.changes.skipped == [] and not (folder / "ci#cache.md").exists()


def test_a_symlinked_topic_file_with_a_hash_in_its_name_is_said_as_a_file(tmp_path):
    """`c#.md` a symlink: left as any symlinked topic file is, and said so by its own name. The
    finding took the `#` for "kept inside an index" and named a MEMORY.md `…/c` that is no file."""
    folder = folder_of(tmp_path, real=topic("real"))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/c.md").write_text(topic("c"), encoding="utf-8")  # no memory of the folder: no alias
    (folder / "c#.md").symlink_to(tmp_path / "notes/c.md")
    (folder / "MEMORY.md").write_text(entries("real"), encoding="utf-8")
    _, _, plan = plan_of(tmp_path)
    found = reviews(plan)
    assert f"{AGENT}/c" not in found, found
    assert f"{AGENT}/c#.md" in found and found[f"{AGENT}/c#.md"].startswith("read as a memory, but apply never"), found
