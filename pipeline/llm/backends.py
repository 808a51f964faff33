"""What the client hands a backend and gets back. Backends: stub, mock (replay), litellm."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from pydantic import BaseModel

from .canonical import schema_hash
from .prompts import Prompt
from .stub import run_stub


@dataclass(frozen=True)
class CallRequest:
    stage: str
    prompt: Prompt
    payload: Any  # as the stage passed it (the stub gets this)
    payload_json: str  # canonical JSON: the user message
    schema: type[BaseModel]

    # Made when first asked, by the cache key and the recordings: the stub's calls never ask.
    @cached_property
    def payload_data(self) -> Any:
        """The payload as plain JSON data (`payload_json` read back)."""
        return json.loads(self.payload_json)

    @cached_property
    def schema_sha(self) -> str:
        return schema_hash(self.schema)

    @property
    def messages(self) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.prompt.text},
            {"role": "user", "content": self.payload_json},
        ]


@dataclass(frozen=True)
class BackendReply:
    obj: BaseModel
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


# The client's budget for one request: counts it against `max_calls`, `max_cost` and the shared
# meter, waits (asyncio) for the meter's rate-limit slot, or raises BudgetExceeded.
Reserve = Callable[[], Awaitable[None]]


class Backend(Protocol):
    name: str
    cacheable: bool  # real models are cached; the stub and the mock are free and deterministic

    async def complete(self, request: CallRequest, reserve: Reserve) -> BackendReply:
        """The validated reply, or raises `errors.CallFailed` with a short reason. `reserve()` is
        awaited before every request sent for it (its retries and re-asks too), and a request it
        refuses (BudgetExceeded) is not sent."""
        ...

    async def aclose(self) -> None: ...


class StubBackend:
    name = "stub"
    cacheable = False
    in_process = True  # answers from the payload alone, never waits: no event loop needed (see client)

    async def complete(self, request: CallRequest, reserve: Reserve) -> BackendReply:
        await reserve()
        return BackendReply(run_stub(request.stage, request.payload, request.schema))

    async def aclose(self) -> None:
        return None
