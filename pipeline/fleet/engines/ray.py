"""The Ray engine: the same per-store task as Ray tasks, on a cluster or a local Ray instance.

`--address auto` joins the running cluster, `--address ray://host:10001` a remote one through Ray
Client, and no address starts a local instance (stopped again at the end). When Ray is already
initialised in this process (a test, a notebook), that instance is used and left running. The
fleet's budget is one Ray actor every task reports to. Each task may run once only
(`max_retries=0`): a store whose worker died is reported `crashed`, never half-applied twice.
With a store timeout, each task tells a second actor when it starts (so a task queued for a free
CPU is not timed out, and one clock, the actor's, measures every node's tasks); a task still running
that long after is cancelled with `force=True` (its worker process killed, a new one started for the
next task) and its store reported timed out (unless it returned as it was cancelled: its own record).
Every node must have memconsolidate installed (the same version), as for any Ray job.

Ray is an optional extra (`pip install memconsolidate[fleet]`); it is imported only here.
"""

from __future__ import annotations

import time
from typing import Any, Sequence, cast

from ...errors import UsageError
from ..budget import Ledger, Limits, _Shared, start_state
from ..task import Task, TaskSpec, crashed_record, run_task, timed_out_record
from . import Done

# How long the outcome of a task cancelled with force is awaited: milliseconds (its worker killed),
# unless the kernel holds the worker; then the store is reported timed out and the fleet goes on.
CANCEL_WAIT_S = 5.0

try:
    import ray
except ImportError:  # pragma: no cover - only without the extra
    ray = None  # type: ignore[assignment]


class _Ledger:
    """The shared budget's state inside the actor (one actor: its calls are serialised)."""

    def __init__(self, limits: Limits) -> None:
        self.ledger = Ledger(limits, start_state(limits, _Shared()))

    def reserve(self, stage: str) -> float | str:
        from ...llm.errors import BudgetExceeded

        try:
            return self.ledger.reserve(stage)
        except BudgetExceeded as exc:
            return exc.reason  # an exception would come back wrapped in RayTaskError

    def spent(self, cost_usd: float) -> None:
        self.ledger.spent(cost_usd)

    def snapshot(self) -> dict[str, Any]:
        return self.ledger.snapshot()


class ActorBudget:
    """The `Budget` a task sees: each call is one round trip to the ledger actor."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def reserve(self, stage: str) -> float:
        from ...llm.errors import BudgetExceeded

        answer = ray.get(self.actor.reserve.remote(stage))
        if isinstance(answer, str):
            raise BudgetExceeded(stage, answer)
        return float(answer)

    def spent(self, cost_usd: float) -> None:
        self.actor.spent.remote(cost_usd)  # fire and forget; the actor applies calls in order

    def snapshot(self) -> dict[str, Any]:
        return ray.get(self.actor.snapshot.remote())


class _Starts:
    """When each store's task started, by the actor's clock (the nodes' clocks may disagree)."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def started(self, path: str) -> None:
        self.at[path] = time.monotonic()

    def running(self, paths: list[str]) -> dict[str, float]:
        """Seconds each of `paths` has run, for those that started."""
        now = time.monotonic()
        return {path: now - self.at[path] for path in paths if path in self.at}


def _remote_task(path: str, spec: TaskSpec, actor: Any, task: Task, starts: Any = None) -> dict[str, Any]:
    if starts is not None:
        starts.started.remote(path)  # fire and forget: the store does not wait for the driver's clock
    return task(path, spec, ActorBudget(actor) if actor is not None else None)


class RayEngine:
    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, store_timeout: float | None = None) -> None:
        if ray is None:
            raise UsageError("--engine ray needs Ray: pip install 'memconsolidate[fleet]'")
        self.workers = workers  # at most this many stores at once (default: as many as the cluster runs)
        self.address = address
        self.store_timeout = store_timeout

    def run(self, paths: Sequence[str], spec: TaskSpec, limits: Limits | None, done: Done, task: Task | None = None) -> dict[str, Any] | None:
        started = self._connect()
        try:
            return self._run(list(paths), spec, limits, done, task or run_task)
        finally:
            if started:
                ray.shutdown()

    def _connect(self) -> bool:
        if ray.is_initialized():
            return False
        try:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except Exception as exc:  # noqa: BLE001 - a cluster that cannot be reached: one line, exit 2
            raise UsageError(f"cannot start or reach Ray ({self.address or 'local instance'}): {type(exc).__name__}: {exc}") from None
        return True

    def _run(self, paths: list[str], spec: TaskSpec, limits: Limits | None, done: Done, task: Task) -> dict[str, Any] | None:
        actor = ray.remote(num_cpus=0)(_Ledger).remote(limits) if limits is not None else None
        starts = ray.remote(num_cpus=0)(_Starts).remote() if self.store_timeout is not None else None
        remote = ray.remote(max_retries=0)(_remote_task)
        spec_ref = ray.put(spec)
        limit = self.workers or len(paths)
        pending: dict[Any, str] = {}
        queue = list(reversed(paths))
        while queue or pending:
            while queue and len(pending) < limit:
                path = queue.pop()
                pending[remote.remote(path, spec_ref, actor, task, starts)] = path
            wake = self._time_out(starts, pending, done)
            if not pending:
                continue
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=wake)
            for ref in ready:
                path = pending.pop(ref)
                done(self._record(ref, path))
        if actor is None:
            return None
        return cast("dict[str, Any]", ray.get(cast(Any, actor).snapshot.remote()))

    def _time_out(self, starts: Any, pending: dict[Any, str], done: Done) -> float | None:
        """Cancel the tasks past the store timeout (each reported timed out, and no longer pending);
        the seconds until the next one could be (None: no store timeout)."""
        if starts is None or self.store_timeout is None:
            return None
        running = ray.get(starts.running.remote(list(pending.values())))
        for ref, path in list(pending.items()):
            if running.get(path, 0.0) < self.store_timeout or ray.wait([ref], timeout=0)[0]:
                continue  # in time, or finished as it timed out: its record is collected as any other
            ray.cancel(ref, force=True)
            del pending[ref]
            done(self._cancelled(ref, path))
        # a task that starts after this look runs for the whole timeout from now at least
        left = [self.store_timeout - running[p] for p in pending.values() if p in running]
        return max(0.0, min(left + [self.store_timeout]))

    def _cancelled(self, ref: Any, path: str) -> dict[str, Any]:
        """The record of a store whose task was just cancelled at the store timeout: its own when the
        task returned before the cancel reached it (the store done: an apply committed), else timed out."""
        assert self.store_timeout is not None
        ended, _ = ray.wait([ref], timeout=CANCEL_WAIT_S)
        if ended:
            try:
                return cast("dict[str, Any]", ray.get(ref))
            except ray.exceptions.RayError:  # TaskCancelledError: cancelled in time
                pass
        return timed_out_record(path, self.store_timeout)

    @staticmethod
    def _record(ref: Any, path: str) -> dict[str, Any]:
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as exc:  # the worker died, or Ray lost the task
            first = " ".join(str(exc).split())[:200]
            return crashed_record(path, f"the Ray worker failed on this store: {type(exc).__name__}: {first}")
