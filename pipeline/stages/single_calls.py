"""One candidate per call, for the stages whose candidates are large (a group of memories, a body
to split, a file to compress): the same handle checks and fail-soft as `ask_all`."""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from pydantic import BaseModel

from ..text.counts import plural
from ..text.truncate import shorten
from .base import StageContext, ask_in_batches

K = TypeVar("K")
T = TypeVar("T", bound=BaseModel)


def ask_each(ctx: StageContext, stage: str, items: Sequence[K], key_of: Callable[[K], str],
             make_payload: Callable[[Any, list[K]], BaseModel], schema: type[T],
             decisions: Callable[[T], list[Any]]) -> dict[str, Any]:
    """{key: decision} with one item per call; any failed call fails the stage (StageCallError)."""
    from ..llm import StageCallError

    answers, errors = ask_in_batches(ctx.client, stage, items, key_of, 1, make_payload, schema, decisions, ctx.notes)
    if errors:
        raise StageCallError(stage, errors[0] + (f" (and {plural(len(errors) - 1, 'more call error')})" if len(errors) > 1 else ""))
    return answers


def one_line(text: str | None, limit: int) -> str:
    """Model text for a single-line field: whitespace folded, bounded at a word."""
    return shorten(" ".join((text or "").split()), limit, word_after=1)
