"""The LLM client every stage uses: one path for real models, the stub and recorded replies.

    client = make_client(settings.llm)          # None for model "none"
    reply = client.structured("reorder", payload, ReorderOut)            # or raises StageCallError
    replies = client.structured_many("reorder", payloads, ReorderOut)    # T | StageCallError each
    client.stats                                                         # pipeline.model.Stats

A call: the stage's prompt (`prompts/<stage>.md`) is the system message, the canonical JSON of the
payload the user message. Real models' replies are cached on disk; a hit makes no request. Every
failure comes back as a StageCallError with a one-line reason and no secrets in it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import UsageError
from ..model import Stats
from ..storage.gc_pause import freeze_at_exit
from .backends import Backend, CallRequest, StubBackend
from .cache import ReplyCache, default_cache_dir
from .canonical import canonical_json, sha256_hex
from .defaults import AMBIENT_CREDENTIALS, certainly_known, check_api_base, key_in_environment, precheck_model, provider_of
from .errors import BudgetExceeded, CallFailed, CallTimedOut, ServerUnreachable, StageCallError
from .litellm_backend import LiteLLMBackend, check_model, missing_credentials
from .meter import Meter, current as current_meter
from .modes import resolve_mode
from .prompts import Prompt, load_prompt
from .recordings import MockBackend, Recordings, recordings_dir
from .redact import clean_api_base, known_secrets, redact, redact_reply
from .retry import RetryPolicy

if TYPE_CHECKING:
    import asyncio

# asyncio is imported by the code that runs the event loop, not with this module: a stub's calls are
# answered on the caller's thread (`LLMClient._in_process`) and its plans never load asyncio (~50 ms).

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

_NANO = 1_000_000_000  # cost is summed in integer nano-dollars: the total does not depend on call order


class _LoopThread:
    """One event loop in a daemon thread, so sync callers (and callers inside another loop) can run
    the client's coroutines; litellm's HTTP sessions stay bound to this one loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, coro: Coroutine[Any, Any, R]) -> R:
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="memconsolidate-llm", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            loop = self._loop
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LLMClient's sync methods cannot be called from inside its own calls")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def close(self, last: Coroutine[Any, Any, Any] | None = None) -> None:
        """Run `last` (the backend's cleanup) on the loop, end its tasks, stop it."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            if last is not None:
                last.close()
            return
        import asyncio

        if last is not None:
            try:
                asyncio.run_coroutine_threadsafe(last, loop).result(timeout=5)
            except Exception:
                pass
        try:
            # litellm leaves background tasks (its logging worker) on the loop: end them first.
            asyncio.run_coroutine_threadsafe(_cancel_pending(), loop).result(timeout=5)
        except Exception:
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()


def _run_to_end(coro: Coroutine[Any, Any, R]) -> R:
    """The result of a coroutine that never waits (a call to an in-process backend), run here."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("an in-process call waited for something: it needs the event loop")


