"""Ask a stage's model about eval cases exactly the way the stage asks in production: the same
prompt, schema, batching and per-batch handles, through the same client. A batch that fails leaves
its cases without an answer (they count as wrong)."""

from __future__ import annotations

from typing import Any, Callable

from ..stages.base import ask_in_batches

Answers = tuple[dict[str, Any], list[str]]


def _ask(client: Any, stage: str, cases: list[dict[str, Any]], batch_size: int,
         make_payload: Callable, schema: type, decide: Callable[[Any], Any]) -> Answers:
    answers, errors = ask_in_batches(client, stage, cases, lambda c: c["id"], batch_size, make_payload, schema, lambda r: r.decisions)
    return {k: decide(d) for k, d in answers.items()}, sorted(set(errors))


def judge_reorder(client: Any, cases: list[dict[str, Any]], batch_size: int) -> Answers:
    from ..stages.reorder import NAME, ReorderInput, ReorderOutput, ReorderPair

    def payload(h, chunk):
        return ReorderInput(pairs=[ReorderPair(handle=h.handle(c["id"]), a=c["a"], b=c["b"]) for c in chunk])

    return _ask(client, NAME, cases, batch_size, payload, ReorderOutput, lambda d: d.same_meaning)


def judge_conflict(client: Any, cases: list[dict[str, Any]], batch_size: int) -> Answers:
    from ..stages.conflicts import NAME, ConflictInput, ConflictOutput, ConflictPair

    def payload(h, chunk):
        return ConflictInput(pairs=[ConflictPair(handle=h.handle(c["id"]), a=c["a"], b=c["b"]) for c in chunk])

    return _ask(client, NAME, cases, batch_size, payload, ConflictOutput, lambda d: d.contradiction)


def judge_rule(client: Any, cases: list[dict[str, Any]], batch_size: int) -> Answers:
    from ..stages.standing_rules import NAME, RuleInput, RuleItem, RuleOutput, valid_rule

    def payload(h, chunk):
        return RuleInput(items=[RuleItem(handle=h.handle(c["id"]), text=c["text"]) for c in chunk])

    # A "rule" without a usable one-line rule text grounded in the memory is not promoted in
    # production either.
    texts = {c["id"]: c["text"] for c in cases}
    answers, errors = _ask(client, NAME, cases, batch_size, payload, RuleOutput, lambda d: d)
    return {k: bool(d.standing_rule and valid_rule(d.rule, texts[k])) for k, d in answers.items()}, errors


BINARY_JUDGES = {"reorder": judge_reorder, "conflict": judge_conflict, "rule": judge_rule}
