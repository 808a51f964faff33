"""The local engine: a pool of worker processes on this machine, one store at a time each.

Not concurrent.futures' pool: when one of its workers dies, it fails every pending task and cannot
say whose task killed it. Here each worker gets one path at a time over its own pipe, so a worker
that dies (a crash in native code, the OOM killer, os._exit) costs exactly the store it was on,
reported `crashed`, and a new worker takes its place. Workers are started by the forkserver: a
fork of this process could inherit locks held by its threads.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from multiprocessing.connection import Connection, wait
from typing import Any, Sequence, cast

from ..budget import LocalBudget, Limits
from ..task import Task, TaskSpec, crashed_record, run_task
from . import Done

# How long workers still on a store may take to finish it when the fleet stops early (an error, an
# interrupt); then they are killed, and the journal of a store killed mid-apply recovers it on its next run.
STOP_GRACE_S = 10.0


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
        conn.send(task(path, spec, budget))


class _Slot:
    def __init__(self, ctx: Any, spec: TaskSpec, budget: LocalBudget | None, task: Task) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, dict(os.environ), spec, budget, task), daemon=True, name="memconsolidate-fleet")
        self.process.start()
        child.close()
        self.path: str | None = None

    def give(self, path: str) -> None:
        self.path = path
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
            self.process.kill()
            self.process.join()
        self.conn.close()


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

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        if address:
            from ...errors import UsageError

            raise UsageError("--address is for --engine ray")
        self.workers = max(1, workers or os.cpu_count() or 1)

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
                ready = set(wait([s.conn for s in busy] + [s.process.sentinel for s in busy]))
                for i, slot in enumerate(slots):
                    if slot.path is not None and (slot.conn in ready or slot.process.sentinel in ready):
                        slots[i] = self._collect(slot, ctx, spec, budget, task, done)
        finally:
            _stop_all(slots)
        return budget.snapshot() if budget is not None else None

    def _collect(self, slot: _Slot, ctx: Any, spec: TaskSpec, budget: LocalBudget | None, task: Task, done: Done) -> _Slot:
        """The record of the store `slot` was on; the slot itself, or a new one if its worker died."""
        path = slot.path
        assert path is not None
        record = self._received(slot)
        if record is not None:
            slot.path = None
            done(record)  # outside the pipe's error handling: a report that cannot be written is the fleet's error
            return slot
        slot.process.join()
        done(crashed_record(path, f"the worker process died while on this store (exit code {slot.process.exitcode})"))
        slot.conn.close()
        return _Slot(ctx, spec, budget, task)

    @staticmethod
    def _received(slot: _Slot) -> dict[str, Any] | None:
        """The record the worker sent, or None when it died without sending one."""
        try:
            if slot.conn.poll():
                return cast("dict[str, Any]", slot.conn.recv())
        except (EOFError, OSError):
            pass
        return None
