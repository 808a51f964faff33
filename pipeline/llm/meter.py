"""A budget outside the client: the hook a fleet of stores uses to share one call, cost and rate limit.

The client asks its meter before every request it sends, a call's retries and re-asks included
(cache hits cost nothing and are not asked), and tells it what each request cost. `reserve` may refuse with BudgetExceeded, or return
how many seconds to wait first (a requests-per-minute limit). A process installs at most one meter
at a time (`installed`); every client made meanwhile uses it, so the pipeline that makes the
client needs no new parameter.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Protocol


class Meter(Protocol):
    def reserve(self, stage: str) -> float:
        """Count one request about to be sent; the seconds to wait before sending it. Raises
        BudgetExceeded when the budget is spent."""
        ...

    def spent(self, cost_usd: float) -> None:
        """What a request cost, once known (after it was sent)."""
        ...


_current: Meter | None = None


def current() -> Meter | None:
    return _current


@contextmanager
def installed(meter: Meter | None) -> Iterator[None]:
    """Every LLM client created inside the block reports to `meter`."""
    global _current
    saved, _current = _current, meter
    try:
        yield
    finally:
        _current = saved
