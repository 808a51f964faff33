"""A tree index (MEMORY.md and sub-index files, numbered `- N. Title` lines for `N-…md` files, as
some real Claude Code stores keep them): a file the run archives loses its lines everywhere the index
points at it, not just in MEMORY.md's links. Before, its numbered lines and its sub-index entries
were left dangling (a resolver script given the number found nothing). Stores built here, in the
shape of ../shared/real-stores/wild/webeverything."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from helpers import NOW, run_cli, snapshot

PLAN = ["--now", NOW, "--model", "none", "--max-retire", "0.5"]  # two of five files retired
APPLY = [*PLAN, "--yes"]

FRONT = "---\nname: {name}\ndescription: {desc}\ntype: feedback\n---\n\n{body}\n"
MEMORY_MD = """# Memory

Core rules, by number (open one with the resolver):

- 1. Migrations first — run migrations before the rolling deploy
- 2. Migrations first (copy) — the same rule, written again
- **[Ops](index-ops.md)** — the ops cluster
"""
INDEX_OPS = """---
name: index-ops
description: the ops cluster
---

Ops cluster — see also [the queue copy](5-queue-copy.md) when in doubt:

- 2. Migrations first (copy) — the same rule, written again
- 3. Cache keys — cache keys carry the schema version
- [Queue retries](4-queue.md) — retry the queue three times
- [Queue retries (copy)](5-queue-copy.md) — retry the queue three times
"""
FILES = {
    "1-migrations.md": ("migrations", "run migrations first", "Run migrations before the rolling deploy."),
    "2-migrations-copy.md": ("migrations-copy", "run migrations first", "Run migrations before the rolling deploy."),
    "3-cache.md": ("cache", "cache keys", "Cache keys carry the schema version, so a deploy never reads stale entries."),
    "4-queue.md": ("queue", "queue retries", "Retry the queue worker three times with backoff."),
    "5-queue-copy.md": ("queue-copy", "queue retries", "Retry the queue worker three times with backoff."),
}


def tree_store(root: Path, eol: str = "\n") -> Path:
    root.mkdir(parents=True)
    (root / "MEMORY.md").write_bytes(MEMORY_MD.replace("\n", eol).encode())
    (root / "index-ops.md").write_bytes(INDEX_OPS.replace("\n", eol).encode())
    for name, (n, desc, body) in FILES.items():
        (root / name).write_text(FRONT.format(name=n, desc=desc, body=body), encoding="utf-8")
    return root


def _apply(store: Path) -> dict:
    res = run_cli("apply", str(store), *APPLY, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_the_plan_archives_the_two_copies(tmp_path):
    """What the rest of this file relies on: the duplicates merge, the copies go."""
    store = tree_store(tmp_path / "s")
    res = run_cli("plan", str(store), *PLAN, "--json")
    merges = [a for a in json.loads(res.stdout)["actions"] if a["kind"] == "merge_duplicate"]
    assert sorted(a["survivor"] for a in merges) == ["1-migrations.md", "4-queue.md"]


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_archived_files_lose_their_numbered_lines_and_sub_index_entries(tmp_path, eol):
    store = tree_store(tmp_path / "s", eol)
    old_index, old_sub = (store / "MEMORY.md").read_bytes(), (store / "index-ops.md").read_bytes()
    result = _apply(store)
    run_id = result["run_id"]
    assert not (store / "2-migrations-copy.md").exists() and not (store / "5-queue-copy.md").exists()

    index = (store / "MEMORY.md").read_bytes().decode()
    assert "- 2. Migrations first (copy)" not in index
    assert "- 1. Migrations first" in index and "**[Ops](index-ops.md)**" in index
    sub = (store / "index-ops.md").read_bytes().decode()
    assert "- 2. Migrations first (copy)" not in sub
    assert "(5-queue-copy.md)" not in sub
    assert "see also ~~the queue copy~~ when in doubt" in sub  # prose kept, its link struck out
    assert "- 3. Cache keys" in sub and "- [Queue retries](4-queue.md)" in sub
    assert sub.startswith(f"---{eol}name: index-ops{eol}")  # front matter and line endings kept
    assert all(line.endswith("\r") == (eol == "\r\n") for line in sub.split("\n")[:-1])
    # the old copies are archived first, byte for byte
    assert (store / ".archive" / run_id / "MEMORY.md").read_bytes() == old_index
    assert (store / ".archive" / run_id / "index-ops.md").read_bytes() == old_sub


def test_no_index_line_is_left_for_a_gone_file_and_undo_restores_every_index(tmp_path):
    """After the run every `- N.` line of the tree stands for a file that is there (a resolver given
    the number finds it), the next plan proposes no index rebuild, and undo puts every byte back."""
    store = tree_store(tmp_path / "s")
    before = snapshot(store)
    _apply(store)
    numbers = {name.split("-", 1)[0] for name in os.listdir(store) if name[0].isdigit()}
    for index in ("MEMORY.md", "index-ops.md"):
        for line in (store / index).read_text(encoding="utf-8").splitlines():
            if (m := re.match(r"- (\d+)\. ", line)):
                assert m.group(1) in numbers, f"{index}: {line!r} stands for no file"
    plan = json.loads(run_cli("plan", str(store), *PLAN, "--json").stdout)
    assert not [a for a in plan["actions"] if a["kind"] == "rebuild_index"], plan["actions"]
    res = run_cli("undo", str(store))
    assert res.returncode == 0, res.stderr
    assert snapshot(store) == before


def test_a_sub_index_edited_since_the_plan_read_it_is_not_replaced(tmp_path, monkeypatch):
    """The sub-index write is built on the bytes read: one an agent edited meanwhile refuses the run."""
    from pipeline import journal

    store = tree_store(tmp_path / "s")
    real = journal._simulate

    def agent_then_simulate(root, ops):
        with open(store / "index-ops.md", "a", encoding="utf-8") as fh:
            fh.write("- 6. Written meanwhile — by the agent\n")
        return real(root, ops)

    monkeypatch.setattr(journal, "_simulate", agent_then_simulate)
    from pipeline.api import apply_plan, build_plan, open_store
    from pipeline.config import Settings
    from pipeline.errors import RunFailed

    settings = Settings.model_validate({"now": NOW, "llm": {"model": "none"}, "max_retire_fraction": 0.5})
    corpus, settings = open_store(store, settings)
    plan = build_plan(corpus, settings)
    with pytest.raises(RunFailed, match="index-ops.md changed since it was read"):
        apply_plan(corpus, plan, settings)
    assert (store / "index-ops.md").read_text(encoding="utf-8").endswith("- 6. Written meanwhile — by the agent\n")
    assert (store / "2-migrations-copy.md").exists()


def test_a_sub_index_that_is_not_reached_is_left_alone(tmp_path):
    """Only the sub-indexes MEMORY.md reaches are indexes of the folder; another file listing the copy
    is a memory, and memories are not rewritten by an archive elsewhere."""
    store = tree_store(tmp_path / "s")
    (store / "MEMORY.md").write_text(MEMORY_MD.replace("- **[Ops](index-ops.md)** — the ops cluster\n", ""), encoding="utf-8")
    sub = (store / "index-ops.md").read_bytes()
    _apply(store)
    assert (store / "index-ops.md").read_bytes() == sub


def test_an_authors_numbered_list_is_not_taken_for_tree_index_lines(tmp_path):
    """`- 2. Never force-push to main` is a house rule, not the entry of `2-migrations-copy.md`: its
    title is not that file's, so it stays when the file is archived."""
    store = tree_store(tmp_path / "s")
    rules = "## House rules\n\n- 1. Always run the tests before a push\n- 2. Never force-push to main\n"
    (store / "MEMORY.md").write_text(MEMORY_MD + "\n" + rules, encoding="utf-8")
    _apply(store)
    index = (store / "MEMORY.md").read_text(encoding="utf-8")
    assert rules in index
    assert "- 2. Migrations first (copy)" not in index  # the tree-index line of the archived copy goes


