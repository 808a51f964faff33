"""The one exception family the LLM client raises or returns: a stage call that failed, softly."""

from __future__ import annotations

from ..errors import MemconsolidateError
from ..model import StageError


class StageCallError(MemconsolidateError):
    """A stage's model call failed; `reason` is one short line, safe to show (no secrets).

    The stage runner records it in the plan's `errors` (`as_stage_error()`) and drops the stage's
    proposals; the deterministic plan stands.
    """

    def __init__(self, stage: str, reason: str) -> None:
        self.stage = stage
        self.reason = " ".join(str(reason).split())  # one line, always
        super().__init__(f"{stage}: {self.reason}")

    def as_stage_error(self) -> StageError:
        return StageError(stage=self.stage, message=self.reason)

    def __reduce__(self):  # picklable across processes, keeping both fields
        return (type(self), (self.stage, self.reason))


class BudgetExceeded(StageCallError):
    """`max_calls` or `max_cost` reached: raised before the call that would exceed it."""


class UnknownHandle(StageCallError):
    """A reply named a handle that was not offered (the model invented or misnumbered a candidate)."""


class CallTimedOut(StageCallError):
    """The call ran out of time after its retries: a batch of several items is worth splitting."""


class ServerUnreachable(StageCallError):
    """The server could not be reached and retries did not cure it: no more calls this run."""


class CallFailed(MemconsolidateError):
    """Internal: a backend's failure with the usage it still spent; the client turns it into a
    StageCallError after counting the usage."""

    def __init__(self, reason: str, prompt_tokens: int = 0, completion_tokens: int = 0, cost_usd: float = 0.0,
                 *, timed_out: bool = False, unreachable: bool = False, refused: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.cost_usd = cost_usd
        self.timed_out = timed_out
        self.unreachable = unreachable
        self.refused = refused  # the budget refused a retry or a re-ask (`reason` is its BudgetExceeded's)
