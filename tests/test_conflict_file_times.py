"""`--resolve newer` on claude memories the file times date: the plan decides which side is archived,
apply executes it or nothing.

With no front-matter date, a side's date is its file's modification time, which no hash of the plan
covers: a `touch` between `plan` and `apply` turned which side was archived under an unchanged
fingerprint. The plan now records the newer side (`newer`), so the fingerprint covers it, and apply
archives the side the plan named or none.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from helpers import NOW, plan_json, run_cli

from pipeline.actions import ConflictAction
from pipeline.config import Settings
from pipeline.layouts.claude import decisions, reader as claude, writer as claude_write

FOLDER = ".claude/agent-memory/ops/"
OLD, NEW = FOLDER + "deploy_always.md", FOLDER + "deploy_never.md"
JAN, FEB, MAR = (dt.datetime(2026, m, 1, tzinfo=dt.timezone.utc).timestamp() for m in (1, 2, 3))


def _memory(name: str, says: str, dated: str | None) -> str:
    date = f"created: {dated}\n" if dated else ""
    return f"---\nname: {name}\ndescription: deploy day\ntype: feedback\n{date}---\n\n{says} deploy the api service on Fridays after the release review.\n"


def conflicting_store(root: Path, dated: tuple[str | None, str | None] = (None, None)) -> Path:
    """Two memories the stub's conflicts stage finds contradicting each other: OLD modified in
    January, NEW in February; front-matter dates only where `dated` gives them."""
    folder = root / FOLDER
    folder.mkdir(parents=True)
    (root / OLD).write_text(_memory("deploy always", "Always", dated[0]))
    (root / NEW).write_text(_memory("deploy never", "Never", dated[1]))
    (folder / "MEMORY.md").write_text("# Memory\n\n- [deploy always](deploy_always.md) — deploy day\n"
                                      "- [deploy never](deploy_never.md) — deploy day\n")
    touch(root / OLD, JAN)
    touch(root / NEW, FEB)
    return root


def touch(path: Path, when: float) -> None:
    os.utime(path, (when, when))


def the_conflict(plan: dict) -> tuple[int, dict]:
    found = [(n, a) for n, a in enumerate(plan["actions"], start=1) if a["kind"] == "conflict"]
    assert len(found) == 1, plan["actions"]
    return found[0]


def test_a_touch_after_the_plan_never_archives_the_side_the_plan_kept(tmp_path):
    store = conflicting_store(tmp_path / "s")
    n, conflict = the_conflict(plan_json(store, "--model", "stub"))
    kept = (store / NEW).read_bytes()
    touch(store / OLD, MAR)  # now OLD is the newer by its file time; no byte of either changed
    res = run_cli("apply", str(store), "--now", NOW, "--model", "stub", "--yes", "--json",
                  "--select", f"{n}={conflict['fingerprint']}", "--resolve", "newer")
    # The side the plan kept is still where it was; the reviewed action is refused, not turned.
    assert (store / NEW).read_bytes() == kept
    assert (store / OLD).exists()
    assert res.returncode == 2 and "the plan changed since it was printed" in res.stderr, res.stderr
    assert not list(store.rglob(".archive"))
    # what the plan showed: the newer side, and in its reason what `--resolve newer` archives
    assert conflict["newer"] == NEW
    assert "--resolve newer archives deploy_always.md, keeps deploy_never.md" in conflict["reason"]


def test_applied_as_planned_the_older_side_is_archived(tmp_path):
    store = conflicting_store(tmp_path / "s")
    n, conflict = the_conflict(plan_json(store, "--model", "stub"))
    res = run_cli("apply", str(store), "--now", NOW, "--model", "stub", "--yes", "--json",
                  "--select", f"{n}={conflict['fingerprint']}", "--resolve", "newer")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert [a["newer"] for a in out["applied"]] == [NEW] and out["skipped"] == []
    assert not (store / OLD).exists() and (store / NEW).exists()
    assert [p.name for p in store.rglob(".archive/*/deploy_*.md")] == ["deploy_always.md"]


def test_apply_skips_a_conflict_whose_file_times_turned_since_it_was_planned(tmp_path):
    """A plan kept by a caller (the library's `apply_plan` takes one) applied to the store read
    again: the sides' file times now name the other one newer. Nothing is archived."""
    store = conflicting_store(tmp_path / "s")
    settings = Settings(now=dt.date.fromisoformat(NOW))
    planned = decisions.newer_sides(claude.load(store, settings), [
        ConflictAction(targets=[OLD, NEW], reason="one says always, the other never", needs_user=True)])
    assert [a.newer for a in planned if isinstance(a, ConflictAction)] == [NEW]
    touch(store / OLD, MAR)
    changes = claude_write.changes(claude.load(store, settings), planned, settings, "run-1", "newer")
    assert changes.ops == [] and changes.applied == []
    [(_, why)] = changes.skipped
    assert why.startswith("the plan named deploy_never.md the newer by file modification time, "
                          "and the file times now name deploy_always.md: nothing archived")


def test_only_conflicts_the_file_times_date_record_a_side(tmp_path):
    settings = Settings(now=dt.date.fromisoformat(NOW))
    cases = {
        # both dated by their front matter: in the hashed content, nothing to record
        ("2026-04-01", "2026-05-01"): None,
        # one dated by its file time (February) against a front-matter date: the file time decides
        ("2026-01-15", None): NEW,
        ("2026-03-15", None): OLD,
        # neither dated, the same file time: no newer side, and none recorded
        (None, None): None,
    }
    for n, (dated, newer) in enumerate(cases.items()):
        store = conflicting_store(tmp_path / f"s{n}", dated)
        if dated == (None, None):
            touch(store / OLD, FEB)
        action = ConflictAction(targets=[OLD, NEW], reason="r", needs_user=True)
        [planned] = decisions.newer_sides(claude.load(store, settings), [action])
        assert isinstance(planned, ConflictAction) and planned.newer == newer, dated
        assert (planned is action) == (newer is None), dated  # the others are left exactly as they were
