"""The one layer of transient retries (tenacity) and the short reasons failures are reported with.

Only what a later attempt can fix is retried: rate limits, timeouts, connection errors and 5xx.
Bad requests, authentication, not-found and schema-invalid replies are not (instructor re-asks
invalid replies itself, a bounded number of times). litellm's own retries and the openai SDK's are
turned off by the backend so attempts do not multiply. Each attempt and each re-ask is a request the
budget reserves before it is sent (litellm_backend.py); one it refuses ends the call, not retried.

Provider errors arrive wrapped (instructor raises InstructorRetryException *from* the litellm error,
which wraps the openai SDK's, which wraps httpx's), so classification walks the `__cause__` chain.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ..errors import MemconsolidateError
from .errors import BudgetExceeded

if TYPE_CHECKING:
    from tenacity import RetryCallState

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts, backoff and the Retry-After cap. Tests shrink the waits; nothing else should need to."""

    max_attempts: int = 3
    base_wait_s: float = 1.0  # first backoff; doubles each attempt
    max_wait_s: float = 20.0  # cap on the exponential backoff
    retry_after_cap_s: float = 60.0  # a server's Retry-After is honoured up to this
    sleep: Callable[[float], Awaitable[None]] | None = field(default=None, compare=False)

    def wait_for(self, attempt: int, exc: BaseException | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        backoff = min(self.max_wait_s, self.base_wait_s * (2 ** max(0, attempt - 1)))
        hinted = retry_after_seconds(exc) if exc is not None else None
        if hinted is None:
            return max(0.0, backoff)
        return max(0.0, min(self.retry_after_cap_s, max(backoff, hinted)))


@dataclass(frozen=True)
class Failure:
    kind: str  # short words: "timeout", "rate limited", "server error 500", "reply invalid: field"
    retryable: bool
    invalid_reply: bool = False
    refused: bool = False  # by the budget, before the request was sent


def chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes, outermost first, without cycles."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 16:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if isinstance(code, int) and 100 <= code <= 599:
        return code
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    return code if isinstance(code, int) and 100 <= code <= 599 else None


def _validation_fields(exc: ValidationError) -> str:
    names: list[str] = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            label = "invalid JSON"
        else:
            label = ".".join(str(p) for p in err.get("loc", ())) or "reply"
        if label not in names:
            names.append(label)
    return ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")


def classify(exc: BaseException) -> Failure | None:
    """What went wrong, from the first exception in the chain that says; None if nothing does."""
    try:
        import openai
    except ImportError:  # pragma: no cover - openai comes with litellm
        openai = None  # type: ignore[assignment]
    links = chain(exc)
    for e in links:
        # The budget refused a retry or a re-ask (instructor wraps the refusal of a re-ask): whatever
        # failed before it, nothing more may be sent.
        if isinstance(e, BudgetExceeded):
            return Failure(e.reason, retryable=False, refused=True)
    for e in links:
        if isinstance(e, ValidationError):
            return Failure(f"reply invalid: {_validation_fields(e)}", retryable=False, invalid_reply=True)
    # No response came back at all: said anywhere in the chain, this is the truth (litellm reports a
    # refused connection as an InternalServerError 500 wrapping the SDK's APIConnectionError).
    for e in links:
        if isinstance(e, TimeoutError):  # asyncio's too: the same class since Python 3.11
            return Failure("timeout", retryable=True)
        if openai is not None and isinstance(e, openai.APITimeoutError):
            return Failure("timeout", retryable=True)
    for e in links:
        if openai is not None and isinstance(e, openai.APIConnectionError):
            return Failure("connection error", retryable=True)
    for e in links:
        if openai is not None and isinstance(e, openai.RateLimitError):
            return Failure("rate limited", retryable=True)
        code = _status(e)
        if code is None:
            continue
        if code == 408:
            return Failure("timeout", retryable=True)
        if code == 429:
            return Failure("rate limited", retryable=True)
        if code >= 500:
            refused = refusal_message(e)
            if refused is not None:
                # The server says the request itself is wrong (llama.cpp refusing `json_schema`
                # answers 500 "validation error ... Input should be 'text' or 'json_object'"):
                # sending it again gets the same answer.
                return Failure(f"server refused the request ({code}): {refused}", retryable=False)
            return Failure(f"server error {code}", retryable=True)
        if code in (401, 403):
            return Failure(f"authentication failed ({code})", retryable=False)
        if code == 404:
            return Failure("model or endpoint not found (404)", retryable=False)
        if 400 <= code < 500:
            return Failure(f"request rejected ({code})", retryable=False)
    return None


# Words a server uses when the request is malformed rather than the server unwell.
_REFUSAL = re.compile(
    r"validation error|input should be|invalid request|invalid value|unsupported|not supported|"
    r"unrecognized request argument|extra inputs are not permitted|field required|must be one of",
    re.I,
)


def refusal_message(exc: BaseException) -> str | None:
    """The server's own words when a 5xx body says the request is invalid, one line; else None."""
    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = str(inner.get("message", "") if isinstance(inner, dict) else inner)
    text = text or str(getattr(exc, "message", "") or exc)
    if not _REFUSAL.search(text):
        return None
    text = text.split('File "', 1)[0]  # a server that appends its traceback
    found = re.search(r"""'msg': (?:"([^"]+)"|'([^']+)')""", text)  # pydantic's error list: its message is the point
    where = re.search(r"'loc': \(([^)]*)\)", text)
    if found:
        loc = ".".join(x.strip(" '\"") for x in where.group(1).split(",") if x.strip(" '\"")) if where else ""
        msg = found.group(1) or found.group(2)
        text = f"{loc}: {msg}" if loc else msg
    folded = " ".join(text.split())
    return folded[:200] + ("…" if len(folded) > 200 else "")


def is_retryable(exc: BaseException) -> bool:
    failure = classify(exc)
    return failure is not None and failure.retryable


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's Retry-After (or retry-after-ms) anywhere in the chain, in seconds."""
    for e in chain(exc):
        for headers in (getattr(getattr(e, "response", None), "headers", None), getattr(e, "litellm_response_headers", None)):
            if not headers:
                continue
            try:
                ms = headers.get("retry-after-ms")
                if ms is not None:
                    return max(0.0, float(ms) / 1000)
                value = headers.get("retry-after")
            except Exception:
                continue
            if value is None:
                continue
            parsed = _parse_retry_after(str(value))
            if parsed is not None:
                return parsed
    return None


def _parse_retry_after(value: str) -> float | None:
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


class RetriesExhausted(MemconsolidateError):
    """The last error after `attempts` tries (or a non-retryable one after fewer)."""

    def __init__(self, last: BaseException, attempts: int) -> None:
        super().__init__(str(last))
        self.last = last
        self.attempts = attempts


async def call_with_retries(fn: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """Await `fn()`, retrying transient failures per `policy`; RetriesExhausted when it gives up."""
    # Imported here: only a real model's calls retry, and the stub's runs never pay for tenacity.
    import asyncio

    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

    attempts = 0

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return policy.wait_for(state.attempt_number, exc)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(max(1, policy.max_attempts)),
        retry=retry_if_exception(is_retryable),
        wait=wait,
        sleep=policy.sleep or asyncio.sleep,
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                return await fn()
    except Exception as exc:  # every provider error, wrapped or not
        raise RetriesExhausted(exc, attempts) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def describe(exc: BaseException, attempts: int, secrets: list[str] | tuple[str, ...] = ()) -> Failure:
    """The reason to report: "timeout after 3 attempts", "reply invalid after 2 attempts: why", ..."""
    from .redact import redact

    failure = classify(exc)
    n_reasks = getattr(exc, "n_attempts", None)
    if failure is None and isinstance(n_reasks, int):
        # instructor gave up on a reply it could not parse for a reason other than validation
        # (no tool call, wrong tool name, truncated output): still an invalid reply.
        cause = exc.__cause__ or exc.__context__
        label = type(cause).__name__ if cause is not None else "unparseable reply"
        failure = Failure(f"reply invalid: {redact(label, secrets)}", False, True)
    if failure is None:
        message = " ".join(str(exc).split())[:160]
        failure = Failure(redact(f"{type(exc).__name__}: {message}" if message else type(exc).__name__, secrets), False)
    if failure.invalid_reply:
        n = n_reasks if isinstance(n_reasks, int) and n_reasks > 0 else 1
        fields = failure.kind.removeprefix("reply invalid: ")
        return Failure(f"reply invalid after {n} attempt{'s' if n != 1 else ''}: {fields}", False, True)
    if failure.retryable:
        return Failure(f"{failure.kind} after {attempts} attempt{'s' if attempts != 1 else ''}", True)
    return failure


def usage_of(exc: BaseException) -> tuple[int, int]:
    """Tokens spent by a failed instructor call (its `total_usage`), else zero."""
    for e in chain(exc):
        usage: Any = getattr(e, "total_usage", None)
        if usage is not None:
            return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)
    return 0, 0
