"""The reorder judge: same words in a different order — same meaning, or not?

Candidates are the deterministic pass's `reorder_candidate` groups (equal token sets, different
normalized text). Each other member is paired with its group's survivor; a pair the judge calls
"same" becomes a `merge_duplicate`. Role swaps and reversed orders stay. Pinned memories are never
superseded.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..kinds import FindingKind
from ..config import Settings
from ..llm import Handles, register_stub
from ..model import Corpus, Finding, Memory
from ..rules.duplicates import merge_action, survivor_key
from ..rules.outcome import Outcome
from ..rules.text import normalize
from .base import SHORT_TEXT, StageContext, ask_all, clip
from .model_text import model_text
from .heuristics.reorder import judge_reorder

NAME = "reorder"


class ReorderPair(BaseModel):
    handle: int
    a: str
    b: str


class ReorderInput(BaseModel):
    pairs: list[ReorderPair]


class ReorderDecision(BaseModel):
    handle: int = Field(description="The handle of the pair being judged, as offered.")
    reasoning: str = Field(description="One short sentence: what moved, and whether roles or order changed.", json_schema_extra=SHORT_TEXT)
    same_meaning: bool = Field(description="True only if both texts state exactly the same thing.")


class ReorderOutput(BaseModel):
    decisions: list[ReorderDecision]


@register_stub(NAME)
def stub(payload: ReorderInput) -> ReorderOutput:
    decisions = []
    for pair in payload.pairs:
        same, why = judge_reorder(pair.a, pair.b)
        decisions.append(ReorderDecision(handle=pair.handle, reasoning=why, same_meaning=same))
    return ReorderOutput(decisions=decisions)


def candidate_pairs(corpus: Corpus, outcome: Outcome, by_key: dict[str, Memory] | None = None) -> list[tuple[Memory, Memory]]:
    """(survivor, other) for every reorder group, in plan order. `by_key`: the corpus's memories by
    key when the caller has them already (the stage context's, made once a run)."""
    if by_key is None:
        by_key = corpus.by_key()
    pairs: list[tuple[Memory, Memory]] = []
    for f in outcome.findings:
        if f.kind != FindingKind.REORDER_CANDIDATE:
            continue
        members = sorted((by_key[k] for k in f.targets if k in by_key), key=survivor_key)
        pairs.extend((members[0], m) for m in members[1:])
    return pairs


def _pair_key(pair: tuple[Memory, Memory]) -> str:
    return f"{pair[0].key}\x00{pair[1].key}"


def make_payload(handles: Handles, chunk: list[tuple[Memory, Memory]]) -> ReorderInput:
    return ReorderInput(pairs=[ReorderPair(handle=handles.handle(_pair_key(p)), a=clip(p[0].body), b=clip(p[1].body)) for p in chunk])


def needs_trust(ctx: StageContext, survivor: Memory, retired: list[Memory]) -> str | None:
    """Why a model's "same meaning" may not retire these memories by itself, or None.

    Texts whose normalized forms differ are never merged by rules; a model's word alone (a real
    model or its recorded replies, which a memory's own text can talk into "same") retires them
    only under `--trust-model`. The stub is this tool's own deterministic heuristic, scored by the
    evals like a rule, and keeps acting on its verdicts.
    """
    if ctx.model_label == "stub" or ctx.settings.llm.trust_model:
        return None
    if all(normalize(m.body) == normalize(survivor.body) for m in retired):
        return None
    return "the texts differ and only the model says they mean the same: apply it with --select, or trust the model (--trust-model)"


class ReorderStage:
    name = NAME

    def applies(self, corpus: Corpus, settings: Settings) -> bool:
        return True

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome:
        by_key = ctx.by_key
        pairs = candidate_pairs(ctx.corpus, outcome, by_key)
        if not pairs:
            return outcome
        answers = ask_all(ctx, NAME, pairs, _pair_key, make_payload, ReorderOutput, lambda r: r.decisions)
        same: dict[str, list[str]] = {}
        reasons: dict[str, str] = {}
        for pair_key, d in sorted(answers.items()):
            survivor, other = pair_key.split("\x00")
            if d.same_meaning:
                same.setdefault(survivor, []).append(other)
                reasons[other] = model_text(d.reasoning, limit=160)
        out = Outcome(list(outcome.actions), list(outcome.findings))
        for survivor, others in sorted(same.items()):
            retired = sorted(k for k in set(others) if not by_key[k].pinned)
            for k in sorted(set(others) - set(retired)):
                out.findings.append(Finding(kind="pinned_skipped", targets=[k], reason=f"pinned: kept although the reorder judge found it means the same as {survivor}", source=ctx.source(NAME)))
            if retired:
                why = "; ".join(reasons[k] for k in retired)
                ask = needs_trust(ctx, by_key[survivor], [by_key[k] for k in retired])
                out.actions.append(merge_action(
                    [by_key[k] for k in (survivor, *retired)],
                    f"same words in another order, same meaning (reorder judge: {why})" + (f"; {ask}" if ask else ""),
                    source=ctx.source(NAME), needs_user=bool(ask),
                ))
        return out


STAGE = ReorderStage()