def test_a_sub_index_keeps_every_other_byte(tmp_path):
    """Only lines pointing at archived files change: repeated entries of surviving files (a second
    listing "by date"), trailing blank lines and a missing final newline stay as written."""
    store = tree_store(tmp_path / "s")
    by_date = "\n## By date\n\n- [Queue retries](4-queue.md) — 2026-03\n- 3. Cache keys — 2026-02\n\n\n"
    text = INDEX_OPS + by_date + "- [Queue retries](4-queue.md) — again, no final newline"
    (store / "index-ops.md").write_text(text, encoding="utf-8")
    _apply(store)
    expected = (text.replace("- 2. Migrations first (copy) — the same rule, written again\n", "")
                .replace("- [Queue retries (copy)](5-queue-copy.md) — retry the queue three times\n", "")
                .replace("[the queue copy](5-queue-copy.md)", "~~the queue copy~~"))
    assert (store / "index-ops.md").read_text(encoding="utf-8") == expected


def test_a_symlinked_sub_index_is_left_alone_and_the_run_applies(tmp_path):
    store = tree_store(tmp_path / "s")
    (store / "shared").mkdir()
    (store / "index-ops.md").rename(store / "shared" / "ops.txt")
    (store / "index-ops.md").symlink_to("shared/ops.txt")
    sub = (store / "shared" / "ops.txt").read_bytes()
    result = _apply(store)
    assert not (store / "2-migrations-copy.md").exists()
    assert (store / "shared" / "ops.txt").read_bytes() == sub and (store / "index-ops.md").is_symlink()
    report = (store / ".archive" / result["run_id"] / "REPORT.md").read_text(encoding="utf-8")
    assert "index-ops.md not edited, it is a symlink: 3 lines still point at archived files" in report


def test_a_sub_index_named_like_the_run_report_keeps_both(tmp_path):
    """The sub-index's old copy and the run's report would both be `.archive/<run>/REPORT.md`: the
    report takes the other name, as it does beside an archived memory of that name."""
    store = tree_store(tmp_path / "s")
    (store / "index-ops.md").rename(store / "REPORT.md")
    (store / "MEMORY.md").write_text(MEMORY_MD.replace("index-ops.md", "REPORT.md"), encoding="utf-8")
    sub = (store / "REPORT.md").read_bytes()
    result = _apply(store)
    shelf = store / ".archive" / result["run_id"]
    assert (shelf / "REPORT.md").read_bytes() == sub
    assert "consolidation report" in (shelf / "REPORT.memconsolidate.md").read_text(encoding="utf-8").lower()
