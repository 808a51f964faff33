"""The compress stage (CRUX seed 000, step 8): write the `.memory.crux.md` twin of a large memory.

Candidates (crux, when `flags.enableMemoryCompression` is on):
- `.memory.md` files with at least `compressionMinLines` lines and no `.memory.crux.md` twin that no
  earlier proposal touches (members of a consolidation are compressed as part of it);
- the outputs of this run's consolidations and volume rebalances (seed step 13: a merged file is
  compressed when compression is on), whatever their size.

The model writes the twin in the store's own notation (a few of its twins are shown as examples),
aiming at `compressionTarget` % of the original and within `maxMemorySize` (`maxConsolidatedSize`
for consolidated files). Code checks it (`crux_notation.twin_problems`) and computes the front
matter. A twin that fails the checks is not proposed: a `manual_review` finding says why (a twin
that only fails to be smaller than its original is dropped quietly: nothing would be gained).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from ..text.counts import plural
from ..kinds import ActionKind
from ..config import Settings
from ..layouts.registry import layout_of
from ..llm import Handles, register_stub
from ..actions import CompressAction, outputs_of
from ..model import Corpus, Finding
from ..rules.outcome import Outcome
from ..layouts.crux.members import is_archived
from ..layouts.crux.reader import PLAIN_SUFFIX, body_size, twin_path
from .base import StageContext
from .consolidate.fields import plain, short_hash
from .consolidate.groups import busy_keys
from .crux_notation import stub_twin, tokens_estimate, twin_frontmatter, twin_problems
from .model_text import model_text
from .single_calls import ask_each

NAME = "compress"
EXAMPLES = 2
EXAMPLE_CHARS = 1500


class CompressItem(BaseModel):
    handle: int
    title: str
    unit: str
    size: int = Field(description="The original's size in `unit`.")
    target_size: int = Field(description="Aim for about this size.")
    max_size: int = Field(description="The twin must not be larger than this.")
    body: str


class CompressInput(BaseModel):
    examples: list[str] = Field(default_factory=list, description="Twins already in this store, for the notation.")
    items: list[CompressItem]


class CompressDecision(BaseModel):
    handle: int = Field(description="The handle of the memory, as offered.")
    reasoning: str = Field(description="One short sentence: what was compacted and what was kept.")
    twin: str = Field(description="The compressed body: one ⟦CRUX:memory … ⟧ block.")


class CompressOutput(BaseModel):
    decisions: list[CompressDecision]


@register_stub(NAME)
def stub(payload: CompressInput) -> CompressOutput:
    return CompressOutput(decisions=[
        CompressDecision(handle=i.handle, reasoning="headings as block labels, every line kept, glue words as symbols",
                         twin=stub_twin(i.body))
        for i in payload.items
    ])


@dataclass
class Candidate:
    key: str  # the file compressed: a memory's key, or the path a consolidation will write
    path: str
    title: str
    meta: dict[str, Any]
    body: str
    cap: int
    why: str


def _from_memories(corpus: Corpus, outcome: Outcome, settings: Settings) -> list[Candidate]:
    crux = settings.crux
    busy = busy_keys(corpus, outcome)
    out = []
    for m in corpus.memories:
        if (not m.key.endswith(PLAIN_SUFFIX) or m.extra.get("twin") or m.key in busy or m.pinned
                or m.extra.get("merged_into") or is_archived(m)):
            continue
        lines = len(m.body.splitlines())
        if lines < crux.compressionMinLines:
            continue
        out.append(Candidate(key=m.key, path=m.key, title=m.title or m.slug, meta=plain(m.meta), body=m.body,
                             cap=crux.maxMemorySize, why=f"{lines} lines ≥ compressionMinLines {crux.compressionMinLines}"))
    return out


def _from_consolidations(outcome: Outcome, settings: Settings) -> list[Candidate]:
    out = []
    for a in outcome.actions:
        if a.kind not in (ActionKind.CONSOLIDATE, ActionKind.REBALANCE_VOLUMES):
            continue
        for o in outputs_of(a):
            if not str(o.get("path", "")).endswith(PLAIN_SUFFIX):
                continue
            fm = o.get("frontmatter") or {}
            out.append(Candidate(key=o["path"], path=o["path"], title=str(fm.get("title") or ""), meta=dict(fm), body=o["body"],
                                 cap=settings.crux.maxConsolidatedSize, why=f"written by the {a.kind} of {', '.join(a.targets)}"))
    return out


def _examples(corpus: Corpus) -> list[str]:
    twins = sorted((m for m in corpus.memories if m.key.endswith(".memory.crux.md") and "⟦CRUX:" in m.body),
                   key=lambda m: (len(m.body), m.key))
    return [m.body.strip()[:EXAMPLE_CHARS] for m in twins[:EXAMPLES]]


class CompressStage:
    name = NAME

    def applies(self, corpus: Corpus, settings: Settings) -> bool:
        return NAME in layout_of(corpus).stages(settings)

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome:
        settings = ctx.settings
        crux = settings.crux
        unit = crux.sizeUnit
        candidates = _from_memories(ctx.corpus, outcome, settings) + _from_consolidations(outcome, settings)
        if not candidates:
            return outcome
        examples = _examples(ctx.corpus)

        def size_of(text: str) -> int:
            return body_size(text, unit)

        def make(handles: Handles, chunk: list[Candidate]) -> CompressInput:
            items = []
            for c in chunk:
                size = size_of(c.body)
                items.append(CompressItem(handle=handles.handle(c.key), title=c.title, unit=unit, size=size,
                                          target_size=max(1, math.ceil(size * crux.compressionTarget / 100)),
                                          max_size=c.cap, body=c.body))
            return CompressInput(examples=examples, items=items)

        answers = ask_each(ctx, NAME, candidates, lambda c: c.key, make, CompressOutput, lambda r: r.decisions)
        out = Outcome(list(outcome.actions), list(outcome.findings))
        day = settings.now.strftime("%Y%m%d")
        for c in candidates:
            d = answers.get(c.key)
            if d is None:
                continue
            twin = model_text(d.twin, kind="body").strip() + "\n"
            problems = twin_problems(c.body, twin, c.cap, size_of, size_of(c.body))
            if problems and all(p.startswith("is not smaller") for p in problems):
                continue  # nothing lost, nothing gained: not worth a proposal or a review
            if problems:
                out.findings.append(Finding(kind="manual_review", targets=[c.key], source=ctx.source(NAME),
                                            reason=f"compression: the twin {problems[0]}; nothing written, compress it by hand"
                                            + (f" ({plural(len(problems) - 1, 'more problem')})" if len(problems) > 1 else "")))
                continue
            before, after = tokens_estimate(c.body), tokens_estimate(twin)
            archive = f"{crux.storage.compressionSourceArchive}/{day}/{PurePosixPath(c.path).name}"
            fm = twin_frontmatter(c.meta, new_id=short_hash(c.title) if c.title else None, target=crux.compressionTarget,
                                  before=before, after=after, date=settings.now.isoformat(), archive=archive)
            size = size_of(twin)
            percent = round(100 * size / max(1, size_of(c.body)))
            out.actions.append(CompressAction(
                targets=[c.key], source=ctx.source(NAME),
                reason=f"{c.why}; twin at {percent}% of the original ({size} {unit}, target {crux.compressionTarget}%, cap {c.cap})",
                outputs=[{"path": twin_path(c.path), "frontmatter": fm, "body": twin, "size": size}],
            ))
        return out


STAGE = CompressStage()
