"""status and runs: the applied runs like `git log`, pending counts as `plan` counts them, the
state folder's size; journal retention keeps the newest `journal.keep_runs` finished runs."""

import json
import re

from helpers import NOW, run_cli


def applied(store, *extra) -> str:
    res = run_cli("apply", str(store), "--now", NOW, "--yes", *extra)
    assert res.returncode == 0, res.stderr
    return re.search(r"Applied run (\S+):", res.stdout).group(1)


def test_status_shows_runs_pending_and_state_size(bank_store):
    run_id = applied(bank_store)
    res = run_cli("status", str(bank_store), "--now", NOW)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert f"run {run_id}  " in out and "UTC  model stub" in out
    assert f"undo: memconsolidate undo {bank_store} --run {run_id}" in out
    assert re.search(r"state folder: \d+(\.\d)? (bytes|KB)", out)
    info = json.loads(run_cli("status", str(bank_store), "--json", "--now", NOW).stdout)
    assert info["state_bytes"] > 0 and info["runs"][-1]["run_id"] == run_id and info["runs"][-1]["undoable"]


def test_status_counts_pending_as_plan_does_with_the_same_model(bank_store):
    for model in ("stub", "none"):
        plan = json.loads(run_cli("plan", str(bank_store), "--json", "--now", NOW, "--model", model).stdout)
        auto = {}
        for a in plan["actions"]:
            if not a.get("needs_user"):
                auto[a["kind"]] = auto.get(a["kind"], 0) + 1
        info = json.loads(run_cli("status", str(bank_store), "--json", "--now", NOW, "--model", model).stdout)
        assert info["pending_actions"] == dict(sorted(auto.items())), model
    human = run_cli("status", str(bank_store), "--now", NOW, "--model", "none").stdout
    assert "pending (rules only (--model none))" in human
    assert "pending (plan with model stub)" in run_cli("status", str(bank_store), "--now", NOW).stdout


def test_status_takes_the_options_that_change_plan_counts(tmp_path):
    # --repo (staleness) and --max-retire (the cap) change what plan proposes; status takes them too.
    import shutil

    from helpers import FIXTURES

    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "claude", store)
    for extra in ((), ("--repo", str(store)), ("--repo", str(store), "--max-retire", "1")):
        plan = json.loads(run_cli("plan", str(store), "--json", "--now", NOW, *extra).stdout)
        auto: dict[str, int] = {}
        for a in plan["actions"]:
            if not a.get("needs_user"):
                auto[a["kind"]] = auto.get(a["kind"], 0) + 1
        res = run_cli("status", str(store), "--json", "--now", NOW, *extra)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["pending_actions"] == dict(sorted(auto.items())), extra


def keep(store, n: int):
    cfg = store.parent / "keep.toml"
    cfg.write_text(f"[journal]\nkeep_runs = {n}\n")
    return ("--config", str(cfg))


def test_retention_keeps_the_newest_runs_and_undo_says_when_too_old(bank_store):
    opts = keep(bank_store, 2)
    first = applied(bank_store, *opts)
    assert run_cli("undo", str(bank_store)).returncode == 0
    applied(bank_store, *opts)
    assert run_cli("undo", str(bank_store)).returncode == 0
    last = applied(bank_store, *opts)
    runs = json.loads(run_cli("runs", str(bank_store), "--json", *opts).stdout)
    assert len(runs) == 2 and runs[-1]["run_id"] == last
    assert sorted(p.name for p in (bank_store / ".memconsolidate" / "runs").iterdir()) == sorted(r["run_id"] for r in runs)
    res = run_cli("undo", str(bank_store), "--run", first)
    assert res.returncode == 1 and "too old to undo" in res.stderr, res.stderr
    listing = run_cli("runs", str(bank_store), *opts).stdout
    assert listing.startswith("2 runs kept") and f"run {last}" in listing


def test_retention_never_prunes_an_unfinished_or_foreign_run(bank_store):
    from pipeline.history import run_history
    from pipeline.journal import prune_runs, runs_dir
    from pipeline.journal_check import sign, store_key

    first = applied(bank_store)
    assert run_cli("undo", str(bank_store)).returncode == 0
    applied(bank_store)
    undo_run = [e.run_id for e in run_history(bank_store) if e.undo_of == first][0]
    runs = runs_dir(bank_store)
    # the oldest becomes our own unfinished journal (signed, status prepared) ...
    data = json.loads((runs / first / "journal.json").read_text())
    data["status"] = "prepared"
    data["hmac"] = sign(store_key(bank_store / ".memconsolidate"), data, first)
    (runs / first / "journal.json").write_text(json.dumps(data))
    # ... and an older one says it is committed, but is not signed with this store's key
    foreign = runs / "20200101T000000Z-0000"
    foreign.mkdir()
    (foreign / "journal.json").write_text(json.dumps({**data, "status": "committed", "hmac": "0" * 64}))
    pruned = prune_runs(bank_store, 1)
    assert pruned == [undo_run]  # the only finished run of ours beyond the newest one
    assert (runs / first / "journal.json").exists() and (foreign / "journal.json").exists()


def test_run_ids_of_one_store_count_up_within_a_second(tmp_path):
    # Runs are ordered by id (retention, "too old to undo", undo's latest run): ids made in the same
    # second must still sort in the order they were made (a random suffix did not).
    from pipeline.journal import new_run_id

    runs = tmp_path / ".memconsolidate" / "runs"
    runs.mkdir(parents=True)
    ids = []
    for _ in range(20):
        run_id = new_run_id(tmp_path)
        (runs / run_id).mkdir()
        ids.append(run_id)
    assert ids == sorted(ids) and len(set(ids)) == 20


def test_a_live_run_is_in_progress_not_unfinished():
    from pipeline.render.runs import run_log

    runs = [
        {"run_id": "R1", "created": "2026-11-29T09:00:00+00:00", "status": "prepared", "applied": [], "files": 0},
        {"run_id": "R2", "created": "2026-11-29T10:00:00+00:00", "status": "prepared", "applied": [], "files": 0},
    ]
    text = "\n".join(run_log(runs, "/s", live="4242"))
    # The newest unfinished journal is the live run's; an older one is a crashed run's.
    assert "in progress (pid 4242)" in text and text.count("unfinished: the next command") == 1
    assert text.index("in progress") < text.index("unfinished")
    assert "in progress" not in "\n".join(run_log(runs, "/s"))
