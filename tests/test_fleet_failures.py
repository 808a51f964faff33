"""The fleet when things around it go wrong: its output or state file cannot be written, it is
interrupted, killed and resumed within a budget, its inputs are odd (a `--stores` list from a pipe
or with a byte-order mark, a state file with absurd numbers), a store hides inside another."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleet_helpers import lines
from helpers import FIXTURES, NOW, REPO, copy_store, run_cli
from openai_server import fake_openai, status_reply  # noqa: F401 - fake_openai is a fixture


def _fleet_process(*args: str, env: dict | None = None, stdout=subprocess.PIPE) -> subprocess.Popen:
    """`memconsolidate fleet ...` in a process group of its own (a terminal's Ctrl-C reaches the
    whole group; a kill of the group ends the fleet, its forkserver and its workers)."""
    return subprocess.Popen([sys.executable, "-m", "pipeline", "fleet", *args], cwd=REPO, env={**os.environ, **(env or {})},
                            stdout=stdout, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _finish(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the fleet still ran {timeout} s later")
    return out or "", err


def test_a_report_that_cannot_be_written_ends_the_fleet_instead_of_hanging_it(tmp_path):
    # `fleet plan ... | head -1`: the reader is gone after one line. The broken pipe was taken for
    # a dead worker's and the fleet waited for that worker, which was waiting for a store: forever.
    # A full disk under the state file of `run --if-due` hung it the same way.
    stores = [copy_store(FIXTURES / "bank", tmp_path / f"bank{i}") for i in range(6)]
    proc = _fleet_process("plan", *map(str, stores), "--model", "none", "--now", NOW, "--workers", "2")
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["status"] == "ok"
    proc.stdout.close()  # as `head -1` does
    _, err = _finish(proc, timeout=60)
    assert proc.returncode == 1 and err.strip().splitlines() == ["memconsolidate: cannot complete: broken pipe"], err


def test_ctrl_c_is_one_line_from_the_fleet_not_a_traceback_from_each_worker(tmp_path):
    stores = [copy_store(FIXTURES / "bank", tmp_path / "fleet" / f"bank{i}") for i in range(6)]
    proc = _fleet_process("run", *map(str, stores), "--model", "none", "--now", NOW, "--workers", "3",
                          env={"MEMCONSOLIDATE_FAULT_DELAY_MS": "300"})  # slow journal steps: the workers are mid-store
    assert proc.stdout is not None
    proc.stdout.readline()  # a store is done, the others are under way
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C at a terminal does
    _, err = _finish(proc, timeout=60)
    assert proc.returncode == 130 and err.strip().splitlines() == ["memconsolidate: interrupted"], err
    # each interrupted store is as it would be alone: undone or recovered by its next run, never half-applied
    again = run_cli("fleet", "run", *map(str, stores), "--model", "none", "--now", NOW)
    assert again.returncode == 0 and {r["status"] for r in lines(again.stdout).values()} == {"ok"}, again.stderr


# --- the --stores list ------------------------------------------------------------------------


def test_a_stores_list_with_a_byte_order_mark_reads_its_first_line_as_the_others(tmp_path):
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    listing = tmp_path / "stores.txt"
    listing.write_bytes("# written by a Windows editor\r\nbank\r\n".encode("utf-8-sig"))
    res = run_cli("fleet", "plan", "--stores", str(listing), "--now", NOW, "--model", "none")
    assert res.returncode == 0, res.stderr  # the comment was a store named "\ufeff# written by ...", not found
    assert list(lines(res.stdout)) == [str(store)]


def test_a_stores_list_from_a_pipe_is_relative_to_the_current_folder(tmp_path):
    # `find . -name ... | memconsolidate fleet plan --stores /dev/stdin`: a pipe has no folder of
    # its own (/dev/stdin resolved to /proc/PID/fd/pipe:[N], and every store was "not found" there).
    store = copy_store(FIXTURES / "bank", tmp_path / "tenants" / "bank")
    res = subprocess.run([sys.executable, "-m", "pipeline", "fleet", "plan", "--stores", "/dev/stdin", "--now", NOW, "--model", "none"],
                         input="./bank\n", capture_output=True, text=True, cwd=tmp_path / "tenants",
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert res.returncode == 0, res.stderr
    assert list(lines(res.stdout)) == [str(store)]


def test_a_stores_list_that_never_ends_is_refused_without_filling_the_memory(tmp_path):
    # A process of its own, its memory capped: /dev/zero was read whole (MemoryError, or the OOM killer).
    import resource

    gib = 1 << 30
    res = subprocess.run([sys.executable, "-m", "pipeline", "fleet", "plan", "--stores", "/dev/zero", "--model", "none"],
                         cwd=REPO, capture_output=True, text=True, timeout=120,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 * gib, 2 * gib)))
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert res.stderr.strip().splitlines() == ["memconsolidate: --stores /dev/zero is over 64 MiB: not a list of stores"]


# --- the budget of a resumed fleet run ----------------------------------------------------------


def test_a_resumed_fleet_run_counts_what_the_stores_the_budget_cut_short_spent(tmp_path, fake_openai):
    # Every request a server answers is one the budget counted: no retries, no re-asks. The server
    # refuses each (400): a store's plan then has errors, but its calls were made and paid for.
    fake_openai.responder = lambda body: status_reply(400)
    config = tmp_path / "fleet.toml"
    config.write_text("[llm]\nmax_attempts = 1\nmax_reasks = 0\n")
    for i in range(3):
        copy_store(FIXTURES / "bank", tmp_path / "fleet" / f"bank{i}")
    state = tmp_path / "fleet.jsonl"
    args = ("fleet", "run", "--discover", str(tmp_path / "fleet"), "--if-due", "--state", str(state), "--now", NOW,
            "--model", fake_openai.model(), "--api-base", fake_openai.api_base, "--no-cache", "--config", str(config),
            "--max-calls", "5", "--workers", "1")
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    first = run_cli(*args, env=env)
    assert first.returncode == 1 and fake_openai.count == 5, first.stderr
    # What a kill after the last store leaves: no closing line, so the next attempt resumes.
    state.write_text("".join(line + "\n" for line in state.read_text().splitlines() if '"complete"' not in line))
    again = run_cli(*args, env=env)
    assert again.returncode == 1 and "fleet budget: 5 calls" in again.stderr, again.stderr
    assert fake_openai.count == 5  # the resumed attempt had nothing left to spend (it made 5 more)
    cut = [r for r in lines(first.stdout).values() if r["status"] == "budget_exhausted"]
    assert sum(r["llm"]["calls"] for r in cut) == 5  # a store cut short says what it spent, as in `fleet plan`


def test_absurd_numbers_in_a_fleet_state_exhaust_the_budget_instead_of_crashing_the_fleet(tmp_path):
    import datetime as dt

    stores = [copy_store(FIXTURES / "bank", tmp_path / "fleet" / f"bank{i}") for i in range(2)]
    state = tmp_path / "fleet.jsonl"
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    planted = {"path": str(stores[0]), "status": "ok", "llm": {"calls": 10**400, "cost_usd": 1e300}}
    state.write_text(json.dumps({"schema": "memconsolidate.fleet-state/1", "fleet_run": "F1", "started": started}) + "\n"
                     + json.dumps({"fleet_run": "F1", "store": planted}) + "\n")
    for budget in (("--max-calls", "100"), ("--max-cost", "1")):
        res = run_cli("fleet", "run", *map(str, stores), "--if-due", "--state", str(state), "--now", NOW, *budget)
        assert res.returncode == 1 and "internal error" not in res.stderr, res.stderr  # was OverflowError, before any store
        records = lines(res.stdout)
        assert records[str(stores[0])]["resumed"] is True
        assert records[str(stores[1])]["status"] == "budget_exhausted" and not (stores[1] / ".memconsolidate" / "runs").exists()
        state.write_text("".join(line + "\n" for line in state.read_text().splitlines()[:2]))  # the same two lines again


# --- discovery ----------------------------------------------------------------------------------


def test_discovery_names_the_stores_it_leaves_inside_a_claude_repository(tmp_path):
    # A repository holding `.claude/` is one claude store; a bank or zylos store inside it overlaps
    # it, so the fleet cannot take both. It was left out without a word, every night.
    repo = copy_store(FIXTURES / "claude", tmp_path / "top" / "repo")
    bank = copy_store(FIXTURES / "bank", repo / "tools" / "bank")
    zylos = copy_store(FIXTURES / "zylos", repo / "zylos")
    res = run_cli("fleet", "plan", "--discover", str(tmp_path / "top"), "--now", NOW, "--model", "none")
    assert res.returncode == 0, res.stderr
    assert list(lines(res.stdout)) == [str(repo)]
    for inner, layout in ((bank, "bank"), (zylos, "zylos")):
        assert (f"memconsolidate: {inner}: a {layout} store inside the claude store {repo}, left out "
                "(stores overlap: run it on its own)") in res.stderr.splitlines()


def test_discovery_goes_on_where_the_claude_layout_cannot_tell_for_folders_nested_too_deep(tmp_path, monkeypatch):
    from pipeline.fleet.targets import discover
    from pipeline.layouts.claude import reader

    top = tmp_path / "top"
    bank = copy_store(FIXTURES / "bank", top / "bank")
    repo = copy_store(FIXTURES / "claude", top / "deep" / "d" / "repo")
    walk = reader.detect

    def detect(root: Path) -> bool:
        # What a layout whose walk recurses (claude's did: os.walk on Python 3.11) does above a
        # tree nested deeper than the recursion limit: `--discover` was an internal error, no store run.
        if root in (top, top / "deep"):
            raise RecursionError("maximum recursion depth exceeded")
        return walk(root)

    monkeypatch.setattr(reader, "detect", detect)
    warnings: list[str] = []
    assert discover(str(top), warnings.append) == [str(bank), str(repo)]
    assert warnings == [f"{top}: its folders nest too deep to tell at once whether it is a claude store: "
                        "each folder below is looked at instead (slow)"]
