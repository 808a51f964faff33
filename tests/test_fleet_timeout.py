"""`fleet --store-timeout` on the local engine: a store that never finishes (a read from a stalled
mount never returns) is reported failed and its worker killed and replaced; the others go on. A store
killed mid-apply is recovered by its journal, as after a crash; a resumed `fleet run --if-due` tries
it again; what it spent stays spent. Also: the path options each store's task receives are absolute.

The stores that never finish are made by `fleet_helpers.stalling_task` (by name: `hang*`, `stall*`),
put in the engine's place of the real task: the store readers skip a FIFO rather than block on it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import pipeline.fleet.engines.local as local_engine
from fleet_helpers import LATE_S, elsewhere_task, late_task, lines, pid_gone, returned, stalling_task
from helpers import FIXTURES, NOW, copy_store, run_cli, snapshot
from openai_server import fake_openai, status_reply  # noqa: F401 - fake_openai is a fixture

from pipeline.cli_options import Options
from pipeline.fleet.budget import Limits
from pipeline.fleet.engines.local import LocalEngine
from pipeline.fleet.task import TaskSpec
from pipeline.journal import committed_runs
from pipeline.lock import run_in_progress

# Seconds: a bank store takes a tenth of that here (the clock starts when its worker has imported
# the pipeline and starts on it), so a loaded machine still finishes every other store in time.
TIMEOUT = "2"
TIMED_OUT = "timed out after 2 s (--store-timeout): its worker was stopped"


def _pid(store: Path) -> int:
    return int(store.with_name(store.name + ".pid").read_text())


def test_a_store_that_never_finishes_is_timed_out_and_its_worker_replaced(tmp_path):
    stores = [copy_store(FIXTURES / "bank", tmp_path / name) for name in ("hang", "b1", "b2")]
    records: list[dict] = []
    started = time.monotonic()
    spec = TaskSpec(command="plan", options=Options(model="none", now=NOW))
    LocalEngine(workers=1, store_timeout=float(TIMEOUT)).run([str(p) for p in stores], spec, None, records.append, task=stalling_task)
    assert time.monotonic() - started < 60
    hang, *others = records  # one worker: the store it hung on first, then the others on a new one
    assert (hang["path"], hang["status"], hang["errors"], hang["timed_out"]) == (str(stores[0]), "failed", [TIMED_OUT], True)
    assert [(r["path"], r["status"]) for r in others] == [(str(stores[1]), "ok"), (str(stores[2]), "ok")]
    assert pid_gone(_pid(stores[0]), within=0)  # killed and reaped when the fleet moved on: no hung worker left


def test_a_store_that_finishes_as_its_worker_is_killed_is_reported_as_it_finished(tmp_path, monkeypatch):
    # Its record reached the fleet between the fleet's last look and the kill: the store was done (an
    # apply committed), and a timeout would hide that, its run_id too.
    kill, killed = local_engine._kill, []

    def kill_as_it_returns(process, budget):
        killed.append(returned(store))
        kill(process, budget)

    monkeypatch.setattr(local_engine, "_kill", kill_as_it_returns)
    store = copy_store(FIXTURES / "bank", tmp_path / "late")
    records: list[dict] = []
    spec = TaskSpec(command="apply", options=Options(model="none", now=NOW), select=None)
    LocalEngine(workers=1, store_timeout=LATE_S / 3).run([str(store)], spec, None, records.append, task=late_task)
    (record,) = records
    assert killed == [True]  # stopped at its timeout, its record already sent
    assert record["status"] == "ok" and "timed_out" not in record, record
    assert record["counts"]["applied"] == 3
    assert [run.run_id for run in committed_runs(store)] == [record["run_id"]]


# A fleet whose worker outlives its kill: in a process of its own, as the fleet's interpreter exits.
_HELD_FLEET = """
import sys
import pipeline.fleet.engines.local as local
from fleet_helpers import unkillable_task
from pipeline.cli_options import Options
from pipeline.fleet.task import TaskSpec

kill = local._kill