async def _cancel_pending() -> None:
    import asyncio

    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class LLMClient:
    def __init__(
        self,
        backend: Backend,
        *,
        model: str,
        mode: str,
        api_base: str | None = None,
        strict: bool = False,
        cache: ReplyCache | None = None,
        max_calls: int | None = None,
        max_cost: float | None = None,
        concurrency: int = 4,
        prompts_dir: str | Path | None = None,
        recorder: Recordings | None = None,
        secrets: tuple[str, ...] = (),
        params: dict[str, Any] | None = None,
        meter: Meter | None = None,
        prompt_set: str | None = None,
    ) -> None:
        self.backend = backend
        self.model = model
        self.mode = mode
        self.api_base = clean_api_base(api_base)
        self.strict = strict
        self.cache = cache
        self.max_calls = max_calls
        self.max_cost = max_cost
        self.concurrency = max(1, concurrency)
        self.prompts_dir = prompts_dir
        self.prompt_set = prompt_set or None
        self.recorder = recorder
        self._secrets = secrets
        self.params = public_params(params or {})
        self._prompts: dict[str, Prompt] = {}
        self._lock = threading.Lock()
        self._calls = 0
        self._hits = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._cost_nano = 0
        self._exhausted: BudgetExceeded | None = None
        self._unreachable: ServerUnreachable | None = None
        self._runner = _LoopThread()
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
        # a budget shared with other clients (a fleet of stores): the one given, or the installed one
        self.meter = meter if meter is not None else current_meter()

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, mode={self.mode!r}, cache={'on' if self.cache else 'off'})"

    # --- public ----------------------------------------------------------------------------------

    @property
    def stats(self) -> Stats:
        with self._lock:
            return Stats(
                llm_calls=self._calls,
                cache_hits=self._hits,
                prompt_tokens=self._prompt_tokens,
                completion_tokens=self._completion_tokens,
                cost_usd=self._cost_nano / _NANO,
            )

    @property
    def exhausted(self) -> BudgetExceeded | None:
        """The BudgetExceeded that stopped calls, once a budget is reached."""
        return self._exhausted

    @property
    def unreachable(self) -> ServerUnreachable | None:
        """Set once a call could not reach the server after its retries: the circuit is open and
        every later call of the run fails at once with this reason (cache hits are still served)."""
        return self._unreachable

    def structured(self, stage: str, payload: Any, schema: type[T]) -> T:
        """One validated reply of type `schema`; raises StageCallError (BudgetExceeded) on failure."""
        _check_schema(schema)
        if self._in_process():
            return _run_to_end(self.astructured(stage, payload, schema))
        return self._runner.run(self.astructured(stage, payload, schema))

    def structured_many(self, stage: str, payloads: Sequence[Any], schema: type[T],
                        on_result: Callable[[int], None] | None = None) -> list[T | StageCallError]:
        """One result per payload, in order: a reply, or the StageCallError it failed with.

        Runs up to `concurrency` calls at once (across every call of this client in flight, from
        any thread). Once a budget is reached, the calls not yet started come back as
        BudgetExceeded (cache hits are still served: they cost nothing). `on_result(n)` hears, on
        the client's own thread (the caller's, for the stub), that n results are in (a progress bar
        without waves).
        """
        _check_schema(schema)
        payloads = list(payloads)
        if not payloads:
            return []
        if self._in_process():
            return self._answer_here(stage, payloads, schema, on_result)
        return self._runner.run(self.astructured_many(stage, payloads, schema, on_result))

    def _in_process(self) -> bool:
        """Whether calls are answered on the caller's thread: the backend answers in-process and never
        waits (the stub), and no shared meter may ask a call to wait for its slot. An event loop would
        then only run one call after the other, as `_answer_here` does."""
        return bool(getattr(self.backend, "in_process", False)) and self.meter is None

    def _answer_here(self, stage: str, payloads: list[Any], schema: type[T],
                     on_result: Callable[[int], None] | None) -> list[T | StageCallError]:
        """`astructured_many` without the loop: the same calls in the same order (on the loop each of
        them also runs to its end before the next starts, nothing in it waits), each result or error
        in its place, `on_result` after each."""
        out: list[T | StageCallError] = []
        for finished, payload in enumerate(payloads, start=1):
            out.append(_run_to_end(self._result_of(stage, payload, schema, None)))
            if on_result is not None:
                on_result(finished)
        return out

    async def _result_of(self, stage: str, payload: Any, schema: type[T], gate: asyncio.Semaphore | None) -> T | StageCallError:
        """One call's reply, or the StageCallError it failed with (a batch's other calls go on)."""
        try:
            return await self._call(stage, payload, schema, gate)
        except StageCallError as exc:
            return exc

    async def astructured(self, stage: str, payload: Any, schema: type[T]) -> T:
        _check_schema(schema)
        return await self._call(stage, payload, schema, None)

    async def astructured_many(self, stage: str, payloads: Sequence[Any], schema: type[T],
                               on_result: Callable[[int], None] | None = None) -> list[T | StageCallError]:
        import asyncio

        _check_schema(schema)
        gate = self._gate()
        finished = 0

        async def one(payload: Any) -> T | StageCallError:
            nonlocal finished
            result = await self._result_of(stage, payload, schema, gate)
            finished += 1
            if on_result is not None:
                on_result(finished)
            return result

        return list(await asyncio.gather(*(one(p) for p in payloads)))

    def _gate(self) -> asyncio.Semaphore:
        """The one semaphore of this client on the running loop: `concurrency` requests in flight
        in all, whichever batch or stage they belong to."""
        import asyncio

        loop = asyncio.get_running_loop()
        with self._lock:
            if self._gates.get(loop) is None:
                self._gates[loop] = asyncio.Semaphore(self.concurrency)
            return self._gates[loop]

    def prompt(self, stage: str) -> Prompt:
        """The stage's prompt (loaded once); StageCallError naming the stage if it is missing."""
        cached = self._prompts.get(stage)
        if cached is None:
            cached = self._prompts[stage] = load_prompt(stage, self.prompts_dir, self.prompt_set)
        return cached

    def request(self, stage: str, payload: Any, schema: type[BaseModel]) -> CallRequest:
        """What would be sent for this call (prompt, canonical payload, schema hash)."""
        prompt = self.prompt(stage)
        try:
            payload_json = canonical_json(payload)
        except (TypeError, ValueError) as exc:
            raise StageCallError(stage, f"payload is not JSON-serializable: {type(exc).__name__}") from None
        return CallRequest(stage=stage, prompt=prompt, payload=payload, payload_json=payload_json, schema=schema)

    def cache_key(self, request: CallRequest) -> str:
        """sha256 of everything that changes the reply; nothing secret (the api_base is cleaned)."""
        return sha256_hex(
            canonical_json(
                {
                    "v": 1,
                    "stage": request.stage,
                    "prompt_version": request.prompt.version,
                    "prompt_sha": request.prompt.sha256,
                    "model": self.model,
                    "mode": self.mode,
                    "api_base": self.api_base,
                    "strict": self.strict,
                    "params": self.params,
                    "schema": request.schema.__name__,
                    "schema_sha": request.schema_sha,
                    "payload": request.payload_data,
                }
            )
        )

    def close(self) -> None:
        self._runner.close(self.backend.aclose())
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- one call --------------------------------------------------------------------------------

    async def _call(self, stage: str, payload: Any, schema: type[T], gate: asyncio.Semaphore | None) -> T:
        try:
            request = self.request(stage, payload, schema)
            key = self.cache_key(request) if self.cache is not None and self.backend.cacheable else None
            if key is not None:
                hit = self._cache_get(key, schema)
                if hit is not None:
                    with self._lock:
                        self._hits += 1
                    self._record(request, hit)
                    return hit
            if gate is None:
                reply = await self._send(request)
            else:
                async with gate:
                    reply = await self._send(request)
            # Before anything keeps or uses it: a server that echoes the key must not put it in the
            # cache, the recordings, the plan, a memory or a file name.
            reply = self._redacted(request.stage, reply)
            if key is not None and self.cache is not None:
                self.cache.set(key, reply.model_dump_json())
            self._record(request, reply)
            return reply  # type: ignore[return-value]
        except StageCallError:
            raise
        except Exception as exc:  # never let anything else out of the client
            message = " ".join(str(exc).split())[:160]
            raise StageCallError(stage, redact(f"internal error: {type(exc).__name__}: {message}", self._secrets)) from None

    async def _send(self, request: CallRequest) -> BaseModel:
        if self._unreachable is not None:
            raise ServerUnreachable(request.stage, f"not called: {self._unreachable.reason}")
        try:
            # The backend takes a slot for each request it sends, the retries and re-asks too.
            reply = await self.backend.complete(request, functools.partial(self._take_slot, request.stage))
        except CallFailed as failed:
            self._add_usage(failed.prompt_tokens, failed.completion_tokens, failed.cost_usd)
            reason = redact(failed.reason, self._secrets)
            if failed.refused:  # a retry or a re-ask over the budget: the call stops as the first would
                raise BudgetExceeded(request.stage, reason) from None
            if failed.unreachable:
                raise self._open_circuit(request.stage, reason) from None
            if self.recorder is not None and self.backend.cacheable:
                self.recorder.append(request, None, self.model, error=reason)
            raise (CallTimedOut if failed.timed_out else StageCallError)(request.stage, reason) from None
        self._add_usage(reply.prompt_tokens, reply.completion_tokens, reply.cost_usd)
        try:
            # The same object a cache hit would give: plain, validated, nothing attached.
            return request.schema.model_validate_json(reply.obj.model_dump_json())
        except ValidationError as exc:
            raise StageCallError(request.stage, f"reply invalid: {exc.error_count()} errors") from None

    def _open_circuit(self, stage: str, reason: str) -> ServerUnreachable:
        """The first unreachable-server failure stops all further calls, with one warning."""
        with self._lock:
            first = self._unreachable is None
            if self._unreachable is None:
                where = f" at {self.api_base}" if self.api_base else ""
                self._unreachable = ServerUnreachable(stage, f"{self.model}{where} unreachable ({reason})")
            opened = self._unreachable
        if first:
            print(f"warning: {opened.reason}: no more model calls in this run", file=sys.stderr, flush=True)
        return ServerUnreachable(stage, reason if first else f"not called: {opened.reason}")

    async def _take_slot(self, stage: str) -> None:
        """Reserve one request (see `_reserve`), then wait for the shared meter's rate-limit slot
        without blocking the loop (the stub's calls never wait: `_in_process`)."""
        delay = self._reserve(stage)
        if delay > 0:
            import asyncio

            await asyncio.sleep(delay)

    def _reserve(self, stage: str) -> float:
        """Count one request, or raise BudgetExceeded if it would go over `max_calls`/`max_cost` (or
        the meter's budget); the seconds the meter wants us to wait before sending."""
        delay = 0.0
        with self._lock:
            if self.max_calls is not None and self._calls >= self.max_calls:
                self._exhausted = self._exhausted or BudgetExceeded(stage, f"call budget reached (max_calls={self.max_calls})")
                raise BudgetExceeded(stage, self._exhausted.reason)
            if self.max_cost is not None and self._cost_nano / _NANO >= self.max_cost:
                self._exhausted = self._exhausted or BudgetExceeded(
                    stage, f"cost budget reached (${self._cost_nano / _NANO:.4f} of max_cost ${self.max_cost:g})"
                )
                raise BudgetExceeded(stage, self._exhausted.reason)
            if self.meter is not None:
                try:
                    delay = self.meter.reserve(stage)
                except BudgetExceeded as exc:
                    self._exhausted = self._exhausted or exc
                    raise BudgetExceeded(stage, self._exhausted.reason) from None
            self._calls += 1
        return delay

    def _add_usage(self, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        with self._lock:
            self._prompt_tokens += max(0, int(prompt_tokens))
            self._completion_tokens += max(0, int(completion_tokens))
            self._cost_nano += max(0, round(float(cost_usd) * _NANO))
        if self.meter is not None and cost_usd > 0:
            self.meter.spent(float(cost_usd))

    def _redacted(self, stage: str, reply: T) -> T:
        try:
            return redact_reply(reply, self._secrets)
        except ValueError as exc:
            raise StageCallError(stage, f"reply invalid: {exc}") from None

    def _cache_get(self, key: str, schema: type[T]) -> T | None:
        assert self.cache is not None
        text = self.cache.get(key)
        if text is None:
            return None
        try:
            hit = schema.model_validate_json(text)
        except ValidationError:
            self.cache.delete(key)  # written by an older schema or damaged: ask again
            return None
        try:
            clean = redact_reply(hit, self._secrets)
        except ValueError:
            self.cache.delete(key)
            return None
        if clean is not hit:
            self.cache.set(key, clean.model_dump_json())  # a row an older version cached with a secret in it
        return clean

    def _record(self, request: CallRequest, reply: BaseModel) -> None:
        if self.recorder is not None:
            self.recorder.append(request, reply, self.model)


def _check_schema(schema: Any) -> None:
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise TypeError(f"schema must be a pydantic model class, not {schema!r}")


_SECRET_PARAM = ("key", "token", "secret", "password", "header", "auth", "credential")


def public_params(params: dict[str, Any]) -> dict[str, Any]:
    """The extra litellm arguments that shape the reply (temperature, seed...), minus anything secret."""
    public: dict[str, Any] = {}
    for name, value in params.items():
        if any(word in name.lower() for word in _SECRET_PARAM):
            continue
        try:
            canonical_json(value)
        except (TypeError, ValueError):
            value = repr(type(value))  # an exception object for mock_response, say
        public[name] = value
    return public


def _local_api_key(model: str, api_base: str | None) -> str | None:
    # OpenAI-compatible local servers accept any key, but the openai SDK refuses to send none.
    if api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        return "no-key-needed"
    return None


def sampling_params(llm: Any) -> dict[str, Any]:
    """temperature and max_tokens as litellm takes them (both are part of the cache key)."""
    params: dict[str, Any] = {"temperature": float(getattr(llm, "temperature", 0.0) or 0.0)}
    max_tokens = getattr(llm, "max_tokens", None)
    if max_tokens:
        params["max_tokens"] = int(max_tokens)
    return params


def make_client(
    config: Any,
    *,
    record: bool = False,
    api_key: str | None = None,
    strict: bool | None = None,
    retry: RetryPolicy | None = None,
    prompts_dir: str | Path | None = None,
    recordings: str | Path | None = None,
    cache_dir: str | Path | None = None,
    litellm_kwargs: dict[str, Any] | None = None,
) -> LLMClient | None:
    """The client for `config` (an `LLMConfig`, or `Settings` whose `.llm` is used); None for model "none".

    - `record`: also append every reply (fresh or cached) to `<recordings>/<stage>.jsonl`, for the
      mock model to replay; not allowed with `mock` itself.
    - `api_key`: passed to litellm for this client only (else litellm reads the provider's usual
      environment variable). Never cached, recorded or shown.
    - `strict`: instructor's strict validation (default: `config.strict` if present, else False,
      which is kinder to small local models: "0.9" is accepted for a float).
    - `retry`: backoff settings; `max_attempts` always comes from `config.max_attempts`.
    - `prompts_dir`, `recordings`, `cache_dir`: override where prompts, recordings and the cache live.
    - `litellm_kwargs`: more arguments for every litellm call (temperature, seed, `mock_response`
      in tests); the non-secret ones are part of the cache key.
    """
    llm = getattr(config, "llm", config)
    model = str(getattr(llm, "model", "") or "").strip()
    if model in ("", "none"):
        return None
    try:
        api_base = check_api_base(getattr(llm, "api_base", None) or None)
        mode = resolve_mode(getattr(llm, "mode", None), model, api_base)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    policy = dataclasses.replace(retry or RetryPolicy(), max_attempts=max(1, int(llm.max_attempts)))
    use_strict = bool(strict if strict is not None else getattr(llm, "strict", False))
    rec_dir = recordings_dir(recordings)
    secrets = known_secrets(api_key)

    backend: Backend
    if model == "stub":
        backend = StubBackend()
    elif model == "mock":
        if record:
            raise UsageError("cannot record the mock model's replies: record with a real model (or the stub)")
        backend = MockBackend(Recordings(rec_dir))
    else:
        try:
            precheck_model(model, api_base)  # before the litellm import: a typo fails in a blink
            if not certainly_known(model):
                check_model(model, api_base)  # unsure without litellm: ask it now (imports it)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        key = api_key or _local_api_key(model, api_base)
        mocked = "mock_response" in (litellm_kwargs or {})  # litellm answers itself: no provider is called
        if (key is None and not api_base and not mocked and provider_of(model) not in AMBIENT_CREDENTIALS
                and not key_in_environment(model)):
            missing = missing_credentials(model)
            if missing:
                raise UsageError(f"model {model} needs credentials: set {' or '.join(missing)} in the environment")
        sampling = sampling_params(llm)
        litellm_kwargs = {**sampling, **(litellm_kwargs or {})}
        backend = LiteLLMBackend(
            model,
            mode=mode,
            api_base=api_base,
            api_key=key,
            timeout_s=float(llm.timeout_s),
            timeout_per_1k_chars_s=float(getattr(llm, "timeout_per_1k_chars_s", 0.0) or 0.0),
            max_reasks=int(llm.max_reasks),
            strict=use_strict,
            policy=policy,
            secrets=secrets,
            extra=litellm_kwargs,
        )

    cache: ReplyCache | None = None
    if backend.cacheable and not getattr(llm, "no_cache", False):
        folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir(getattr(llm, "cache_dir", None))
        try:
            cache = ReplyCache(folder)
        except OSError as exc:
            raise UsageError(f"cannot use cache folder {folder}: {exc.strerror or exc}") from None

    freeze_at_exit()  # what the stages build stays alive to the end (the CLI asks it for every command)
    return LLMClient(
        backend,
        model=model,
        mode=mode,
        api_base=api_base,
        strict=use_strict,
        cache=cache,
        max_calls=getattr(llm, "max_calls", None),
        max_cost=getattr(llm, "max_cost", None),
        concurrency=int(getattr(llm, "concurrency", None) or 4),
        prompts_dir=prompts_dir,
        recorder=Recordings(rec_dir) if record else None,
        secrets=secrets,
        params=litellm_kwargs if model not in ("stub", "mock") else None,
        prompt_set=getattr(llm, "prompt_set", None),
    )
