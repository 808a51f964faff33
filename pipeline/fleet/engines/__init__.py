"""The engine seam: how a fleet's per-store tasks are spread over workers.

An engine is one module with one class implementing `Engine`: it runs `task(path, spec, budget)`
for every path, calls `done(record)` once per path as each finishes (in any order; a worker that
died gives `crashed_record`), shares one budget built from `limits` between all its workers, and
returns the budget's final snapshot. Built with `store_timeout` (seconds, None for none), it kills the
worker of a store still running that long after the worker started on it (a read from a stalled
mount never returns) and gives `timed_out_record`; the other stores go on, on a new worker. The kill
is a crash as far as the store knows: its journal recovers it on its next run. Another engine (Dask,
Celery) is one more module and one line in `ENGINES`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Protocol, Sequence

from ...errors import UsageError
from ..budget import Limits
from ..task import Task, TaskSpec

Done = Callable[[dict[str, Any]], None]


class Engine(Protocol):
    name: str

    def run(self, paths: Sequence[str], spec: TaskSpec, limits: Limits | None, done: Done, task: Task | None = None) -> dict[str, Any] | None:
        """Run the task on every path; the budget snapshot at the end (None without limits)."""
        ...


ENGINES = {"local": "pipeline.fleet.engines.local:LocalEngine", "ray": "pipeline.fleet.engines.ray:RayEngine"}


def get_engine(name: str, **options: Any) -> Engine:
    """The engine called `name`, built with `options` (workers, address, store_timeout); its module is imported only now."""
    if name not in ENGINES:
        raise UsageError(f"unknown engine {name!r} (expected {' | '.join(ENGINES)})")
    module, _, attr = ENGINES[name].partition(":")
    return getattr(importlib.import_module(module), attr)(**options)
