"""A symlinked topic file pointing at another memory of the store is a second name of that memory:
read once, never merged with it, and what would retire the memory it points at asks first (a
red-team's case: a merge kept `current.md -> project_deploy.md` and archived project_deploy.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import plan_json, run_cli

from pipeline.model import Action, Corpus, Memory
from pipeline.rules.aliases import ALIASES, ask_before_leaving_aliases
from pipeline.rules.outcome import Outcome

DEPLOY = "---\nname: project_deploy\ndescription: how we deploy\ntype: project\n---\n\nDeploys go through the blue/green switch in ops/deploy.sh.\n"


def _store(tmp_path: Path) -> Path:
    folder = tmp_path / ".claude" / "memory"
    folder.mkdir(parents=True)
    (folder / "project_deploy.md").write_text(DEPLOY)
    os.symlink("project_deploy.md", folder / "current.md")
    (folder / "MEMORY.md").write_text("# Memory\n\n- [deploy](project_deploy.md) — how we deploy\n- [current](current.md) — the current one\n")
    (tmp_path / "src").mkdir()
    return tmp_path


def test_an_alias_is_read_once_as_what_it_points_at_and_never_merged_into(tmp_path: Path):
    root = _store(tmp_path)
    plan = plan_json(root, "--model", "none")
    assert plan["memories"] == 1 and plan["actions"] == []
    [finding] = [f for f in plan["findings"] if f["kind"] == "symlink_skipped"]
    assert finding["reason"] == ".claude/memory/current.md is a symlink to .claude/memory/project_deploy.md: read once, as .claude/memory/project_deploy.md"
    res = run_cli("apply", str(root), "--yes", "--json", "--model", "none", "--now", "2026-11-29")
    assert res.returncode == 0 and json.loads(res.stdout)["applied"] == []
    assert (root / ".claude/memory/current.md").read_text() == DEPLOY


def test_retiring_a_memory_an_alias_points_at_asks_first():
    target = Memory(key="f/project_deploy.md", layout="claude", body="x", extra={ALIASES: ["f/current.md"]})
    other = Memory(key="f/other.md", layout="claude", body="y")
    corpus = Corpus(layout="claude", root="/nowhere", memories=[target, other])
    prune = Action(kind="prune_stale", targets=[target.key], reason="every ref is gone")
    plain = Action(kind="prune_stale", targets=[other.key], reason="every ref is gone")
    edit = Action(kind="absolutize_dates", targets=[target.key], reason="dates")
    asked = Action(kind="consolidate", targets=[target.key, other.key], reason="one subject", needs_user=True)
    out = ask_before_leaving_aliases(corpus, Outcome([prune, plain, edit, asked], []))
    assert [a.needs_user for a in out.actions] == [True, False, False, True]
    assert out.actions[0].reason == "every ref is gone; asked: f/current.md (a symlink) points at it and would dangle"
    # an action already asked says it too: the user approving it should know
    assert out.actions[3].reason == "one subject; f/current.md (a symlink) points at it and would dangle"


def test_an_index_listing_the_alias_lists_what_it_points_at(tmp_path: Path):
    """A red-team's case: MEMORY.md listed current.md only; the memory it points at was "not indexed"
    and a rebuild gave it a second entry."""
    root = _store(tmp_path)
    index = root / ".claude/memory/MEMORY.md"
    index.write_text("# Memory\n\n- [current](current.md) — the current deploy memory\n")
    plan = plan_json(root, "--model", "none")
    assert [a for a in plan["actions"] if a["kind"] == "rebuild_index"] == []
