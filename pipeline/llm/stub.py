"""The `stub` model: deterministic offline answers computed by the package, one function per stage.

Stages register theirs next to the stage code:

    @register_stub("reorder")
    def reorder_stub(payload: ReorderInput) -> ReorderOutput: ...

The function gets the payload exactly as the stage passed it and returns an instance of the
stage's output schema (a dict is validated into it). No network, no cache, no tokens, no cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import CallFailed
from .retry import _validation_fields

StubFn = Callable[[Any], Any]
STUBS: dict[str, StubFn] = {}

F = TypeVar("F", bound=StubFn)


def register_stub(stage: str) -> Callable[[F], F]:
    """Decorator: `fn(payload) -> schema instance` answers `stage` when the model is `stub`."""

    def decorate(fn: F) -> F:
        STUBS[stage] = fn
        return fn

    return decorate


def run_stub(stage: str, payload: Any, schema: type[BaseModel]) -> BaseModel:
    fn = STUBS.get(stage)
    if fn is None:
        raise CallFailed(f"no stub for stage {stage}")
    try:
        result = fn(payload)
    except Exception as exc:  # a stub bug must not take the run down: the stage fails soft
        raise CallFailed(f"stub failed: {type(exc).__name__}: {' '.join(str(exc).split())[:160]}") from exc
    if isinstance(result, schema):
        return result
    try:
        data = result.model_dump() if isinstance(result, BaseModel) else result
        return schema.model_validate(data)
    except ValidationError as exc:
        raise CallFailed(f"stub reply invalid: {_validation_fields(exc)}") from exc
