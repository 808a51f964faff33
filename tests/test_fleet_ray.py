"""The fleet on Ray in local mode (`ray.init(num_cpus=2)`, started once for the module: Ray's
start-up is slow). Skipped when Ray is not installed; CI installs the `fleet` extra, so they run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

import fleet_helpers  # noqa: E402
from fleet_helpers import LAYOUTS, build_fleet, crash_task, elsewhere_task, lines, pid_gone, stalling_task  # noqa: E402
from helpers import FIXTURES, NOW, copy_store, run_cli, snapshot  # noqa: E402
from openai_server import fake_openai, status_reply  # noqa: E402,F401 - fake_openai is a fixture

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    # Ray's workers cannot import the tests' modules: ship the test's task by value
    ray.cloudpickle.register_pickle_by_value(fleet_helpers)
    yield
    ray.shutdown()


def test_the_ray_engine_plans_a_fleet_of_every_layout_as_each_store_alone(tmp_path):
    kinds = build_fleet(tmp_path / "fleet")
    plans = tmp_path / "plans"
    res = run_cli("fleet", "plan", "--discover", str(tmp_path / "fleet"), "--engine", "ray", "--now", NOW, "--plans-dir", str(plans))
    assert res.returncode == 1, res.stderr  # the broken crux config fails; nothing else stops
    records = lines(res.stdout)
    assert len(records) == 4 * 13 + 4
    for layout in LAYOUTS:
        assert {records[str(p)]["status"] for p in kinds[layout]} == {"ok"}
        store = kinds[layout][7]
        alone = run_cli("plan", str(store), "--now", NOW, "--json")
        assert Path(records[str(store)]["plan_file"]).read_text(encoding="utf-8") == alone.stdout
    assert {Path(p).name: r["status"] for p, r in records.items() if "/broken/" in p} == {
        "garbage": "failed", "fifo": "ok", "statefile": "ok", "hostile": "ok"}
    assert "on engine ray" in res.stderr


def test_on_ray_a_dying_worker_costs_its_store_and_the_budget_actor_is_shared(tmp_path):
    from pipeline.cli_options import Options
    from pipeline.fleet.budget import Limits
    from pipeline.fleet.engines.ray import RayEngine
    from pipeline.fleet.task import TaskSpec

    stores = [copy_store(FIXTURES / "bank", tmp_path / name) for name in ("b1", "crash-me", "b2", "b3")]
    before = {p: snapshot(p) for p in stores}
    records: list[dict] = []
    spec = TaskSpec(command="run", options=Options())  # the stub: 3 calls per bank store
    budget = RayEngine(workers=2).run([str(p) for p in stores], spec, Limits(max_calls=5), records.append, task=crash_task)
    status = {Path(r["path"]).name: r["status"] for r in records}
    assert status.pop("crash-me") == "crashed" and len(status) == 3
    assert set(status.values()) <= {"ok", "budget_exhausted"} and "budget_exhausted" in status.values()
    assert budget["calls"] == 5 and sum(r.get("llm", {}).get("calls", 0) for r in records if r["status"] == "ok") <= 5
    for r in records:
        if r["status"] == "budget_exhausted":
            assert snapshot(Path(r["path"])) == before[Path(r["path"])]


def test_on_ray_fleet_apply_applies_the_reviewed_plans_and_refuses_a_store_changed_since(tmp_path):
    from pipeline.fleet.plans import plan_file_name

    same, changed = (copy_store(FIXTURES / "bank", tmp_path / name) for name in ("same", "changed"))
    plans = tmp_path / "plans"
    assert run_cli("fleet", "plan", str(same), str(changed), "--engine", "ray", "--now", NOW, "--plans-dir", str(plans)).returncode == 0
    reviewed = json.loads((plans / plan_file_name(str(changed))).read_text())
    first = reviewed["actions"][0]["targets"][0]  # `<bank>/<id>`: its memory's text edited since
    lines_ = (changed / first.split("/")[0] / "memories.jsonl").read_text().splitlines()
    row = next(i for i, line in enumerate(lines_) if json.loads(line)["id"] == first.split("/")[1])
    lines_[row] = json.dumps(json.loads(lines_[row]) | {"text": "Edited after the review."})
    (changed / first.split("/")[0] / "memories.jsonl").write_text("\n".join(lines_) + "\n")
    before = snapshot(changed)
    res = run_cli("fleet", "apply", str(same), str(changed), "--engine", "ray", "--now", NOW, "--plans-dir", str(plans), "--yes")
    assert res.returncode == 1, res.stderr
    records = lines(res.stdout)
    automatic = sum(1 for a in json.loads((plans / plan_file_name(str(same))).read_text())["actions"] if not a["needs_user"])
    assert records[str(same)]["status"] == "ok" and records[str(same)]["counts"]["applied"] == automatic > 0
    assert records[str(changed)]["status"] == "failed" and "the store changed since the review" in records[str(changed)]["errors"][0]
    assert snapshot(changed) == before


def test_on_ray_a_store_past_its_timeout_is_cancelled_with_force_and_what_it_spent_stays_spent(tmp_path):
    from pipeline.cli_options import Options
    from pipeline.fleet.budget import Limits
    from pipeline.fleet.engines.ray import RayEngine
    from pipeline.fleet.task import TaskSpec
    from pipeline.lock import run_in_progress

    # hang: blocks before its first request; stall-me: blocks mid-apply, its plan's 3 requests made
    stores = [copy_store(FIXTURES / "bank", tmp_path / name) for name in ("hang", "b1", "stall-me", "b2")]
    records: list[dict] = []
    spec = TaskSpec(command="run", options=Options(now=NOW))  # the stub: 3 requests per bank store
    budget = RayEngine(workers=2, store_timeout=2).run([str(p) for p in stores], spec, Limits(max_calls=100), records.append,
                                                       task=stalling_task)
    status = {Path(r["path"]).name: (r["status"], r["errors"]) for r in records}
    timed_out = ("failed", ["timed out after 2 s (--store-timeout): its worker was stopped"])
    assert status == {"hang": timed_out, "stall-me": timed_out, "b1": ("ok", []), "b2": ("ok", [])}
    assert budget is not None and budget["calls"] == 3 * 3
    for name in ("hang", "stall-me"):  # force: each worker process killed (Ray starts new ones)
        assert pid_gone(int((tmp_path / f"{name}.pid").read_text()))
    stalled = tmp_path / "stall-me"
    assert run_in_progress(stalled) is None
    again = run_cli("run", str(stalled), "--now", NOW)
    assert again.returncode == 0 and "rolled back run" in again.stderr, again.stderr


def test_on_ray_a_relative_cache_dir_names_the_folder_the_fleet_was_started_in(tmp_path, monkeypatch, fake_openai):
    import pipeline.fleet.engines.ray as ray_engine

    monkeypatch.setattr(ray_engine, "run_task", elsewhere_task)  # a node of a cluster runs in a folder of its own
    fake_openai.responder = lambda body: status_reply(400)
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    here = tmp_path / "here"
    here.mkdir()
    (here / "fleet.toml").write_text("[llm]\nmax_attempts = 1\nmax_reasks = 0\n")
    res = run_cli("fleet", "plan", str(store), "--engine", "ray", "--now", NOW, "--model", fake_openai.model(),
                  "--api-base", fake_openai.api_base, "--cache-dir", "cache", "--config", "fleet.toml", cwd=here)
    assert lines(res.stdout)[str(store)]["llm"]["calls"] > 0, res.stderr
    assert (here / "cache").is_dir()


def test_on_ray_a_store_that_finishes_as_its_task_is_cancelled_is_reported_as_it_finished(tmp_path, monkeypatch):
    from pipeline.cli_options import Options
    from pipeline.fleet.engines.ray import RayEngine
    from pipeline.fleet.task import TaskSpec
    from pipeline.journal import committed_runs

    # Its task returned between the fleet's last look and the cancel, which then finds it done.
    cancel, cancelled = ray.cancel, []

    def cancel_as_it_returns(ref, **options):
        cancelled.append(fleet_helpers.returned(store))
        cancel(ref, **options)

    monkeypatch.setattr(ray, "cancel", cancel_as_it_returns)
    store = copy_store(FIXTURES / "bank", tmp_path / "late")
    records: list[dict] = []
    spec = TaskSpec(command="apply", options=Options(model="none", now=NOW))
    RayEngine(store_timeout=fleet_helpers.LATE_S / 3).run([str(store)], spec, None, records.append, task=fleet_helpers.late_task)
    (record,) = records
    assert cancelled == [True]  # cancelled at its timeout, its record already returned
    assert record["status"] == "ok" and "timed_out" not in record, record
    assert [run.run_id for run in committed_runs(store)] == [record["run_id"]]
