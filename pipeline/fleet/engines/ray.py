"""The Ray engine: the same per-store task as Ray tasks, on a cluster or a local Ray instance.

`--address auto` joins the running cluster, `--address ray://host:10001` a remote one through Ray
Client, and no address starts a local instance (stopped again at the end). When Ray is already
initialised in this process (a test, a notebook), that instance is used and left running. The
fleet's budget is one Ray actor every task reports to. Each task may run once only
(`max_retries=0`): a store whose worker died is reported `crashed`, never half-applied twice.
Every node must have memconsolidate installed (the same version), as for any Ray job.

Ray is an optional extra (`pip install memconsolidate[fleet]`); it is imported only here.
"""

from __future__ import annotations

from typing import Any, Sequence, cast

from ...errors import UsageError
from ..budget import Ledger, Limits, _Shared, start_state
from ..task import Task, TaskSpec, crashed_record, run_task
from . import Done

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


def _remote_task(path: str, spec: TaskSpec, actor: Any, task: Task) -> dict[str, Any]:
    return task(path, spec, ActorBudget(actor) if actor is not None else None)


class RayEngine:
    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        if ray is None:
            raise UsageError("--engine ray needs Ray: pip install 'memconsolidate[fleet]'")
        self.workers = workers  # at most this many stores at once (default: as many as the cluster runs)
        self.address = address

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
        remote = ray.remote(max_retries=0)(_remote_task)
        spec_ref = ray.put(spec)
        limit = self.workers or len(paths)
        pending: dict[Any, str] = {}
        queue = list(reversed(paths))
        while queue or pending:
            while queue and len(pending) < limit:
                path = queue.pop()
                pending[remote.remote(path, spec_ref, actor, task)] = path
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                path = pending.pop(ref)
                done(self._record(ref, path))
        if actor is None:
            return None
        return cast("dict[str, Any]", ray.get(cast(Any, actor).snapshot.remote()))

    @staticmethod
    def _record(ref: Any, path: str) -> dict[str, Any]:
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as exc:  # the worker died, or Ray lost the task
            first = " ".join(str(exc).split())[:200]
            return crashed_record(path, f"the Ray worker failed on this store: {type(exc).__name__}: {first}")
