"""What every LLM stage shares: its context, its place in the run, and the batching of calls.

A stage is a pure function `Outcome -> Outcome` given a context: it chooses candidates by code,
asks the model through the one client, checks every reply against what it offered and against the
guards, and returns the outcome with its proposals added. If any call fails the runner keeps the
outcome from before the stage (its proposals are dropped) and records why in `errors`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Protocol, Sequence, TypeVar

from pydantic import BaseModel

from ..text.counts import plural
from ..kinds import ActionKind
from ..text.truncate import clip as clip_text
from ..config import Settings
from ..model import Corpus, Memory
from ..rules.outcome import Outcome

T = TypeVar("T", bound=BaseModel)

# The schema's bound on a reply's free-text fields (reasoning, explanation). Only a hint in the JSON
# schema: a grammar-constrained local server (llama.cpp) stops the text there, so a small model
# cannot spend a minute writing a paragraph nobody reads (the stages shorten what they show to
# 160-300 characters anyway); a hosted model that writes more is still valid, since pydantic does
# not check `json_schema_extra`.
SHORT_TEXT: dict[str, Any] = {"maxLength": 120}


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
    # Problems that do not fail the stage (items the model left unanswered): the runner adds them
    # to the plan's `errors` under the stage's name.
    notes: list[str] = field(default_factory=list)


    @property
    def model_label(self) -> str:
        return "stub" if self.settings.llm.model == "stub" else "llm"

    def source(self, stage: str) -> str:
        return f"{self.model_label}:{stage}"

    @cached_property
    def by_key(self) -> dict[str, Memory]:
        """The corpus's memories by key, made once for all the stages of a run (they never change
        the corpus; on a bank of 50k memories each made its own)."""
        return self.corpus.by_key()


class Stage(Protocol):
    @property
    def name(self) -> str: ...  # read only: the runner's entries (`StageEntry`) are frozen

    def applies(self, corpus: Corpus, settings: Settings) -> bool: ...

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome: ...


def batched(items: Sequence[Any], size: int, new_batch_at: Sequence[int] = ()) -> list[list[Any]]:
    """`items` in batches of `size`; a batch also starts at each place of `new_batch_at`, so the
    items before it and those after are batched as if asked apart."""
    size = max(1, size)
    bounds = [0, *sorted(b for b in set(new_batch_at) if 0 < b < len(items)), len(items)]
    return [list(items[i : min(i + size, end)]) for start, end in zip(bounds, bounds[1:]) for i in range(start, end, size)]


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
    notes: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    new_batch_at: Sequence[int] = (),
) -> tuple[dict[str, Any], list[str]]:
    """Ask about `items` in batches, each with its own handles 1..n; {key: decision} and errors.

    Every decision's `handle` is checked against what its batch offered: a reply that names another
    handle fails that batch (UnknownHandle). The first decision for a handle counts. A batch that
    times out is asked again in two halves (down to one item), not resent whole. Items a reply
    leaves out are reported, in `notes` when given (the stage's other answers stand), else in the
    errors. (They are not re-asked: a smaller batch is a question the mock's recordings never saw.)
    `progress` hears (batches answered, batches asked) as they come back. A batch also starts at
    each place of `new_batch_at` (`batched`).
    """
    from ..llm import StageCallError
    from ..llm.errors import CallTimedOut

    answers: dict[str, Any] = {}
    errors: list[str] = []
    pending = batched(items, batch_size, new_batch_at)
    asked = done = 0
    while pending:
        later: list[list[K]] = []
        asked += len(pending)
        for chunk, reply, handles in _ask_chunks(client, stage, pending, key_of, make_payload, schema, progress, done, asked):
            if isinstance(reply, CallTimedOut) and len(chunk) > 1:
                half = (len(chunk) + 1) // 2
                later += [chunk[:half], chunk[half:]]
                continue
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
            missing = [i for i in chunk if key_of(i) not in answers]
            if missing:
                (notes if notes is not None else errors).append(
                    f"the model left {len(missing)} of {plural(len(chunk), 'item')} unanswered: no proposal for them"
                )
        done += len(pending)
        pending = later
    return answers, errors


def _ask_chunks(client: Any, stage: str, pending: list[list[K]], key_of: Callable[[K], str],
                make_payload: Callable[[Any, list[K]], BaseModel], schema: type[T],
                progress: Callable[[int, int], None] | None = None, done: int = 0,
                asked: int = 0) -> list[tuple[list[K], Any, Any]]:
    """One call per chunk (run together by the client), each with handles 1..n of its own. With
    `progress`, the client reports each reply as it comes (`concurrency` calls stay in flight);
    a client that cannot (a test's) is asked in waves of as many calls as run at once."""
    from ..llm import Handles, LLMClient

    handle_sets = [Handles([key_of(i) for i in chunk], stage=stage) for chunk in pending]
    payloads = [make_payload(h, chunk) for h, chunk in zip(handle_sets, pending)]
    if progress is None:
        replies = client.structured_many(stage, payloads, schema) if payloads else []
    elif isinstance(client, LLMClient):
        progress(done, asked)
        replies = client.structured_many(stage, payloads, schema, on_result=lambda n: progress(done + n, asked)) if payloads else []
    else:
        wave = max(1, int(getattr(client, "concurrency", 4) or 1))
        replies = []
        progress(done, asked)
        for start in range(0, len(payloads), wave):
            replies.extend(client.structured_many(stage, payloads[start : start + wave], schema))
            progress(done + len(replies), asked)
    return list(zip(pending, replies, handle_sets))


def ask_all(ctx: StageContext, stage: str, items: Sequence[K], key_of: Callable[[K], str],
            make_payload: Callable[[Any, list[K]], BaseModel], schema: type[T],
            decisions: Callable[[T], list[Any]], new_batch_at: Sequence[int] = ()) -> dict[str, Any]:
    """`ask_in_batches` for a stage: any failed batch fails the stage (its proposals are dropped)."""
    from ..llm import StageCallError

    answers, errors = ask_in_batches(ctx.client, stage, items, key_of, ctx.settings.llm.batch_size or 1, make_payload, schema,
                                     decisions, ctx.notes, ctx.progress, new_batch_at)
    if errors:
        raise StageCallError(stage, errors[0] + (f" (and {plural(len(errors) - 1, 'more batch error')})" if len(errors) > 1 else ""))
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
