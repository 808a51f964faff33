"""Real models: instructor over litellm (`litellm.acompletion`), one transient-retry layer (tenacity).

litellm is imported here and only when a real model is called: the import takes seconds and, unless
told otherwise, fetches a price map from the internet.
"""

from __future__ import annotations

import atexit
import gc
import os
import warnings
from contextvars import ContextVar
from typing import Any

from ..storage.gc_pause import gc_paused
from .backends import BackendReply, CallRequest, Reserve
from .defaults import unknown_model_message
from .errors import CallFailed
from .redact import redact
from .retry import RetriesExhausted, RetryPolicy, call_with_retries, describe, usage_of

_FREEZE_AT_EXIT: list[object] = []
_QUIET_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "instructor")


def import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # pydantic warns about litellm's own types as litellm loads them (at import and lazily on the
    # first call): nothing a user can act on.
    warnings.filterwarnings("ignore", message=r".*ReadOnly. qualifier", category=UserWarning)
    # The import builds some two million long-lived objects: each collection it would trigger walks
    # them all and frees nothing (see storage/gc_pause.py).
    with warnings.catch_warnings(), gc_paused():
        warnings.simplefilter("ignore")
        import litellm

    litellm.suppress_debug_info = True
    # Registered after litellm's own exit hooks, so it runs before them: with litellm's objects
    # frozen, the collector no longer walks them all while the interpreter tears down (~3-4 s of
    # every run that called a model, on 2 busy cores). Nothing of ours needs a finalizer then.
    if not _FREEZE_AT_EXIT:
        _FREEZE_AT_EXIT.append(atexit.register(gc.freeze))
    # Failures are reported once, as the stage's short redacted reason; the libraries' own log lines
    # (which can quote requests and raw errors) stay out of the user's terminal and logs.
    import logging  # litellm has loaded it by now; a stub's plan never does

    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return litellm


def check_model(model: str, api_base: str | None = None) -> str:
    """The provider litellm will use for `model`; ValueError (one line) when it cannot tell."""
    litellm = import_litellm()
    try:
        return str(litellm.get_llm_provider(model, api_base=api_base)[1])
    except Exception:
        raise ValueError(unknown_model_message(model)) from None


def missing_credentials(model: str) -> list[str]:
    """The environment variables litellm says `model` needs and does not find (addresses such as
    OLLAMA_API_BASE are not credentials); [] when it cannot tell."""
    litellm = import_litellm()
    try:
        env = litellm.validate_environment(model)
    except Exception:
        return []
    if not isinstance(env, dict) or env.get("keys_in_environment"):
        return []
    return [str(k) for k in env.get("missing_keys") or [] if not str(k).endswith("_API_BASE")]


def _instructor_mode(mode: str) -> Any:
    import instructor

    return {
        "tools": instructor.Mode.TOOLS,
        "json": instructor.Mode.JSON,
        "json_schema": instructor.Mode.JSON_SCHEMA,
        "md_json": instructor.Mode.MD_JSON,
    }[mode]


_RESPONSE_MODELS: dict[type, Any] = {}

# What the call under way (`LiteLLMBackend.complete`) awaits before each request it sends. Instructor
# calls the completion function once per request, its re-asks included, and hands it nothing of the
# caller's: the call's budget reaches it through the task's context.
_BEFORE_REQUEST: ContextVar[Reserve | None] = ContextVar("memconsolidate_before_request", default=None)


def response_model(schema: type) -> Any:
    """instructor's wrapper class for `schema`, made once per schema. Given the bare class,
    instructor makes a new subclass on every call (pydantic builds its validator again, and its
    tool-schema cache, keyed by class, never hits): about half of a request's client CPU."""
    wrapped = _RESPONSE_MODELS.get(schema)
    if wrapped is None:
        import instructor

        wrapped = _RESPONSE_MODELS[schema] = instructor.openai_schema(schema)
    return wrapped


