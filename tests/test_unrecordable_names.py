"""A file name the journal will not record (a backslash: legal on POSIX, a separator on Windows)
costs the one action that would move or write it, never the whole run (red-team bug 7: every
nightly run exited 1 and no other action of the store was ever applied)."""

from __future__ import annotations

import json
import os

from helpers import NOW, files, run_cli, snapshot

from pipeline.journal_check import path_problem

P = ".claude/projects/-home-dev-acme-shop/memory/"
ODD = "zz\\migrations.md"


def test_path_problem_names_a_backslash():
    assert path_problem(P + ODD) == "holds a backslash (a folder separator on Windows)"
    assert path_problem(P + "project_migrations.md") is None
    assert path_problem(".memconsolidate/reports/r.md") is None and path_problem(".memconsolidate/key") == "is inside the state folder"


def test_an_action_on_a_file_named_with_a_backslash_is_skipped_and_the_rest_applied(fixture_store):
    store = fixture_store("claude")
    (store / P / ODD).write_bytes((store / P / "project_migrations.md").read_bytes())  # an exact duplicate
    os.utime(store / P / "project_migrations.md", (1_577_836_800, 1_577_836_800))
    before = snapshot(store)
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    [skipped] = [s for s in out["skipped"] if P + ODD in s["targets"]]
    assert skipped["kind"] == "merge_duplicate"
    assert skipped["why"] == f"not applied: the journal cannot record {P + ODD}, which holds a backslash (a folder separator on Windows)"
    assert ("merge_duplicate", P + "project_ci_cache_copy.md") in [(a["kind"], a["targets"][-1]) for a in out["applied"]]
    after = files(store)
    assert after[P + ODD] == before[P + ODD] and not (store / P / "project_ci_cache_copy.md").exists()
    # the nightly run too, every night
    assert run_cli("run", str(store), "--now", NOW, "--model", "none").returncode == 0
    assert run_cli("undo", str(store)).returncode == 0  # the first run (the second applied nothing)
    assert snapshot(store) == before
