"""The split stage: group the sections of an oversized consolidated body into coherent volumes
(CRUX seed 000, steps 7e and 7f), and rebalance existing multi-volume topics.

Candidates (crux, when consolidation is enabled):
- this run's consolidations that the metadata stage had to cut into volumes (it cut them greedily
  on headings and paragraphs, so the plan stands without this stage): the model may regroup the
  same sections by subject;
- existing topics (`consolidation_topic`) that no earlier proposal touches, when a volume is over
  `maxConsolidatedSize`, under 25 % of it, or the topic fits in fewer volumes → `rebalance_volumes`.

Code cuts the body into numbered sections (`volumes.sections_of`); the model assigns section
numbers to volumes and names each volume. The assignment is used only if every section is in
exactly one volume, every volume is within the cap, it needs no more volumes than the greedy split
and sizes are roughly equal; otherwise the greedy split stands (`fallback: true`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from ..kinds import ActionKind
from ..config import Settings
from ..layouts.registry import layout_of
from ..llm import Handles, register_stub
from ..actions import ConsolidateAction, RebalanceVolumesAction, outputs_of
from ..model import Action, Corpus, Finding
from ..rules.outcome import Outcome
from ..text.truncate import clip
from .base import StageContext
from .consolidate.fields import crux_folder, crux_frontmatter
from .consolidate.groups import Topic, busy_keys, existing_topics
from .consolidate.stage import greedy_cut, measure_for, original_body
from .model_text import model_text
from .single_calls import ask_each, one_line
from .consolidate.volume_files import DESCRIPTION_MAX, TITLE_MAX, greedy_titles, volume_outputs
from .consolidate.volumes import (
    Section,
    additive_volume_size,
    assignment_problems,
    gap_of,
    greedy_split,
    normalized,
    rebalance_reason,
    sections_of,
    subject_split,
    text_volume_size,
    volume_title,
)

NAME = "split"
SECTION_CHARS = 600


class SectionItem(BaseModel):
    n: int
    heading: str
    size: int
    text: str


class BodyItem(BaseModel):
    handle: int
    title: str
    unit: str
    cap: int = Field(description="The largest size a volume may have.")
    gap: int = Field(description="What joining two sections in one volume adds to the sum of their sizes.")
    max_volumes: int = Field(description="Use at most this many volumes.")
    sections: list[SectionItem]


class SplitInput(BaseModel):
    bodies: list[BodyItem]


class VolumePlan(BaseModel):
    title: str = Field(default="", description="The volume's sub-topic, one line.")
    description: str = Field(default="", description="One line: what this volume covers.")
    sections: list[int] = Field(description="The numbers of the sections in this volume.")


class SplitDecision(BaseModel):
    handle: int = Field(description="The handle of the body, as offered.")
    reasoning: str = Field(description="One or two short sentences: which sub-topics the body has.")
    volumes: list[VolumePlan]


class SplitOutput(BaseModel):
    decisions: list[SplitDecision]


# --- the stub ------------------------------------------------------------------------------------


def _payload_sections(body: BodyItem) -> list[Section]:
    return [Section(heading=s.heading, text=s.text) for s in body.sections]


@register_stub(NAME)
def stub(payload: SplitInput) -> SplitOutput:
    """Sections grouped by shared subject words within the cap; else the greedy split."""
    out = []
    for body in payload.bodies:
        sections = _payload_sections(body)
        size = additive_volume_size([s.size for s in body.sections], body.gap)
        grouped = subject_split(sections, body.cap, size, body.max_volumes)
        why = "sections grouped by the subject words they share"
        if grouped is None:
            grouped = greedy_split([s.size for s in body.sections], body.gap, body.cap, size)
            why = "no grouping by subject fits the cap: greedy split in body order"
        volumes = [
            VolumePlan(title=volume_title(sections, v, f"{body.title}, part {n}"),
                       description=one_line("; ".join(sections[i].heading for i in v), DESCRIPTION_MAX),
                       sections=[i + 1 for i in v])
            for n, v in enumerate(grouped, start=1)
        ]
        out.append(SplitDecision(handle=body.handle, reasoning=why, volumes=volumes))
    return SplitOutput(decisions=out)


# --- candidates ----------------------------------------------------------------------------------


@dataclass
class Candidate:
    key: str
    title: str
    topic: str
    folder: str
    sections: list[Section]
    action: Action | None = None  # a consolidation of this run to regroup
    volumes: Topic | None = None  # an existing topic to rebalance
    reason: str = ""
    current: list[list[int]] | None = None  # the existing topic's sections, volume by volume


def _from_actions(outcome: Outcome, settings: Settings) -> list[Candidate]:
    measure = measure_for(settings)
    cap = settings.crux.maxConsolidatedSize
    found = []
    for a in outcome.actions:
        topic = a.topic if isinstance(a, (ConsolidateAction, RebalanceVolumesAction)) else None
        outputs = outputs_of(a)
        if a.kind not in (ActionKind.CONSOLIDATE, ActionKind.REBALANCE_VOLUMES) or not topic or len(outputs) < 2 or not a.source.endswith(":metadata"):
            continue
        joined = "\n\n".join(o["body"].strip("\n") for o in outputs) + "\n"
        title = str(outputs[0]["frontmatter"].get("title", topic)).split(":")[0]
        folder = str(PurePosixPath(outputs[0]["path"]).parent)
        found.append(Candidate(key=f"run\x00{topic}", title=title, topic=topic, folder=folder,
                               sections=sections_of(joined, cap, measure), action=a))
    return found


def _from_topics(corpus: Corpus, outcome: Outcome, settings: Settings) -> tuple[list[Candidate], list[Finding]]:
    measure = measure_for(settings)
    cap = settings.crux.maxConsolidatedSize
    busy = busy_keys(corpus, outcome)
    found, review = [], []
    for t in existing_topics(corpus):
        if any(v.key in busy for v in t.volumes):
            continue
        sizes = [measure(v.body) for v in t.volumes]
        sections: list[Section] = []
        current: list[list[int]] = []
        for v in t.volumes:
            cut = sections_of(original_body(v), cap, measure)
            current.append(list(range(len(sections), len(sections) + len(cut))))
            sections.extend(cut)
        needed = len(greedy_cut(sections, cap, measure))
        why = rebalance_reason(sizes, cap, needed)
        if why is None:
            continue
        if any(v.extra.get("compressed") and not v.extra.get("twin_body") for v in t.volumes):
            review.append(Finding(kind="manual_review", targets=[v.key for v in t.volumes],
                                  reason=f"topic '{t.name}' needs rebalancing ({why}) but a volume has only its compressed form: "
                                  "restore its original to rebalance", source="deterministic"))
            continue
        folder = crux_folder(t.volumes[0], t.volumes[0].type or "learning", settings.crux)
        title = t.volumes[0].title.split(":")[0] if t.volumes[0].title else t.name
        found.append(Candidate(key=f"{t.scope}\x00{t.name}", title=title, topic=t.name, folder=folder, sections=sections,
                               volumes=t, reason=why, current=current))
    return found, review


def _payload(settings: Settings, candidates: list[Candidate]):
    measure = measure_for(settings)
    cap = settings.crux.maxConsolidatedSize
    gap = gap_of(measure)

    def make(handles: Handles, chunk: list[Candidate]) -> SplitInput:
        bodies = []
        for c in chunk:
            sizes = [measure(s.text + "\n") for s in c.sections]
            bodies.append(BodyItem(
                handle=handles.handle(c.key), title=c.title, unit=settings.crux.sizeUnit, cap=cap, gap=gap,
                max_volumes=len(greedy_cut(c.sections, cap, measure)),
                sections=[SectionItem(n=i, heading=s.heading, size=sizes[i - 1],
                                      text=clip(s.text, SECTION_CHARS))
                          for i, s in enumerate(c.sections, start=1)],
            ))
        return SplitInput(bodies=bodies)

    return make


# --- the stage -----------------------------------------------------------------------------------


def _names(c: Candidate, d: SplitDecision, assignment: list[list[int]]) -> list[tuple[str, str]]:
    """Titles and descriptions from the model, by volume; greedy names where it gave none."""
    by_first = {min(v.sections) - 1: v for v in d.volumes if v.sections}
    fallback = greedy_titles(c.title, c.sections, assignment)
    names = []
    for n, indices in enumerate(assignment):
        plan = by_first.get(indices[0])
        title = model_text(plan.title, kind="title", limit=TITLE_MAX) if plan else ""
        description = model_text(plan.description, limit=DESCRIPTION_MAX) if plan else ""
        names.append((title or fallback[n][0], description or fallback[n][1]))
    return names


class SplitStage:
    name = NAME

    def applies(self, corpus: Corpus, settings: Settings) -> bool:
        return NAME in layout_of(corpus).stages(settings)

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome:
        settings = ctx.settings
        topics, review = _from_topics(ctx.corpus, outcome, settings)
        candidates = _from_actions(outcome, settings) + topics
        out = Outcome(list(outcome.actions), [*outcome.findings, *review])
        if not candidates:
            return out
        answers = ask_each(ctx, NAME, candidates, lambda c: c.key, _payload(settings, candidates), SplitOutput, lambda r: r.decisions)
        measure = measure_for(settings)
        cap = settings.crux.maxConsolidatedSize
        replaced: dict[int, Action] = {}
        for c in candidates:
            d = answers.get(c.key)
            if d is None:
                continue
            greedy = greedy_cut(c.sections, cap, measure)
            proposal = normalized([[n - 1 for n in v.sections] for v in d.volumes])
            problems = assignment_problems(len(c.sections), [[n - 1 for n in v.sections] for v in d.volumes], cap,
                                           text_volume_size(c.sections, measure), len(greedy))
            assignment = greedy if problems else proposal
            names = greedy_titles(c.title, c.sections, assignment) if problems else _names(c, d, assignment)
            note = f"the proposed volumes {problems[0]}: greedy split kept" if problems else "volumes grouped by sub-topic (split judge)"
            if c.action is not None:
                if problems:
                    replaced[id(c.action)] = _updated(c.action, split_source=ctx.source(NAME), split_fallback=True,
                                                      reason=f"{c.action.reason}; {note}")
                    continue
                base: dict[str, Any] = dict(outputs_of(c.action)[0]["frontmatter"])
                base["strength"] = sum(int(o["frontmatter"].get("strength") or 0) for o in outputs_of(c.action))
                outputs = volume_outputs(c.topic, c.folder, _shared(base), c.sections, assignment, names, measure)
                replaced[id(c.action)] = _updated(c.action, outputs=outputs, volumes=len(outputs), split_source=ctx.source(NAME),
                                                  split_fallback=False, reason=f"{c.action.reason}; {note}")
                continue
            assert c.volumes is not None and c.current is not None
            if assignment == c.current:
                continue
            vols = c.volumes.volumes
            base = crux_frontmatter(c.title, "", vols, settings.crux, settings.now)
            base["type"] = vols[0].type or base["type"]
            outputs = volume_outputs(c.topic, c.folder, base, c.sections, assignment, names, measure)
            out.actions.append(RebalanceVolumesAction(
                targets=sorted(v.key for v in vols), source=ctx.source(NAME), to_type=base["type"],
                reason=f"topic '{c.topic}': {c.reason}; {len(vols)} → {len(outputs)} volumes; {note}",
                topic=c.topic, volumes=len(outputs), fallback=bool(problems), outputs=outputs,
            ))
        out.actions = [replaced.get(id(a), a) for a in out.actions]
        return out


def _shared(fm: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fm.items() if k not in ("consolidation_topic", "consolidation_part")}


def _updated(action: Action, **changes: Any) -> Action:
    # Checked again as its kind's class: a split field on a kind that has none fails here.
    return type(action).model_validate({**action.model_dump(), **changes})


STAGE = SplitStage()
