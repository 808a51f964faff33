"""What the tool reads back from files of its own (a store's `.memconsolidate/state.json`, a fleet's
state file) and the fleet's inputs (`--stores`, `--plans-dir`) are data, never instructions: none of
them can name a path outside the store, hang a run, exhaust its memory or end it with a traceback.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.workflow import read_state

from helpers import FIXTURES, NOW, REPO, copy_store, run_cli, start_cli

GB = 1 << 30


def _recent() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _plant(state: Path, kind: str, outside: Path) -> None:
    if kind == "fifo":
        os.mkfifo(state)  # a plain open blocks until a writer comes, with the store's lock held
    elif kind == "dev-zero":
        state.symlink_to("/dev/zero")  # a plain read never ends
    elif kind == "outside":
        outside.write_text(json.dumps({"last_success": _recent()}))  # would say "not due"
        state.symlink_to(outside)
    elif kind == "deep":
        state.write_text("[" * 60000)  # within the size cap, deeper than the stack
    elif kind == "list":
        state.write_text("[1, 2]")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "outside", "deep", "list"])
def test_a_state_json_that_cannot_be_taken_is_no_run_recorded_and_the_run_goes_on(tmp_path, kind):
    store = copy_store(FIXTURES / "claude", tmp_path / "s")
    (store / ".memconsolidate").mkdir()
    state, outside = store / ".memconsolidate" / "state.json", tmp_path / "outside.json"
    _plant(state, kind, outside)
    kept = outside.read_bytes() if kind == "outside" else None
    # In a process of its own, its memory capped: a hang or an endless read fails the test, never hangs it.
    res = start_cli("run", str(store), "--if-due", "--model", "none", "--now", NOW, address_space=2 * GB).wait(60)
    assert res.returncode == 0, res.stderr
    assert "state.json taken as no run recorded" in res.stderr and "internal error" not in res.stderr, res.stderr
    # It ran, and recorded itself in a file of its own where the planted one was.
    assert not state.is_symlink() and state.is_file() and "last_success" in json.loads(state.read_text())
    if kept is not None:
        assert outside.read_bytes() == kept


def test_a_state_json_behind_a_symlinked_state_folder_is_not_read(tmp_path):
    store = copy_store(FIXTURES / "claude", tmp_path / "s")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "state.json").write_text(json.dumps({"last_success": _recent()}))
    (store / ".memconsolidate").symlink_to(elsewhere)
    notes: list[str] = []
    assert read_state(store, notes.append) == {}
    assert notes == [".memconsolidate/state.json taken as no run recorded: its folder .memconsolidate/ is a symlink (never followed)"]
    # A state.json of its own is read as before; one that is not there is no run, without a note.
    (store / ".memconsolidate").unlink()
    (store / ".memconsolidate").mkdir()
    assert read_state(store, notes.append) == {} and len(notes) == 1
    (store / ".memconsolidate" / "state.json").write_text('{"last_success": "2026-11-29T02:00:00+00:00"}')
    assert read_state(store, notes.append) == {"last_success": "2026-11-29T02:00:00+00:00"} and len(notes) == 1


def test_status_never_walks_a_symlinked_state_folder_nor_trusts_its_state(tmp_path):
    store = copy_store(FIXTURES / "claude", tmp_path / "s")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep" / "er").mkdir(parents=True)
    with (elsewhere / "deep" / "er" / "big").open("wb") as fh:
        fh.truncate(5 * GB)  # sparse: what a walk would count as the state folder's size
    (store / ".memconsolidate").symlink_to(elsewhere)
    res = run_cli("status", str(store), "--model", "none", "--now", NOW)
    assert res.returncode == 0, res.stderr
    assert f"state folder: {store}/.memconsolidate is a symlink, not followed" in res.stdout, res.stdout
    assert "GB" not in res.stdout
    info = json.loads(run_cli("status", str(store), "--model", "none", "--now", NOW, "--json").stdout)
    assert info["state_bytes"] is None and info["runs"] == []
    assert info["foreign_journal"] == [{"run": ".memconsolidate", "why": "the state folder is a symlink"}]
    # A state.json of the store's own that is a JSON object of another shape: shown, never a crash.
    (store / ".memconsolidate").unlink()
    (store / ".memconsolidate").mkdir()
    (store / ".memconsolidate" / "state.json").write_text('{"run_id": ["x"]}')
    res = run_cli("status", str(store), "--model", "none", "--now", NOW)
    assert res.returncode == 0 and "last nightly run: unreadable" in res.stdout, res.stderr
    (store / ".memconsolidate" / "state.json").write_text("[" * 60000)
    res = run_cli("status", str(store), "--model", "none", "--now", NOW)
    assert res.returncode == 0 and "last nightly run: never" in res.stdout, res.stderr
    assert "note: .memconsolidate/state.json taken as no run recorded: not JSON" in res.stdout


# --- the fleet --------------------------------------------------------------------------------


def _header(fleet_run: str = "F1") -> str:
    return json.dumps({"schema": "memconsolidate.fleet-state/1", "fleet_run": fleet_run, "started": _recent()})


def test_a_fleet_state_line_nested_too_deep_is_skipped_and_the_rest_resumed(tmp_path):
    store = copy_store(FIXTURES / "zylos", tmp_path / "fl" / "z")
    record = {"path": str(store), "layout": "zylos", "status": "ok", "counts": {}, "errors": [], "run_id": "r0"}
    state = tmp_path / "deep.jsonl"
    state.write_text(_header() + "\n" + "[" * 100000 + "\n" + json.dumps({"fleet_run": "F1", "store": record}) + "\n")
    res = run_cli("fleet", "run", "--discover", str(tmp_path / "fl"), "--if-due", "--state", str(state), "--now", NOW, "--model", "none")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["resumed"] is True and not (store / ".memconsolidate").exists()


def test_a_huge_fleet_state_is_not_read_and_the_fleet_starts_afresh(tmp_path):
    copy_store(FIXTURES / "zylos", tmp_path / "fl" / "z")
    state = tmp_path / "big.jsonl"
    with state.open("wb") as fh:
        fh.truncate(3 * GB)  # sparse: cheap to make, not to read whole
    # A process of its own (a fleet's workers cannot be a test child's), its memory capped under the file's size.
    res = subprocess.run([sys.executable, "-m", "pipeline", "fleet", "run", "--discover", str(tmp_path / "fl"), "--if-due",
                          "--state", str(state), "--now", NOW, "--model", "none"], cwd=REPO, capture_output=True,
                         encoding="utf-8", timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 * GB, 2 * GB)))
    assert res.returncode == 0, res.stderr
    assert f"the fleet state {state} is not read (file too large" in res.stderr and "a new fleet run starts" in res.stderr
    assert json.loads(res.stdout)["status"] == "ok"
    assert state.stat().st_size < 1000 and '"complete": true' in state.read_text()


def test_a_bad_line_of_a_stores_file_is_one_failed_store_and_the_others_run(tmp_path):
    good = copy_store(FIXTURES / "zylos", tmp_path / "good")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "loop1").symlink_to("loop2")
    stores = tmp_path / "stores.txt"
    stores.write_bytes(b"good\nloop1\na\x00b\n")
    res = run_cli("fleet", "plan", "--stores", str(stores), "--now", NOW, "--model", "none")
    assert res.returncode == 1 and "internal error" not in res.stderr, res.stderr
    records = {r["path"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert records[str(good)]["status"] == "ok"
    assert records[str(tmp_path / "loop1")]["status"] == "failed"
    assert records[str(tmp_path / "a\x00b")]["status"] == "failed" and len(records) == 3
    assert "a\\x00b" in res.stderr and "\x00" not in res.stderr  # the summary names it, escaped


@pytest.mark.parametrize("inside", [".claude/agent-memory/backend-architect", ".memconsolidate/runs", "."])
def test_plans_dir_inside_a_store_it_plans_is_refused(tmp_path, inside):
    store = copy_store(FIXTURES / "claude", tmp_path / "s")
    before = sorted(p.relative_to(store).as_posix() for p in store.rglob("*"))
    res = run_cli("fleet", "plan", str(store), "--plans-dir", str(store / inside), "--now", NOW, "--model", "none")
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert f"--plans-dir {store / inside} would lie inside the store {store}: pass --plans-dir outside the stores" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert sorted(p.relative_to(store).as_posix() for p in store.rglob("*")) == before
    # Through a symlink into the store, too; outside the stores, as before.
    (tmp_path / "link").symlink_to(store / ".claude")
    res = run_cli("fleet", "plan", str(store), "--plans-dir", str(tmp_path / "link" / "plans"), "--now", NOW, "--model", "none")
    assert res.returncode == 2 and "would lie inside the store" in res.stderr, res.stderr
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    res = run_cli("fleet", "plan", str(store), "--plans-dir", str(tmp_path / "loop1" / "plans"), "--now", NOW, "--model", "none")
    assert res.returncode == 2 and "--plans-dir" in res.stderr and "internal error" not in res.stderr, res.stderr
    res = run_cli("fleet", "plan", str(store), "--plans-dir", str(tmp_path / "plans"), "--now", NOW, "--model", "none")
    assert res.returncode == 0 and len(list((tmp_path / "plans").iterdir())) == 1, res.stderr
