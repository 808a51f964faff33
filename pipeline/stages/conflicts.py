"""The conflicts stage: do two memories on the same subject contradict each other?

Candidates are same-group pairs sharing enough significant words or tags (an inverted index, never
all pairs), excluding duplicates and memories already being retired. Several pairs go in one call.
A contradiction becomes a `conflict` action that always needs the user; it is never auto-resolved.
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter, methodcaller, not_
from typing import Literal

from pydantic import BaseModel, Field

from ..text.counts import plural
from ..config import Settings
from ..llm import Handles, register_stub
from ..actions import ConflictAction
from ..kinds import FindingKind
from ..model import Corpus, Finding, Memory
from ..rules.outcome import Outcome
from ..rules.pair_windows import Offer
from ..rules.subject_pairs import SubjectPair, pairs_to_offer
from .base import SHORT_TEXT, StageContext, ask_all, clip, retired_keys
from .heuristics.conflicts import clash_clauses, judge_conflict
from .model_text import model_text

NAME = "conflicts"
Kind = Literal["opposing_advice", "incompatible_approach", "factual_disagreement", "superseded", "none"]
Option = Literal["keep_a", "keep_b", "merge", "keep_both_with_note"]
STRONG_TYPES = {"core"}
WEAK_TYPES = {"idea", "learning"}


class ConflictPair(BaseModel):
    handle: int
    a: str
    b: str
    a_type: str | None = None
    b_type: str | None = None


class ConflictInput(BaseModel):
    pairs: list[ConflictPair]


class ConflictDecision(BaseModel):
    handle: int = Field(description="The handle of the pair being judged, as offered.")
    reasoning: str = Field(description="One short sentence of reasoning.", json_schema_extra=SHORT_TEXT)
    contradiction: bool = Field(description="True only if both cannot be followed or be true at once.")
    kind: Kind = Field(description="The kind of contradiction, or 'none'.")
    explanation: str = Field(default="", description="One line a person can read: what contradicts what.", json_schema_extra=SHORT_TEXT)
    options: list[Option] = Field(default_factory=list, description="Sensible resolutions.")


class ConflictOutput(BaseModel):
    decisions: list[ConflictDecision]


@register_stub(NAME)
def stub(payload: ConflictInput) -> ConflictOutput:
    out = []
    for p in payload.pairs:
        yes, kind, why = judge_conflict(p.a, p.b)
        options: list[Option] = ["keep_a", "keep_b", "keep_both_with_note"] if yes else []
        out.append(ConflictDecision(handle=p.handle, reasoning=why, contradiction=yes, kind=kind if yes else "none", explanation=why, options=options))
    return ConflictOutput(decisions=out)


def candidate_pairs(corpus: Corpus, outcome: Outcome, limit: int, turn: int = 0) -> Offer[SubjectPair]:
    """The same-subject pairs of the live memories this run offers the judge: all of them, or when
    there are more than `limit`, the strongest and the others' window `turn` picks (pair_windows.py)."""
    gone = retired_keys(outcome)
    # By C-level maps over the memories: a bank's are tens of thousands.
    live = list(compress(corpus.memories, map(not_, map(gone.__contains__, map(attrgetter("key"), corpus.memories)))))
    # Volumes of one consolidated topic complement each other by design: never judged as a pair.
    topic_of = list(map(methodcaller("get", "consolidation_topic"), map(attrgetter("extra"), live)))
    topics = {m.key: topic for m, topic in zip(live, topic_of) if topic} if any(topic_of) else {}
    same_topic = (lambda a, b: a in topics and topics[a] == topics.get(b)) if topics else None
    return pairs_to_offer(live, limit, turn, skip=same_topic)


def statement(m: Memory) -> str:
    """What a memory asserts, as shown to the judge: its title (the claim in one line) first."""
    title = " ".join(m.title.split())
    return f"{title}.\n\n{m.body.strip()}" if title else m.body


def _pair_key(p: SubjectPair) -> str:
    return f"{p.a}\x00{p.b}"


def _type_note(a: Memory, b: Memory) -> str:
    for strong, weak in ((a, b), (b, a)):
        if strong.type in STRONG_TYPES and weak.type in WEAK_TYPES:
            return f" — a {weak.type} memory contradicts a {strong.type} memory ({strong.key})"
    return ""


class ConflictStage:
    name = NAME

    def applies(self, corpus: Corpus, settings: Settings) -> bool:
        return True

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome:
        # The run's date turns the window: the next day's run offers the next pairs.
        offer = candidate_pairs(ctx.corpus, outcome, ctx.settings.llm.max_pairs_per_stage, turn=ctx.settings.now.toordinal())
        pairs = offer.pairs
        out = Outcome(list(outcome.actions), list(outcome.findings))
        if offer.waiting:
            out.findings.append(capped_finding(ctx, offer))
        if not pairs:
            return out
        by_key = ctx.by_key

        def make_payload(handles: Handles, chunk: list[SubjectPair]) -> ConflictInput:
            return ConflictInput(pairs=[
                ConflictPair(handle=handles.handle(_pair_key(p)), a=clip(statement(by_key[p.a])), b=clip(statement(by_key[p.b])),
                             a_type=by_key[p.a].type, b_type=by_key[p.b].type)
                for p in chunk
            ])

        # The window's pairs in batches of their own: the strongest's batches stay as they were.
        answers = ask_all(ctx, NAME, pairs, _pair_key, make_payload, ConflictOutput, lambda r: r.decisions,
                          new_batch_at=[len(offer.strongest)])
        for pair_key, d in sorted(answers.items()):
            if d.contradiction:
                a_key, b_key = pair_key.split("\x00")
                a, b = by_key[a_key], by_key[b_key]
                explanation = model_text(d.explanation or d.reasoning, limit=300)
                clash = [model_text(c, limit=200) for c in clash_clauses(statement(a), statement(b))]
                out.actions.append(
                    ConflictAction(
                        targets=[a_key, b_key],
                        needs_user=True,
                        reason=f"{explanation}: \u201c{clash[0]}\u201d vs \u201c{clash[1]}\u201d{_type_note(a, b)}",
                        clauses=clash,
                        source=ctx.source(NAME),
                        conflict_kind=d.kind if d.kind != "none" else "opposing_advice",
                        resolution_options=sorted(set(d.options)) or ["keep_a", "keep_b", "merge", "keep_both_with_note"],
                    )
                )
        return out


def capped_finding(ctx: StageContext, offer: Offer[SubjectPair]) -> Finding:
    """What a run that could not ask about every pair says: what it asks about, and when the rest
    come (rules/pair_windows.py)."""
    limit = ctx.settings.llm.max_pairs_per_stage
    pairs = plural(offer.found, "same-subject pair")
    if not offer.windows:  # a limit of 0
        reason = f"conflicts: none of {pairs} asked about (llm.max_pairs_per_stage = {limit})"
    else:
        strongest = {0: "", 1: "the strongest pair and "}.get(len(offer.strongest), f"the {len(offer.strongest)} strongest and ")
        others = " of the others" if offer.strongest else ""
        reason = (f"conflicts: {offer.waiting} of {pairs} not asked about in this run (llm.max_pairs_per_stage = {limit}): "
                  f"it asks about {strongest}{plural(len(offer.turning), 'pair')} of window {offer.window + 1} of {offer.windows}"
                  f"{others}; the window turns with the run's date, so daily runs reach every pair within {offer.windows} days "
                  f"while the pairs found stay the same")
    return Finding(kind=FindingKind.CAPPED, targets=[], source=ctx.source(NAME), reason=reason)


STAGE = ConflictStage()
