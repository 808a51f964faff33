"""`memconsolidate fleet plan|apply|run` on the local engine (a process pool): 52 stores of the four
layouts plus broken ones; crashes, the shared budget, resuming a killed fleet run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fleet_helpers import LAYOUTS, PLANTED, CountingMeter, broken_stores, build_fleet, crash_task, lines
from helpers import FIXTURES, NOW, REPO, copy_store, run_cli, snapshot

from pipeline.fleet.budget import Ledger, Limits, _Shared, start_state
from pipeline.fleet.targets import discover
from pipeline.journal import committed_runs
from pipeline.llm.errors import BudgetExceeded


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    top = tmp_path_factory.mktemp("fleet")
    return top, build_fleet(top)


@pytest.fixture(scope="module")
def planned(fleet, tmp_path_factory):
    """One `fleet plan --discover` over the whole fleet (stub model, 2 workers), plans written out."""
    top, kinds = fleet
    plans = tmp_path_factory.mktemp("plans")
    stores_file = top / "more.txt"
    stores_file.write_text("# a store that was deleted since the list was made\nmissing-store\n")
    before = {p: snapshot(p) for p in kinds["broken"]} | {top / "broken" / "precious.txt": (top / "broken" / "precious.txt").read_bytes()}
    res = run_cli("fleet", "plan", "--discover", str(top), "--stores", str(stores_file), "--now", NOW, "--workers", "2", "--plans-dir", str(plans))
    return res, plans, before


def test_fleet_plan_reports_every_store_once_and_failures_do_not_stop_the_others(fleet, planned):
    top, kinds = fleet
    res, _, before = planned
    assert res.returncode == 1, res.stderr  # a broken store failed
    records = lines(res.stdout)
    assert len(records) == 4 * 13 + 4 + 1
    for layout in LAYOUTS:
        for path in kinds[layout]:
            r = records[str(path.resolve())]
            assert (r["layout"], r["status"], r["errors"]) == (layout, "ok", []), r
            assert r["counts"]["memories"] > 0 and r["run_id"] is None and r["llm"]["calls"] > 0
    broken = {Path(p).name: r for p, r in records.items() if "/broken/" in p}
    assert broken["garbage"]["status"] == "failed" and "crux-memories.json" in broken["garbage"]["errors"][0]
    assert broken["fifo"]["status"] == "ok"  # the reader skips a FIFO instead of blocking on it
    assert broken["hostile"]["status"] == "ok" and PLANTED in broken["hostile"]["notes"][0]  # plan reports it, read-only
    missing = records[str((top / "missing-store").resolve())]
    assert missing["status"] == "failed" and "path not found" in missing["errors"][0]
    # the summary is on stderr: stdout held nothing but the JSON lines
    assert "all " in res.stderr and "failed: " in res.stderr
    # plan never wrote to a store, and nothing outside was touched by the planted journal
    for path, content in before.items():
        assert (snapshot(path) if path.is_dir() else path.read_bytes()) == content


def test_fleet_plan_writes_the_bytes_a_single_plan_prints(fleet, planned):
    _, kinds = fleet
    res, _, _ = planned
    records = lines(res.stdout)
    for layout in LAYOUTS:
        store = kinds[layout][5]
        alone = run_cli("plan", str(store), "--now", NOW, "--json")
        assert alone.returncode == 0, alone.stderr
        assert Path(records[str(store.resolve())]["plan_file"]).read_text(encoding="utf-8") == alone.stdout


def test_each_store_reads_its_own_config_as_it_would_alone(tmp_path):
    plain = copy_store(FIXTURES / "bank", tmp_path / "plain")
    own = copy_store(FIXTURES / "bank", tmp_path / "own")
    (own / ".memconsolidate.toml").write_text('[llm]\nmodel = "none"\n')
    res = run_cli("fleet", "plan", str(plain), str(own), "--now", NOW, "--plans-dir", str(tmp_path / "plans"))
    assert res.returncode == 0, res.stderr
    records = lines(res.stdout)
    assert records[str(plain)]["llm"]["calls"] > 0 and records[str(own)]["llm"]["calls"] == 0
    alone = run_cli("plan", str(own), "--now", NOW, "--json")
    assert Path(records[str(own)]["plan_file"]).read_text(encoding="utf-8") == alone.stdout


def test_discovery_never_enters_a_store_its_state_folder_git_or_a_symlink(tmp_path):
    top = tmp_path / "top"
    crux = copy_store(FIXTURES / "crux", top / "a" / "crux")
    copy_store(FIXTURES / "bank", crux / "memories" / "inner-bank")  # a store inside a store
    copy_store(FIXTURES / "bank", top / "a" / ".git" / "bank")
    copy_store(FIXTURES / "zylos", top / "b" / ".memconsolidate" / "zylos")
    repo = copy_store(FIXTURES / "claude", top / "b" / "repo")  # found at the repository, not its .claude/
    folder = copy_store(FIXTURES / "claude" / ".claude" / "agent-memory" / "backend-architect", top / "c" / "memory")
    outside = copy_store(FIXTURES / "bank", tmp_path / "outside")
    (top / "c" / "link").symlink_to(outside)
    hidden = copy_store(FIXTURES / "bank", top / ".hidden" / "bank")
    warnings: list[str] = []
    assert sorted(discover(str(top), warnings.append)) == sorted(str(p) for p in (crux, repo, folder, hidden))
    assert warnings == []


def test_fleet_apply_does_what_apply_does_alone_and_each_store_undoes(tmp_path):
    fleet_copies = [copy_store(FIXTURES / layout, tmp_path / "fleet" / layout) for layout in LAYOUTS]
    alone_copies = [copy_store(FIXTURES / layout, tmp_path / "alone" / layout) for layout in LAYOUTS]
    originals = {p: snapshot(p) for p in fleet_copies}
    assert run_cli("fleet", "apply", *map(str, fleet_copies), "--now", NOW, "--model", "none").returncode == 2  # no --yes
    res = run_cli("fleet", "apply", *map(str, fleet_copies), "--now", NOW, "--model", "none", "--yes", "--workers", "2")
    assert res.returncode == 0, res.stderr
    records = lines(res.stdout)
    for fleet_store, alone_store in zip(fleet_copies, alone_copies):
        assert run_cli("apply", str(alone_store), "--now", NOW, "--model", "none", "--yes").returncode == 0
        r = records[str(fleet_store)]
        assert r["status"] == "ok" and r["counts"]["applied"] > 0 and r["run_id"], r
        assert [c.run_id for c in committed_runs(fleet_store)] == [r["run_id"]]
        (alone_run,) = committed_runs(alone_store)
        assert _without_run_id(snapshot(fleet_store), r["run_id"]) == _without_run_id(snapshot(alone_store), alone_run.run_id)
        undo = run_cli("undo", str(fleet_store), "--run", r["run_id"])
        assert undo.returncode == 0, undo.stderr
        assert snapshot(fleet_store) == originals[fleet_store]


# zylos' session log heads each run's entry with the wall-clock minute ("## 15:50 - Memory
# consolidation"): two runs a minute apart differ there and nowhere else.
_CLOCK_MINUTE = re.compile(rb"^## \d\d:\d\d - ", re.MULTILINE)


def _without_run_id(files: dict[str, bytes], run_id: str) -> dict[str, bytes]:
    return {
        k.replace(run_id, "RUN"): _CLOCK_MINUTE.sub(b"## HH:MM - ", v.replace(run_id.encode(), b"RUN"))
        for k, v in files.items()
    }


def test_a_worker_that_dies_costs_only_the_store_it_was_on(tmp_path):
    from pipeline.cli_options import Options
    from pipeline.fleet.engines.local import LocalEngine
    from pipeline.fleet.task import TaskSpec

    stores = [copy_store(FIXTURES / "bank", tmp_path / name) for name in ("b1", "crash-me", "b2", "b3", "crash-too", "b4")]
    records: list[dict] = []
    spec = TaskSpec(command="plan", options=Options(model="none"))
    LocalEngine(workers=2).run([str(p) for p in stores], spec, None, records.append, task=crash_task)
    status = {Path(r["path"]).name: r["status"] for r in records}
    assert status == {"b1": "ok", "b2": "ok", "b3": "ok", "b4": "ok", "crash-me": "crashed", "crash-too": "crashed"}
    assert all("exit code 3" in r["errors"][0] for r in records if r["status"] == "crashed")


def test_one_budget_for_the_fleet_and_a_store_it_cut_short_is_untouched(tmp_path):
    stores = [copy_store(FIXTURES / "bank", tmp_path / f"bank{i}") for i in range(4)]
    before = {p: snapshot(p) for p in stores}
    # the stub plans a bank store in 3 calls: 5 for the fleet is one store and a part of another
    res = run_cli("fleet", "run", *map(str, stores), "--now", NOW, "--max-calls", "5", "--workers", "2")
    assert res.returncode == 1, res.stderr
    records = lines(res.stdout)
    done = [r for r in records.values() if r["status"] == "ok"]
    cut = [r for r in records.values() if r["status"] == "budget_exhausted"]
    assert len(done) + len(cut) == 4 and len(done) <= 1 and cut
    assert sum(r["llm"]["calls"] for r in done) <= 5 and "fleet budget: 5 calls" in res.stderr
    for r in cut:
        store = Path(r["path"])
        assert "max_calls=5" in r["errors"][0] and r["run_id"] is None
        assert snapshot(store) == before[store] and committed_runs(store) == []
        assert not (store / ".memconsolidate" / "state.json").exists()
    # plan: a store the budget cut short gets no plan file (reported, not half-done)
    plans = tmp_path / "plans"
    res = run_cli("fleet", "plan", *map(str, stores), "--now", NOW, "--max-calls", "0", "--plans-dir", str(plans))
    assert res.returncode == 1 and {r["status"] for r in lines(res.stdout).values()} == {"budget_exhausted"}
    assert list(plans.iterdir()) == []


def test_the_shared_ledger_counts_calls_cost_and_spreads_requests_per_minute():
    clock = iter([100.0, 100.0, 100.5, 110.0]).__next__
    ledger = Ledger(Limits(max_calls=4, rpm=60), start_state(Limits(), _Shared()), clock=clock)
    assert [ledger.reserve("s") for _ in range(4)] == [0.0, 1.0, 1.5, 0.0]  # one a second, never a burst
    with pytest.raises(BudgetExceeded, match="max_calls=4"):
        ledger.reserve("s")
    costly = Ledger(Limits(max_cost=0.01, spent_cost=0.004), start_state(Limits(max_cost=0.01, spent_cost=0.004), _Shared()))
    costly.reserve("s")
    costly.spent(0.006)
    with pytest.raises(BudgetExceeded, match="cost budget"):
        costly.reserve("s")
    assert costly.snapshot() == {"calls": 1, "cost_usd": 0.01, "refused": 1}


def _state_file(path: Path, *items: dict | str) -> None:
    path.write_text("".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items))


def test_fleet_run_if_due_resumes_what_an_earlier_attempt_finished_and_trusts_no_other_path(tmp_path):
    import datetime as dt

    stores = [copy_store(FIXTURES / "bank", tmp_path / "fleet" / f"bank{i}") for i in range(4)]
    state = tmp_path / "fleet.jsonl"
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    finished = {"path": str(stores[0]), "layout": "bank", "status": "ok", "counts": {}, "errors": [], "run_id": "r0", "llm": {"calls": 2}}
    mangled = {"path": str(stores[3]), "status": "failed", "counts": "many", "errors": 5, "layout": ["x"], "llm": {"calls": "lots"}}
    _state_file(state, {"schema": "memconsolidate.fleet-state/1", "fleet_run": "F1", "started": started},
                {"fleet_run": "F1", "store": finished},
                {"fleet_run": "F1", "store": {**finished, "path": str(tmp_path / "elsewhere")}},  # not a target
                {"fleet_run": "OTHER", "store": {**finished, "path": str(stores[1])}},  # another fleet run's
                {"fleet_run": "F1", "store": {**finished, "path": str(stores[2]), "status": "made-up"}},
                {"fleet_run": "F1", "store": mangled},
                '{"fleet_run": "F1", "store": {"pa')  # torn by the kill
    res = run_cli("fleet", "run", *map(str, stores), "--if-due", "--state", str(state), "--now", NOW, "--model", "none")
    assert res.returncode == 1, res.stderr  # stores[3] failed in the earlier attempt
    records = lines(res.stdout)
    assert set(records) == {str(p) for p in stores}  # the foreign line named no target: not reported
    assert records[str(stores[0])]["resumed"] is True and committed_runs(stores[0]) == []  # skipped, never opened
    assert records[str(stores[3])] == {"path": str(stores[3]), "status": "failed", "layout": None, "run_id": None,
                                       "counts": {}, "errors": [], "llm": {"calls": 0, "cache_hits": 0, "cost_usd": 0.0}, "resumed": True}
    assert [records[str(p)]["status"] for p in stores[1:3]] == ["ok", "ok"] and all(committed_runs(p) for p in stores[1:3])
    assert json.loads(state.read_text().splitlines()[-1]) == {"complete": True, "fleet_run": "F1"}
    # complete: the next --if-due starts a new fleet run, where each store's own schedule decides
    res = run_cli("fleet", "run", *map(str, stores), "--if-due", "--state", str(state), "--now", NOW, "--model", "none")
    assert [lines(res.stdout)[str(p)]["status"] for p in stores] == ["ok", "not_due", "not_due", "ok"], res.stderr
    assert (stores[0] / ".memconsolidate" / "state.json").exists()


def test_a_stale_fleet_state_starts_a_new_fleet_run_and_a_symlinked_one_is_refused(tmp_path):
    import datetime as dt

    from pipeline.errors import UsageError
    from pipeline.fleet.resume import FleetState

    state = tmp_path / "s.jsonl"
    old = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=2)).isoformat()
    record = {"path": "/x", "status": "ok"}
    _state_file(state, {"schema": "memconsolidate.fleet-state/1", "fleet_run": "F1", "started": old}, {"fleet_run": "F1", "store": record})
    fresh = FleetState(state, ["/x"], dt.timedelta(hours=23.5))
    fresh.close(complete=False)
    assert fresh.finished == {} and fresh.fleet_run != "F1" and "F1" not in state.read_text()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(elsewhere)
    with pytest.raises(UsageError, match="symlink"):
        FleetState(link, ["/x"], dt.timedelta(hours=23.5))
    assert elsewhere.read_text() == "keep\n"


def test_a_killed_fleet_run_started_again_skips_the_stores_it_finished(tmp_path):
    stores = [copy_store(FIXTURES / "bank", tmp_path / "fleet" / f"bank{i}") for i in range(4)]
    args = ["fleet", "run", "--discover", str(tmp_path / "fleet"), "--if-due", "--now", NOW, "--model", "none", "--workers", "1"]
    # Slow journal steps: the kill lands mid-fleet. The killed forkserver cannot remove its folder of
    # sockets (pymp-*): it is made in the test's own temporary folder, not left in the machine's.
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "MEMCONSOLIDATE_FAULT_DELAY_MS": "200", "TMPDIR": str(tmp_path / "tmp")}
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        first = json.loads(proc.stdout.readline())  # the first store is finished and recorded
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the fleet, its forkserver and its workers
        proc.wait()
    assert first["status"] == "ok"
    state = tmp_path / "fleet" / ".memconsolidate-fleet.jsonl"  # the default place with --discover
    assert '"complete"' not in state.read_text()
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    records = lines(res.stdout)
    assert records[first["path"]]["resumed"] is True and len(records) == 4
    assert all(r["status"] in ("ok", "not_due") for r in records.values())
    assert [len(committed_runs(p)) for p in stores] == [1, 1, 1, 1]  # each store ran exactly once


@pytest.mark.parametrize("args, message", [
    ((), "no stores"),
    (("{a}", "{a}/inner"), "stores overlap"),
    (("{a}", "--engine", "dask"), "unknown engine"),
    (("{a}", "--address", "auto"), "--address is for --engine ray"),
    (("{a}", "--state", "s.jsonl"), "--state needs --if-due"),
    (("--discover", "{a}/nothing-here"), "--discover needs a directory"),
    (("--stores", "{a}/no-such-list"), "cannot read --stores"),
])
def test_bad_fleet_usage_is_one_line_and_exit_2(tmp_path, args, message):
    a = copy_store(FIXTURES / "bank", tmp_path / "a")
    (a / "inner").mkdir()
    res = run_cli("fleet", "run", *(x.format(a=a) for x in args), "--model", "none")
    assert res.returncode == 2 and res.stdout == ""
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_engine_ray_without_the_extra_says_how_to_install_it(tmp_path, monkeypatch):
    pytest.importorskip("pipeline.fleet.engines.ray")
    import pipeline.fleet.engines.ray as ray_engine

    monkeypatch.setattr(ray_engine, "ray", None)  # as the module finds it without `pip install ...[fleet]`
    res = run_cli("fleet", "plan", str(copy_store(FIXTURES / "bank", tmp_path / "b")), "--engine", "ray", "--model", "none")
    assert res.returncode == 2 and res.stdout == "" and "pip install 'memconsolidate[fleet]'" in res.stderr, res.stderr


def test_the_llm_client_reports_every_request_to_the_installed_meter(tmp_path):
    import datetime as dt

    from pipeline.config import Settings
    from pipeline.llm.meter import installed
    from pipeline.workflow import plan_store

    store = copy_store(FIXTURES / "crux", tmp_path / "crux")
    settings = Settings(now=dt.date(2026, 11, 29))
    with installed(free := CountingMeter(allow=10**6)):
        _, _, plan = plan_store(str(store), settings, lambda _: None)
    assert free.reserved == plan.stats.llm_calls > 1 and plan.errors == []
    with installed(tight := CountingMeter(allow=1)):
        _, _, cut = plan_store(str(store), settings, lambda _: None)
    assert cut.stats.llm_calls == 1 and tight.refusals >= 1 and "the fleet says no" in cut.errors[0].message
