"""Kill apply at every step and at random instants: the store is always all-before or all-after.

Each killed run is a process of its own (forked from a server that has imported the pipeline, see
`helpers.start_cli`), so a kill is a real kill: no `finally`, no flush, the kernel drops the lock.
"""

import os
import random
import signal
import time

import pytest

from helpers import NOW, run_cli, snapshot
from helpers import FAULT_ENV, kill_undo_at_every_step, start_cli

APPLY = ["apply", "--now", NOW, "--model", "none", "--yes"]


def _states(fixture_store):
    """The store before and after a clean apply, and how many fault steps that apply passes."""
    ref = fixture_store("bank", "ref")
    before = snapshot(ref)
    child = start_cli(APPLY[0], str(ref), *APPLY[1:], report_steps=True)
    steps = 0
    while (seen := child.next_step()) is not None:
        steps = seen
    assert child.wait().returncode == 0
    # the bank fixture's run: backups, the journal saved, its ops, the commit (each phase present)
    assert steps >= 4
    return before, snapshot(ref), steps


def test_fault_at_every_step_rolls_back_or_completes(fixture_store):
    before, after, steps = _states(fixture_store)
    seen_partial_recovery = 0
    # every step of the run, and one past its last (the run then completes)
    for step in range(1, steps + 2):
        store = fixture_store("bank", f"s{step}")
        env = {**os.environ, FAULT_ENV: str(step)}
        res = run_cli(*[APPLY[0], str(store), *APPLY[1:]], env=env)
        if res.returncode == 0:
            # more steps than the run has: it completed
            assert step > steps
            assert snapshot(store) == after
            continue
        assert res.returncode == 99, res.stderr
        status = run_cli("status", str(store))
        assert status.returncode == 0
        nxt = run_cli("plan", str(store), "--now", NOW, "--model", "none", "--json")
        assert nxt.returncode == 0, nxt.stderr
        state = snapshot(store)
        assert state in (before, after), f"step {step}: half-applied store"
        if "UNFINISHED" in status.stdout:
            seen_partial_recovery += 1
            assert state == before
            assert "rolled back" in nxt.stderr or "interrupted before any change" in nxt.stderr
        # and the store still applies cleanly afterwards
        assert run_cli(*[APPLY[0], str(store), *APPLY[1:]]).returncode == 0
    assert seen_partial_recovery >= 3


@pytest.mark.slow
def test_sigkill_at_random_instants(fixture_store):
    import json

    before, after, steps = _states(fixture_store)
    rng = random.Random(1234)
    outcomes = set()
    mid_run = 0
    for i in range(12):
        store = fixture_store("bank", f"k{i}")
        # The run reports each fault step as it passes it. The kill comes a random 0-4 ms after a
        # random step (0: after the start, while it plans), so it lands inside the work that
        # follows (a copy, an fsync, a rename, the commit, the lock release) or after the end.
        # Kill 0 is held right after its step, so at least one kill surely lands mid-run.
        step = 0 if i == 1 else rng.randint(1, steps)
        child = start_cli(APPLY[0], str(store), *APPLY[1:], report_steps=True, hold_at=step if i == 0 else None)
        if step:
            child.wait_for_step(step)
        time.sleep(rng.uniform(0, 0.004))
        child.kill()
        assert child.wait().returncode in (0, -signal.SIGKILL)
        status = json.loads(run_cli("status", str(store), "--json", "--now", NOW).stdout)
        mid_run += bool(status["unfinished_journal"])
        nxt = run_cli("plan", str(store), "--now", NOW, "--model", "none")
        assert nxt.returncode == 0, nxt.stderr
        state = snapshot(store)
        assert state in (before, after), f"kill {i}: half-applied store"
        outcomes.add("before" if state == before else "after")
    # the test means something only if some kills really landed in the middle of a run
    assert mid_run >= 1, "no kill landed mid-run: widen the window"


def test_second_concurrent_run_is_refused(bank_store):
    store = bank_store
    # The first run is held inside its transaction (lock taken, journal being written) while a
    # second run, from another process, tries the same store.
    first = start_cli(APPLY[0], str(store), *APPLY[1:], hold_at=1)
    try:
        assert first.wait_for_step(1)
        res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes")
        assert res.returncode == 1
        assert "another memconsolidate run" in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    finally:
        first.release()
        done = first.wait(timeout=60)
    assert done.returncode == 0, done.stderr



def test_a_plan_during_a_live_run_says_so_and_rolls_nothing_back(bank_store):
    # A run holding the lock is live: a plan then neither calls it interrupted nor recovers it.
    first = start_cli(APPLY[0], str(bank_store), *APPLY[1:], hold_at=1)
    try:
        assert first.wait_for_step(1)
        res = run_cli("plan", str(bank_store), "--now", NOW, "--model", "none", "--json")
        assert res.returncode == 0, res.stderr
        assert "is working on the store" in res.stderr and "interrupted" not in res.stderr
        assert "rolled back" not in res.stderr
    finally:
        first.release()
        done = first.wait(timeout=60)
    assert done.returncode == 0, done.stderr


def test_undo_killed_at_every_step_then_undone_again_is_exactly_before(fixture_store):
    """A kill anywhere in an undo, even right after its own commit, and a second `undo` leave the
    store as it was before the run: files and folders (the run's new folders too)."""
    apply_stub = ["apply", "--now", NOW, "--model", "stub", "--no-cache", "--yes"]

    def prepare(step):
        store = fixture_store("bank", f"u{step}")
        before = snapshot(store)
        assert run_cli(apply_stub[0], str(store), *apply_stub[1:]).returncode == 0
        assert snapshot(store) != before
        return store, before

    # the undo passed several steps (backups, its journal, its ops, its commit)
    assert kill_undo_at_every_step(prepare) >= 3
