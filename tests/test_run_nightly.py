import datetime as dt
import json

from pipeline.config import Settings
from pipeline.workflow import is_due, read_state, run_store

from helpers import FIXTURES, NOW, copy_store, run_cli

T0 = dt.datetime(2026, 11, 29, 2, 0, tzinfo=dt.timezone.utc)


def settings(**kw):
    return Settings.model_validate({"now": NOW, "llm": {"model": "none"}, **kw})


def test_due_logic_with_slack():
    s = settings()
    assert is_due({}, s, T0)[0]
    last = {"last_success": T0.isoformat()}
    assert not is_due(last, s, T0 + dt.timedelta(hours=23))[0]
    assert is_due(last, s, T0 + dt.timedelta(hours=23, minutes=45))[0]  # an hourly tick a little early
    assert is_due(last, s, T0 + dt.timedelta(days=3))[0]  # missed nights: catch up on the first call


def test_a_slack_longer_than_the_interval_makes_every_run_due_even_after_a_run_in_year_1():
    # state.json is the store's: one recording a run at the calendar's start overflowed the
    # subtraction of the slack (OverflowError, exit 1) instead of simply being long ago
    s = settings(schedule={"interval_hours": 0.5, "slack_minutes": 60})
    assert is_due({"last_success": "0001-01-01T00:00:00+00:00"}, s, T0)[0]
    assert is_due({"last_success": T0.isoformat()}, s, T0)[0]
    assert s.schedule.wait() == dt.timedelta(0)


def test_run_if_due_records_only_complete_runs_and_skips_until_due(tmp_path):
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    first = run_store(str(store), settings(), lambda m: None, if_due=True, wall=T0)
    assert first.ran and first.recorded and first.result and first.result.record
    state = read_state(store)
    assert state["last_success"] == T0.isoformat(timespec="seconds")
    assert state["report"] and (store / state["report"]).exists()
    again = run_store(str(store), settings(), lambda m: None, if_due=True, wall=T0 + dt.timedelta(hours=2))
    assert not again.ran and "not due" in again.reason
    later = run_store(str(store), settings(), lambda m: None, if_due=True, wall=T0 + dt.timedelta(days=2))
    assert later.ran and later.recorded


def test_run_with_stage_errors_is_not_recorded(tmp_path):
    import os

    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    cfg = tmp_path / "c.toml"
    cfg.write_text("[llm]\nmax_attempts = 1\ntimeout_s = 5\n")
    # a real model path whose server is not there: every stage fails soft, the deterministic part applies
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-unused"}
    res = run_cli("run", str(store), "--if-due", "--now", NOW, "--model", "openai/nothing", "--api-base",
                  "http://127.0.0.1:9/v1", "--config", str(cfg), "--cache-dir", str(tmp_path / "cache"), "--json", env=env)
    out = json.loads(res.stdout)
    assert res.returncode == 1 and not out["recorded"]
    assert {e["stage"] for e in out["plan"]["errors"]} >= {"reorder", "conflicts", "rules"}
    assert out["apply"]["applied"], "the deterministic actions still apply"
    assert read_state(store) == {}
    assert "did not complete cleanly" in res.stderr


def test_status_reports_types_pending_and_last_run(tmp_path):
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    res = run_cli("status", str(store), "--json", "--now", NOW, "--model", "none")
    info = json.loads(res.stdout)
    assert info["memories"] == 23 and info["pending_actions"] == {"merge_duplicate": 3} and info["model"] == "none"
    assert info["last_run"] is None and info["unfinished_journal"] == []
    assert run_cli("run", str(store), "--now", NOW, "--model", "none").returncode == 0
    info = json.loads(run_cli("status", str(store), "--json", "--now", NOW).stdout)
    assert info["last_run"]["run_id"] and len(info["applied_runs"]) == 1