class LiteLLMBackend:
    cacheable = True

    def __init__(
        self,
        model: str,
        *,
        mode: str,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        timeout_per_1k_chars_s: float = 0.0,
        max_reasks: int = 1,
        strict: bool = False,
        policy: RetryPolicy | None = None,
        secrets: tuple[str, ...] = (),
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.name = model
        self.model = model
        self.mode = mode
        self.api_base = api_base
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.timeout_per_1k_chars_s = max(0.0, timeout_per_1k_chars_s)
        self.max_reasks = max(0, max_reasks)
        self.strict = strict
        self.policy = policy or RetryPolicy()
        self._secrets = tuple(s for s in (*secrets, api_key or "") if s)
        self._extra = dict(extra or {})  # more litellm arguments: temperature, seed, mock_response, ...
        self._client: Any = None
        self._litellm: Any = None
        self._unpriced: set[Any] = set()  # the served model names litellm has no price for

    def __repr__(self) -> str:  # never the key
        return f"LiteLLMBackend(model={self.model!r}, mode={self.mode!r})"

    def _instructor(self) -> Any:
        if self._client is None:
            self._litellm = import_litellm()
            import instructor

            self._client = instructor.from_litellm(self._acompletion, mode=_instructor_mode(self.mode))
        return self._client

    async def _acompletion(self, **kwargs: Any) -> Any:
        """One request: reserved against the budget (BudgetExceeded: it is not sent), then litellm's."""
        import asyncio

        before = _BEFORE_REQUEST.get()
        if before is not None:
            await before()
        # A hard bound in case a transport ignores its timeout (`_kwargs` sets it): from the send,
        # not from the wait for a rate-limit slot.
        return await asyncio.wait_for(self._litellm.acompletion(**kwargs), float(kwargs.get("timeout") or self.timeout_s) + 1.0)

    def timeout_for(self, request: CallRequest) -> float:
        """Seconds one attempt may take: a floor plus time for every 1,000 characters sent (a local
        model on CPU reads a long prompt for minutes; one fixed timeout fits no model's every call)."""
        chars = sum(len(m["content"]) for m in request.messages)
        return self.timeout_s + self.timeout_per_1k_chars_s * chars / 1000

    def _kwargs(self, request: CallRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            **self._extra,
            "model": self.model,
            "messages": request.messages,
            "response_model": response_model(request.schema),
            "max_retries": self.max_reasks,  # instructor: re-asks for schema-invalid replies
            "strict": self.strict,
            "timeout": self.timeout_for(request),
            "num_retries": 0,  # litellm's own retries off: tenacity owns transient retries
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        return kwargs

    def _cost(self, raw: Any) -> float:
        served = getattr(raw, "model", None)
        if served in self._unpriced:
            return 0.0
        try:
            return float(self._litellm.completion_cost(completion_response=raw) or 0.0)
        except Exception as exc:  # unmapped (local) models have no price: they cost nothing
            if "mapped yet" in str(exc):
                # and will not have one on the next reply either (the failed lookup costs ms a
                # call); any other failure is asked again, so a budget never stops counting
                self._unpriced.add(served)
            return 0.0

    def _cost_of_tokens(self, prompt_tokens: int, completion_tokens: int) -> float:
        if not (prompt_tokens or completion_tokens) or self._litellm is None:
            return 0.0
        try:
            p, c = self._litellm.cost_per_token(
                model=self.model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
            )
            return float(p or 0.0) + float(c or 0.0)
        except Exception:
            return 0.0

    async def complete(self, request: CallRequest, reserve: Reserve) -> BackendReply:
        client = self._instructor()  # before any slot is taken: litellm's import takes seconds
        kwargs = self._kwargs(request)
        failed = [0, 0]  # tokens spent by attempts that failed
        reserved = False  # the slot `attempt` took for the request instructor sends next

        async def before_request() -> None:  # instructor's every request: an attempt's first, a re-ask
            nonlocal reserved
            if not reserved:
                await reserve()
            reserved = False

        async def attempt() -> Any:
            nonlocal reserved
            if not reserved:
                # Before instructor starts: the wait for a rate-limit slot is not counted against its
                # re-asks' deadline (it re-asks no later than the timeout after it started).
                await reserve()
                reserved = True
            token = _BEFORE_REQUEST.set(before_request)
            try:
                return await client.create_with_completion(**kwargs)
            except Exception as exc:
                p, c = usage_of(exc)
                failed[0] += p
                failed[1] += c
                raise
            finally:
                _BEFORE_REQUEST.reset(token)

        try:
            obj, raw = await call_with_retries(attempt, self.policy)
        except RetriesExhausted as exc:
            failure = describe(exc.last, exc.attempts, self._secrets)
            raise CallFailed(
                redact(failure.kind, self._secrets),
                prompt_tokens=failed[0],
                completion_tokens=failed[1],
                cost_usd=self._cost_of_tokens(failed[0], failed[1]),
                timed_out=failure.kind.startswith("timeout"),
                unreachable=failure.kind.startswith("connection error"),
                refused=failure.refused,
            ) from None
        usage = getattr(raw, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = self._cost(raw) + self._cost_of_tokens(failed[0], failed[1])
        return BackendReply(obj, prompt_tokens + failed[0], completion_tokens + failed[1], cost)

    async def aclose(self) -> None:
        return None
