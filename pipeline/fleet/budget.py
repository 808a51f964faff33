"""One budget for a whole fleet: requests, cost and requests per minute, shared by every worker.

`Ledger` is the arithmetic, over any object with the fields of `_Shared` (a ctypes struct in shared
memory for the local engine, a plain object inside a Ray actor). `WorkerMeter` is what a worker
installs for the LLM client (`pipeline.llm.meter`): it forwards to the shared ledger and remembers
whether the budget refused this store anything, so the task can report it instead of applying a
plan the budget cut short.

A request is each one the provider sees: the client reserves a call's retries and re-asks as its
first request (`pipeline/llm/litellm_backend.py`), and one refused here is never sent. Cost is
known only after a request, so `max_cost` is checked before each one against what was spent so
far: requests already in flight when it is reached may pass it by their own cost (as the
single-store `--max-cost` does). Nothing is ever given back: the requests of a store whose worker
died or was killed at `--store-timeout` stay counted, its cost as far as it was reported.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

from ..llm.errors import BudgetExceeded

_NANO = 1_000_000_000
# The ledger's counters are 64-bit integers in shared memory: a count beyond this (from a corrupt or
# planted fleet state, or a price gone wild) is held at it, an exhausted budget, instead of wrapping
# around to a small number or overflowing.
MAX_COUNT = 1 << 62


def _saturated(count: int) -> int:
    return min(max(0, count), MAX_COUNT)


def _nano(usd: float) -> int:
    """USD in billionths, within the ledger's range (NaN and negatives are nothing)."""
    if not usd > 0:
        return 0
    return MAX_COUNT if usd >= MAX_COUNT / _NANO else _saturated(round(usd * _NANO))


@dataclass(frozen=True)
class Limits:
    max_calls: int | None = None
    max_cost: float | None = None
    rpm: float | None = None  # requests per minute, spread evenly: never a burst above the rate
    # already spent by an earlier attempt of this fleet run (resume): counts against the limits
    spent_calls: int = 0
    spent_cost: float = 0.0


class _Shared(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_int64), ("cost_nano", ctypes.c_int64), ("next_slot", ctypes.c_double), ("refused", ctypes.c_int64)]


class Ledger:
    """The budget's rules over `state` (calls, cost_nano, next_slot, refused); callers hold the lock."""

    def __init__(self, limits: Limits, state: Any, clock: Callable[[], float] = time.time) -> None:
        self.limits = limits
        self.state = state
        self.clock = clock

    def reserve(self, stage: str) -> float:
        lim, st = self.limits, self.state
        if lim.max_calls is not None and st.calls >= lim.max_calls:
            st.refused += 1
            raise BudgetExceeded(stage, f"fleet call budget reached (max_calls={lim.max_calls})")
        if lim.max_cost is not None and st.cost_nano / _NANO >= lim.max_cost:
            st.refused += 1
            raise BudgetExceeded(stage, f"fleet cost budget reached (${st.cost_nano / _NANO:.4f} of max_cost ${lim.max_cost:g})")
        st.calls += 1
        if not lim.rpm:
            return 0.0
        now = self.clock()
        slot = max(now, st.next_slot)
        st.next_slot = slot + 60.0 / lim.rpm
        return slot - now

    def spent(self, cost_usd: float) -> None:
        self.state.cost_nano = _saturated(self.state.cost_nano + _nano(cost_usd))

    def snapshot(self) -> dict[str, Any]:
        return {"calls": int(self.state.calls), "cost_usd": self.state.cost_nano / _NANO, "refused": int(self.state.refused)}


def start_state(limits: Limits, state: Any) -> Any:
    state.calls = _saturated(limits.spent_calls)
    state.cost_nano = _nano(limits.spent_cost)
    state.next_slot = 0.0
    state.refused = 0
    return state


class Budget(Protocol):
    """What a worker sees of the shared budget (the meter protocol plus a snapshot)."""

    def reserve(self, stage: str) -> float: ...
    def spent(self, cost_usd: float) -> None: ...
    def snapshot(self) -> dict[str, Any]: ...


class LocalBudget:
    """The ledger in shared memory under one lock: handed to worker processes when they start."""

    def __init__(self, limits: Limits, ctx: Any = None) -> None:
        ctx = ctx or multiprocessing.get_context()
        self.limits = limits
        # The ledger's fields in shared memory, and beside them a plain lock, not a synchronized
        # Value's re-entrant one (which every field read takes again): the fleet must be able to
        # release the lock for a worker that died holding it (`recover`), and only the owner of a
        # re-entrant lock may release it.
        self._value = ctx.Value(_Shared, lock=False)
        self._lock = ctx.Lock()
        start_state(limits, self._value)

    def _ledger(self) -> Ledger:
        return Ledger(self.limits, self._value)

    def reserve(self, stage: str) -> float:
        with self._lock:
            return self._ledger().reserve(stage)

    def spent(self, cost_usd: float) -> None:
        with self._lock:
            self._ledger().spent(cost_usd)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return self._ledger().snapshot()

    def recover(self, timeout: float) -> bool:
        """After a worker died on its own (the OOM killer, a segfault): whether it had taken the
        ledger's lock with it, which is then released here. The lock is held for microseconds at a
        time, so one not had within `timeout` is a dead worker's; without this every later store
        would wait on it until its timeout, and the fleet's last look at the budget for ever. What
        the dead worker was reserving may or may not be counted."""
        with self.held(timeout) as got:
            pass
        if not got:
            self._lock.release()
        return not got

    @contextmanager
    def held(self, timeout: float) -> Iterator[bool]:
        """The ledger's lock held by the caller for a while (whether it got it within `timeout`):
        a worker killed meanwhile cannot be inside the ledger, and so cannot take the lock to its
        grave, which would leave every other worker waiting on it forever."""
        lock = self._lock
        got = lock.acquire(timeout=timeout)
        try:
            yield got
        finally:
            if got:
                lock.release()


class WorkerMeter:
    """The meter one store's task installs: the shared budget, plus whether it refused this store."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.refused: str | None = None

    def reserve(self, stage: str) -> float:
        try:
            return self.budget.reserve(stage)
        except BudgetExceeded as exc:
            self.refused = self.refused or exc.reason
            raise

    def spent(self, cost_usd: float) -> None:
        self.budget.spent(cost_usd)
