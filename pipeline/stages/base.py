"""What every LLM stage shares: its context, its place in the run, and the batching of calls.

A stage is a pure function `Outcome -> Outcome` given a context: it chooses candidates by code,
asks the model through the one client, checks every reply against what it offered and against the
guards, and returns the outcome with its proposals added. If any call fails the runner keeps the
outcome from before the stage (its proposals are dropped) and records why in `errors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, TypeVar

from pydantic import BaseModel

from ..kinds import ActionKind
from ..text.truncate import clip as clip_text
from ..config import Settings
from ..model import Corpus, Memory
from ..rules.outcome import Outcome

T = TypeVar("T", bound=BaseModel)


@dataclass
class StageProgress:
    """Where a stage is, for a progress bar: batches answered of those asked, the client's counters."""

    stage: str
    done: int
    total: int  # 0 until the stage has asked (or when it asks one thing at a time)
    calls: int
    cache_hits: int
    finished: bool = False
    failed: bool = False


@dataclass
class StageContext:
    corpus: Corpus
    settings: Settings
    client: Any  # pipeline.llm.LLMClient
    # Hears (batches answered, batches asked) as a stage's batches come back; set by the runner
    # only when someone watches (a terminal), so without it the calls go out exactly as before.
    progress: Callable[[int, int], None] | None = None

    @property
    def model_label(self) -> str:
        return "stub" if self.settings.llm.model == "stub" else "llm"

    def source(self, stage: str) -> str:
        return f"{self.model_label}:{stage}"

    def memories(self) -> dict[str, Memory]:
        return self.corpus.by_key()


class Stage(Protocol):
    name: str

    def applies(self, corpus: Corpus, settings: Settings) -> bool: ...

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome: ...


def batched(items: Sequence[Any], size: int) -> list[list[Any]]:
    size = max(1, size)
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


K = TypeVar("K")


def ask_in_batches(
    client: Any,
    stage: str,
    items: Sequence[K],
    key_of: Callable[[K], str],
    batch_size: int,
    make_payload: Callable[[Any, list[K]], BaseModel],
    schema: type[T],
    decisions: Callable[[T], list[Any]],
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Ask about `items` in batches, each with its own handles 1..n; {key: decision} and errors.

    Every decision's `handle` is checked against what its batch offered: a reply that names another
    handle fails that batch (UnknownHandle). The first decision for a handle counts.
    """
    from ..llm import Handles, StageCallError

    chunks = batched(items, batch_size)
    handle_sets = [Handles([key_of(i) for i in chunk], stage=stage) for chunk in chunks]
    payloads = [make_payload(h, chunk) for h, chunk in zip(handle_sets, chunks)]
    if progress is None:
        replies = client.structured_many(stage, payloads, schema) if payloads else []
    else:  # in waves of as many calls as run at once, to report between them
        wave = max(1, int(getattr(client, "concurrency", 4)))
        replies = []
        progress(0, len(payloads))
        for start in range(0, len(payloads), wave):
            replies.extend(client.structured_many(stage, payloads[start : start + wave], schema))
            progress(len(replies), len(payloads))
    answers: dict[str, Any] = {}
    errors: list[str] = []
    for handles, reply in zip(handle_sets, replies):
        if isinstance(reply, StageCallError):
            errors.append(reply.reason)
            continue
        try:
            got = [(handles.key(d.handle), d) for d in decisions(reply)]
        except StageCallError as exc:
            errors.append(exc.reason)
            continue
        for key, d in got:
            answers.setdefault(key, d)
    return answers, errors


def ask_all(ctx: StageContext, stage: str, items: Sequence[K], key_of: Callable[[K], str],
            make_payload: Callable[[Any, list[K]], BaseModel], schema: type[T],
            decisions: Callable[[T], list[Any]]) -> dict[str, Any]:
    """`ask_in_batches` for a stage: any failed batch fails the stage (its proposals are dropped)."""
    from ..llm import StageCallError

    answers, errors = ask_in_batches(ctx.client, stage, items, key_of, ctx.settings.llm.batch_size, make_payload, schema,
                                     decisions, ctx.progress)
    if errors:
        raise StageCallError(stage, errors[0] + (f" (and {len(errors) - 1} more batch error(s))" if len(errors) > 1 else ""))
    return answers


def retired_keys(outcome: Outcome) -> set[str]:
    """Memories an earlier proposal already retires: later stages leave them alone."""
    gone: set[str] = set()
    for a in outcome.actions:
        if a.kind == ActionKind.MERGE_DUPLICATE:
            gone.update(t for t in a.targets if t != a.survivor)
        elif a.kind in (ActionKind.PRUNE_STALE, ActionKind.ARCHIVE):
            gone.update(a.targets)
    return gone


def clip(text: str, limit: int = 1200) -> str:
    """Memory text as shown to the model: bounded, whitespace-folded at the ends."""
    return clip_text(text.strip(), limit)


Guard = Callable[[Memory], str | None]