def kill_but_not_this_worker(process, budget):  # the kernel holds it: the SIGKILL does not end it yet
    process.kill = lambda: None
    kill(process, budget)

local._kill = kill_but_not_this_worker
records = []
spec = TaskSpec(command="plan", options=Options(model="none", now=sys.argv[3]))
local.LocalEngine(workers=1, store_timeout=1).run(sys.argv[1:3], spec, None, records.append, task=unkillable_task)
print(" ".join(str(r.get("timed_out", r["status"])) for r in records))
"""


def test_a_worker_the_kernel_will_not_let_die_is_left_to_it_and_the_fleet_still_ends(tmp_path):
    # multiprocessing joins every worker it started as the interpreter exits: the fleet, its report
    # written, waited for that one as long as the kernel held it (the cron job never ended).
    import os
    import signal
    import subprocess
    import sys

    held = copy_store(FIXTURES / "bank", tmp_path / "held")
    bank = copy_store(FIXTURES / "bank", tmp_path / "bank")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), str(Path(__file__).parent)])}
    out, err = tmp_path / "out", tmp_path / "err"  # files: the held worker keeps whatever pipe it inherited open
    try:
        with open(out, "w") as stdout, open(err, "w") as stderr:
            code = subprocess.run([sys.executable, "-c", _HELD_FLEET, str(held), str(bank), NOW], stdout=stdout, stderr=stderr,
                                  env=env, cwd=tmp_path, timeout=60).returncode
        assert (code, out.read_text()) == (0, "True ok\n"), err.read_text()
    finally:
        pid = tmp_path / "held.pid"
        if pid.exists():
            os.kill(int(pid.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("command", [["plan"], ["apply", "--yes"], ["run"]])
def test_each_fleet_command_reports_a_timed_out_store_in_its_line_and_the_summary(tmp_path, monkeypatch, command):
    monkeypatch.setattr(local_engine, "run_task", stalling_task)
    hang = copy_store(FIXTURES / "bank", tmp_path / "hang")
    bank = copy_store(FIXTURES / "bank", tmp_path / "bank")
    res = run_cli("fleet", *command, str(hang), str(bank), "--now", NOW, "--model", "none", "--workers", "2", "--store-timeout", TIMEOUT)
    assert res.returncode == 1, res.stderr
    records = lines(res.stdout)
    assert records[str(bank)]["status"] == "ok"
    assert (records[str(hang)]["status"], records[str(hang)]["errors"]) == ("failed", [TIMED_OUT])
    assert f"failed: {hang}: {TIMED_OUT}" in res.stderr.splitlines()


def test_a_store_killed_mid_apply_by_the_timeout_is_recovered_and_loses_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(local_engine, "run_task", stalling_task)
    stall = copy_store(FIXTURES / "bank", tmp_path / "stall-me")
    bank = copy_store(FIXTURES / "bank", tmp_path / "bank")
    alone = copy_store(FIXTURES / "bank", tmp_path / "alone")
    before = snapshot(stall)
    assert run_cli("apply", str(alone), "--now", NOW, "--model", "none", "--yes").returncode == 0
    after = snapshot(alone)
    res = run_cli("fleet", "apply", str(stall), str(bank), "--yes", "--now", NOW, "--model", "none", "--store-timeout", TIMEOUT)
    assert res.returncode == 1, res.stderr
    records = lines(res.stdout)
    assert records[str(stall)]["errors"] == [TIMED_OUT] and records[str(bank)]["status"] == "ok"
    assert snapshot(stall) != before  # killed mid-apply: a change made (its journal unfinished: `status` below)
    # The lock: its file names the killed worker, but the kernel dropped the lock with it.
    assert (stall / ".memconsolidate" / "lock").read_text().strip() == str(_pid(stall))
    assert run_in_progress(stall) is None
    status = run_cli("status", str(stall))
    assert status.returncode == 0 and "UNFINISHED JOURNAL" in status.stdout, status.stderr
    again = run_cli("apply", str(stall), "--now", NOW, "--model", "none", "--yes")
    assert again.returncode == 0 and "rolled back run" in again.stderr, again.stderr
    assert snapshot(stall) == after  # rolled back, then applied as alone
    (run,) = committed_runs(stall)
    assert run_cli("undo", str(stall), "--run", run.run_id).returncode == 0
    assert snapshot(stall) == before  # nothing lost


def test_a_resumed_fleet_run_tries_a_timed_out_store_again(tmp_path, monkeypatch):
    stores = [copy_store(FIXTURES / "bank", tmp_path / "fleet" / name) for name in ("hang", "bank")]
    state = tmp_path / "fleet.jsonl"
    args = ("fleet", "run", *map(str, stores), "--if-due", "--state", str(state), "--now", NOW, "--model", "none",
            "--store-timeout", TIMEOUT)
    with monkeypatch.context() as patched:
        patched.setattr(local_engine, "run_task", stalling_task)
        first = run_cli(*args)
    assert first.returncode == 1 and lines(first.stdout)[str(stores[0])]["timed_out"] is True, first.stderr
    # What a kill after the last store leaves: no closing line, so the next attempt resumes.
    state.write_text("".join(line + "\n" for line in state.read_text().splitlines() if '"complete"' not in line))
    again = run_cli(*args)  # the mount answers again
    assert again.returncode == 0, again.stderr
    records = lines(again.stdout)
    assert records[str(stores[1])]["resumed"] is True
    assert records[str(stores[0])]["status"] == "ok" and "resumed" not in records[str(stores[0])]
    assert json.loads(state.read_text().splitlines()[-1])["complete"] is True


def test_the_requests_of_a_timed_out_store_stay_spent(tmp_path):
    # The stub makes 3 requests for a bank store's plan: the store that stalls mid-apply made them too.
    stores = [copy_store(FIXTURES / "bank", tmp_path / name) for name in ("stall-me", "bank")]
    records: list[dict] = []
    spec = TaskSpec(command="run", options=Options(now=NOW))
    budget = LocalEngine(workers=1, store_timeout=float(TIMEOUT)).run([str(p) for p in stores], spec, Limits(max_calls=100), records.append,
                                                                      task=stalling_task)
    stalled, done = records
    assert stalled["errors"] == [TIMED_OUT] and "llm" not in stalled
    assert done["status"] == "ok" and done["llm"]["calls"] == 3
    assert budget is not None and budget["calls"] == 6


def test_a_store_timeout_of_0_is_none_and_one_past_a_week_is_refused(tmp_path):
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    for value, code in (("0", 0), ("604801", 2), ("inf", 2), ("-1", 2)):
        res = run_cli("fleet", "plan", str(store), "--model", "none", "--now", NOW, "--store-timeout", value)
        assert res.returncode == code, (value, res.stderr)


@pytest.mark.parametrize("given, env", [("cache", None), ("", None), ("", "envcache")])
def test_a_relative_cache_dir_names_the_folder_the_fleet_was_started_in(tmp_path, monkeypatch, fake_openai, given, env):
    # A worker may run in another folder (a Ray node of a cluster does): `--cache-dir cache` was the
    # `cache` folder there, a reply cache no later run from here would ever read. And "" (`--cache-dir
    # "$CACHE"`, CACHE unset) is no --cache-dir, as for a store alone, not the folder the fleet started in.
    # A relative MEMCONSOLIDATE_CACHE_DIR is the folder the fleet was started in too.
    import os

    monkeypatch.setattr(local_engine, "run_task", elsewhere_task)
    if env:
        monkeypatch.setenv("MEMCONSOLIDATE_CACHE_DIR", env)
    fake_openai.responder = lambda body: status_reply(400)
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    here = tmp_path / "here"
    here.mkdir()
    (here / "fleet.toml").write_text("[llm]\nmax_attempts = 1\nmax_reasks = 0\n")
    res = run_cli("fleet", "plan", str(store), "--now", NOW, "--model", fake_openai.model(), "--api-base", fake_openai.api_base,
                  "--cache-dir", given, "--config", "fleet.toml", cwd=here)
    assert lines(res.stdout)[str(store)]["llm"]["calls"] > 0, res.stderr
    made = given or env
    assert sorted(os.listdir(here)) == sorted(["fleet.toml", *([made] if made else [])])
    assert (here / made if made else Path(os.environ["MEMCONSOLIDATE_CACHE_DIR"])).is_dir()


def test_a_store_killed_as_it_reserves_a_request_leaves_the_fleet_budget_usable(tmp_path):
    # The budget's lock is shared memory: a worker killed while it held it took it along, and every
    # other store (and the fleet's last look at the budget) waited for it forever.
    stores = [copy_store(FIXTURES / "bank", tmp_path / name) for name in ("busy", "bank")]
    records: list[dict] = []
    spec = TaskSpec(command="run", options=Options(now=NOW))
    engine = LocalEngine(workers=1, store_timeout=1)
    fleet = threading.Thread(target=engine.run, args=([str(p) for p in stores], spec, Limits(max_calls=1 << 60), records.append, stalling_task),
                             daemon=True)
    fleet.start()
    fleet.join(60)
    assert not fleet.is_alive(), "the fleet waits for a lock a killed worker held"
    assert [(r["status"], r.get("timed_out")) for r in records] == [("failed", True), ("ok", None)]
    assert records[1]["llm"]["calls"] == 3


def test_a_fleet_state_never_counts_a_timed_out_store_as_finished(tmp_path):
    import datetime as dt

    from pipeline.fleet.resume import SCHEMA, FleetState

    state = tmp_path / "fleet.jsonl"
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    timed_out = {"path": "/stalled", "status": "failed", "errors": [TIMED_OUT], "timed_out": True}
    failed = {"path": "/broken", "status": "failed", "errors": ["crux config: not JSON"]}
    state.write_text("".join(json.dumps(item) + "\n" for item in (
        {"schema": SCHEMA, "fleet_run": "F1", "started": started},
        {"fleet_run": "F1", "store": timed_out}, {"fleet_run": "F1", "store": failed})))
    resumed = FleetState(state, ["/stalled", "/broken"], dt.timedelta(hours=23.5))
    resumed.close(complete=False)
    assert resumed.fleet_run == "F1" and list(resumed.finished) == ["/broken"]  # a failure of its own is not tried again


_GRAVE_FLEET = """
import sys
from pathlib import Path
from fleet_helpers import grave_task
from pipeline.cli_options import Options
from pipeline.fleet.budget import Limits
from pipeline.fleet.engines.local import LocalEngine
from pipeline.fleet.task import TaskSpec

