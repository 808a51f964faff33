"""The local engine: a pool of worker processes on this machine, one store at a time each.

Not concurrent.futures' pool: when one of its workers dies, it fails every pending task and cannot
say whose task killed it. Here each worker gets one path at a time over its own pipe, so a worker
that dies (a crash in native code, the OOM killer, os._exit) costs exactly the store it was on,
reported `crashed`, and a new worker takes its place. A worker tells when it starts on a store; one
still on it `store_timeout` seconds later is killed the same way (the store reported timed out, unless
its record came in as it was killed) and replaced. Workers are started by the forkserver: a fork of
this process could inherit locks held by its threads.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from contextlib import nullcontext
from multiprocessing.connection import Connection, wait
from typing import Any, Sequence, cast

from ..budget import LocalBudget, Limits
from ..task import Task, TaskSpec, crashed_record, run_task, timed_out_record
from . import Done

# How long workers still on a store may take to finish it when the fleet stops early (an error, an
# interrupt); then they are killed, and the journal of a store killed mid-apply recovers it on its next run.
STOP_GRACE_S = 10.0
# How long a killed worker may take to die: milliseconds, unless the kernel holds it (a read from a
# mount that cannot be interrupted). Such a worker is left to the kernel and the fleet goes on.
KILL_WAIT_S = 5.0
# What a worker sends when it starts on a store, before the store's record: its time starts then,
# not when the store was sent (a new worker may still be importing the pipeline).
STARTED = "started"


def _worker(conn: Connection, env: dict[str, str], spec: TaskSpec, budget: LocalBudget | None, task: Task) -> None:
    # The forkserver's environment is the one it started with: the fleet's own is what counts
    # (its reply cache, its keys), as for a store run alone from the same shell.
    os.environ.clear()
    os.environ.update(env)
    try:
        _serve(conn, spec, budget, task)
    except KeyboardInterrupt:
        # Ctrl-C reaches every process of the terminal's group: the store was interrupted as it
        # would be alone (its journal rolls back or recovers), and the fleet says "interrupted"
        # once; a traceback from each worker would bury that line.
        return


def _serve(conn: Connection, spec: TaskSpec, budget: LocalBudget | None, task: Task) -> None:
    while True:
        try:
            path = conn.recv()
        except (EOFError, OSError):  # the fleet is gone or closed the pipe: nothing more to do
            return
        if path is None:
            return
        conn.send(STARTED)
        conn.send(task(path, spec, budget))


def _kill(process: Any, budget: LocalBudget | None) -> None:
    """Kill a worker and wait (KILL_WAIT_S at most) for it to die. The kill is sent, and the death
    awaited, with the budget's lock held here: a worker killed mid-reservation would take the lock
    with it and every other worker would wait for it forever. (A lock some worker already took to its
    grave is not waited for longer than KILL_WAIT_S.)"""
    with budget.held(KILL_WAIT_S) if budget is not None else nullcontext() as got:
        process.kill()
        process.join(KILL_WAIT_S)
    if got is False and not process.is_alive():
        assert budget is not None
        budget.recover(0)  # a worker took it to its grave before: every other one waits on it
    if process.is_alive():
        _left_to_the_kernel(process)


def _left_to_the_kernel(process: Any) -> None:
    """Forget a killed worker that is not dead yet: multiprocessing joins every process it started,
    without a time limit, as the interpreter exits, and the fleet, its report written, would wait
    for this one as long as the kernel held it (a cron job that never ends)."""
    multiprocessing.process._children.discard(process)  # type: ignore[attr-defined]


class _Slot:
    def __init__(self, ctx: Any, spec: TaskSpec, budget: LocalBudget | None, task: Task) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, dict(os.environ), spec, budget, task), daemon=True, name="memconsolidate-fleet")
        self.process.start()
        child.close()
        self.path: str | None = None
        self.started: float | None = None  # time.monotonic() when the worker started on `path`

    def give(self, path: str) -> None:
        self.path = path
        self.started = None
        try:
            self.conn.send(path)
        except OSError:  # its worker just died: the sentinel reports the store as crashed
            pass

    def ask_to_stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass

    def stop(self, deadline: float) -> None:
        """Wait for the worker until `deadline` (time.monotonic()), then kill it."""
        self.process.join(timeout=max(0.0, deadline - time.monotonic()))
        if self.process.is_alive():
            _kill(self.process, None)  # the fleet is ending: its budget no longer matters
        self.conn.close()

    def received(self) -> dict[str, Any] | None:
        """The record the worker sent, if it has (noting when it said it started); None otherwise."""
        try:
            while self.conn.poll():
                message = self.conn.recv()
                if message != STARTED:
                    return cast("dict[str, Any]", message)
                self.started = time.monotonic()
        except (EOFError, OSError):  # it died
            pass
        return None

    def deadline(self, timeout: float | None) -> float | None:
        """When the store this worker is on times out (time.monotonic()); None: not started, or no timeout."""
        if timeout is None or self.path is None or self.started is None:
            return None
        return self.started + timeout


def _stop_all(slots: list[_Slot]) -> None:
    """Every worker told at once, then given one shared grace period to finish the store it is on:
    one after the other, a fleet of 32 workers interrupted mid-store took 32 of them."""
    for slot in slots:
        slot.ask_to_stop()
    deadline = time.monotonic() + STOP_GRACE_S
    for slot in slots:
        slot.stop(deadline)


class LocalEngine:
    name = "local"

    def __init__(self, workers: int | None = None, address: str | None = None, store_timeout: float | None = None) -> None:
        if address:
            from ...errors import UsageError

            raise UsageError("--address is for --engine ray")
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.store_timeout = store_timeout

    def run(self, paths: Sequence[str], spec: TaskSpec, limits: Limits | None, done: Done, task: Task | None = None) -> dict[str, Any] | None:
        task = task or run_task
        ctx = multiprocessing.get_context("forkserver")
        budget = LocalBudget(limits, ctx) if limits is not None else None
        queue = list(reversed(paths))
        slots = [_Slot(ctx, spec, budget, task) for _ in range(min(self.workers, len(paths)))]
        try:
            while True:
                for i, slot in enumerate(slots):
                    if slot.path is None and queue:
                        if not slot.process.is_alive():  # died between two stores: no store lost
                            slot.stop(time.monotonic())
                            slots[i] = slot = _Slot(ctx, spec, budget, task)
                        slot.give(queue.pop())
                busy = [s for s in slots if s.path is not None]
                if not busy:
                    break
                ready = set(wait([s.conn for s in busy] + [s.process.sentinel for s in busy], self._until_a_deadline(busy)))
                for i, slot in enumerate(slots):
                    if slot.path is not None and (slot.conn in ready or slot.process.sentinel in ready or self._overdue(slot)):
                        slots[i] = self._collect(slot, ctx, spec, budget, task, done)
        finally:
            _stop_all(slots)
        return budget.snapshot() if budget is not None else None

    def _until_a_deadline(self, busy: list[_Slot]) -> float | None:
        """Seconds until the first store of `busy` times out (None: no store can)."""
        deadlines = [d for d in (s.deadline(self.store_timeout) for s in busy) if d is not None]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _overdue(self, slot: _Slot) -> bool:
        deadline = slot.deadline(self.store_timeout)
        return deadline is not None and time.monotonic() >= deadline

    def _collect(self, slot: _Slot, ctx: Any, spec: TaskSpec, budget: LocalBudget | None, task: Task, done: Done) -> _Slot:
        """The record of the store `slot` was on; the slot itself (also while its worker is still on
        the store in time, having only said it started), or a new one if its worker died or was
        killed for running past the store timeout."""
        path = slot.path
        assert path is not None
        record = slot.received()  # first: a store that finished as it timed out is done, not killed
        if record is not None:
            slot.path = None
            done(record)  # outside the pipe's error handling: a report that cannot be written is the fleet's error
            return slot
        if not slot.process.is_alive():
            slot.process.join()
            record = crashed_record(path, f"the worker process died while on this store (exit code {slot.process.exitcode})")
            if budget is not None and budget.recover(KILL_WAIT_S):
                record["errors"].append("it died holding the fleet budget's lock, released here")
            done(record)
        elif self._overdue(slot):
            assert self.store_timeout is not None
            _kill(slot.process, budget)
            # Its record may have come in since the look above, the store done (an apply committed):
            # once the worker is dead, the pipe holds all it sent.
            record = slot.received() if not slot.process.is_alive() else None
            done(record if record is not None else timed_out_record(path, self.store_timeout))
        else:
            return slot
        slot.conn.close()
        return _Slot(ctx, spec, budget, task)
