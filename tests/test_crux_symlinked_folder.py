"""A crux type folder that is a symlink out of the store (`memories/idea -> elsewhere`): a
red-team's case. It was left out of the plan silently (28 memories read as 23), and a demote into
that type made every apply and nightly run exit 1, so no other action was ever applied."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from helpers import FIXTURES, NOW, plan_json, run_cli, snapshot


def _store(tmp_path: Path) -> tuple[Path, Path]:
    root, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    shutil.copytree(FIXTURES / "crux", root, symlinks=True)
    shutil.copytree(root / "memories" / "idea", elsewhere)
    shutil.rmtree(root / "memories" / "idea")
    os.symlink(elsewhere, root / "memories" / "idea")
    return root, elsewhere


def test_a_symlinked_type_folder_is_said_and_an_action_into_it_is_skipped_not_the_run(tmp_path):
    root, elsewhere = _store(tmp_path)
    plan = plan_json(root, "--model", "none")
    [finding] = [f for f in plan["findings"] if f["kind"] == "symlink_skipped"]
    assert finding["targets"] == ["memories/idea"] and "not followed" in finding["reason"]
    into_idea = [a for a in plan["actions"] if a.get("to_type") == "idea" and not a["needs_user"]]
    assert into_idea  # the fixture demotes a memory to an idea: its move would go out of the store
    outside = snapshot(elsewhere)
    for _ in range(2):  # every night alike: the one move skipped, the others applied
        res = run_cli("apply", str(root), "--yes", "--json", "--model", "none", "--now", NOW)
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout)
        [skipped] = out["skipped"]
        assert skipped["kind"] == "demote" and skipped["why"].startswith("not applied: memories/idea/")
        assert skipped["why"].endswith(": a folder on its path leads outside the store")
    assert snapshot(elsewhere) == outside  # nothing written where the link leads