if __name__ == "__main__":
    records = []
    spec = TaskSpec(command="plan", options=Options(now=sys.argv[-1]))  # the stub: 3 requests per bank store
    budget = LocalEngine(workers=2, store_timeout=600).run(sys.argv[1:-1], spec, Limits(max_calls=100), records.append,
                                                           task=grave_task)
    for r in sorted(records, key=lambda r: r["path"]):
        print(Path(r["path"]).name, r["status"], "|".join(r["errors"]))
    print("calls", budget["calls"])
"""


def test_a_worker_that_dies_holding_the_budget_lock_does_not_stall_the_others_or_the_fleet(tmp_path):
    # Before: every later store waited on the lost lock until its --store-timeout, and the fleet's
    # last look at the budget waited for ever (the cron job never ended).
    import os
    import subprocess
    import sys

    stores = [copy_store(FIXTURES / "bank", tmp_path / name) for name in ("grave", "b1", "b2", "b3")]
    script = tmp_path / "grave_fleet.py"  # a file: the workers import the script's module as __main__
    script.write_text(_GRAVE_FLEET)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), str(Path(__file__).parent)])}
    res = subprocess.run([sys.executable, str(script), *map(str, stores), NOW], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "b1 ok ", "b2 ok ", "b3 ok ",
        "grave crashed the worker process died while on this store (exit code 9)|it died holding the fleet budget's lock, released here",
        "calls 9",
    ]
