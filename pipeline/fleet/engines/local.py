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
from multiprocessing.connection import Connection, wait
from typing import Any, Sequence

from ..budget import LocalBudget, Limits
from ..task import Task, TaskSpec, crashed_record, run_task
from . import Done


def _worker(conn: Connection, env: dict[str, str], spec: TaskSpec, budget: LocalBudget | None, task: Task) -> None:
    # The forkserver's environment is the one it started with: the fleet's own is what counts
    # (its reply cache, its keys), as for a store run alone from the same shell.
    os.environ.clear()
    os.environ.update(env)
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

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


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
                            slot.stop()
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
            for slot in slots:
                slot.stop()
        return budget.snapshot() if budget is not None else None

    def _collect(self, slot: _Slot, ctx: Any, spec: TaskSpec, budget: LocalBudget | None, task: Task, done: Done) -> _Slot:
        """The record of the store `slot` was on; the slot itself, or a new one if its worker died."""
        path = slot.path
        assert path is not None
        try:
            if slot.conn.poll():
                record = slot.conn.recv()
                slot.path = None
                done(record)
                return slot
        except (EOFError, OSError):
            pass
        slot.process.join()
        done(crashed_record(path, f"the worker process died while on this store (exit code {slot.process.exitcode})"))
        slot.conn.close()
        return _Slot(ctx, spec, budget, task)
