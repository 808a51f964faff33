"""The consolidation metadata stage: merge a group of related memories into one (CRUX seed 000 step 7).

Candidates are chosen by code (`groups.py`): crux groups by shared tags and type when
`flags.enableMemoryConsolidation` is on, memories that belong to an existing multi-volume topic
(7d), and claude groups of same-type memories with strongly overlapping words. One group per call;
the model sees the members' text only (uncompressed originals where a twin exists; a member over
`MEMBER_CHARS` is clipped, and its merge then falls back), never a path or an id, and answers for the
group's handle: merge or not, a title, a description and the merged body.

Code computes every other field (`consolidation_fields`). The model's merged body must keep every
member's insights (`merge_body.merge_problems`); otherwise the deterministic merge is used and the
action says `fallback: true`. A body over `maxConsolidatedSize` is split into volumes on headings
and paragraphs (the split stage may then regroup them by subject). Actions: `consolidate`, or for
a 7d join `rebalance_volumes` (the topic's volume and the new members in, the new volume set out).
"""

from __future__ import annotations

from collections import Counter
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from ...text.counts import plural
from ...config import Settings
from ...layouts.registry import layout_of
from ...llm import Handles, register_stub
from ...actions import ConsolidateAction, RebalanceVolumesAction
from ...model import Action, Corpus, Finding, Memory
from ...rules.outcome import Outcome
from ...rules.text import as_written, significant_words
from ...layouts.crux.reader import body_size
from ...text.truncate import clip
from ..base import StageContext
from ..heuristics.conflicts import judge_conflict
from ...rules.dangling_links import names_by_folder, other_files
from .claude_names import Convention, convention_of, file_separator, next_number, stem_for
from .fields import crux_folder, crux_frontmatter, slug_words, unique_slug, volume_hash
from .groups import Group, claude_groups, crux_groups, existing_topics
from .merge_body import MemberText, deterministic_merge, merge_problems
from ..model_text import model_text
from ..single_calls import ask_each, one_line
from .volume_files import DESCRIPTION_MAX, TITLE_MAX, greedy_titles, volume_outputs
from .volumes import Section, gap_of, greedy_split, sections_of, text_volume_size

NAME = "metadata"
MEMBER_CHARS = 8000


class MemberItem(BaseModel):
    n: int
    title: str
    description: str
    type: str | None = None
    tags: list[str] = Field(default_factory=list)
    body: str


class GroupItem(BaseModel):
    handle: int
    shared: list[str] = Field(default_factory=list)
    topic: str | None = None  # set when member 1 is a volume of this existing topic
    members: list[MemberItem]


class MetadataInput(BaseModel):
    groups: list[GroupItem]


class MetadataDecision(BaseModel):
    handle: int = Field(description="The handle of the group, as offered.")
    reasoning: str = Field(description="One or two short sentences: what the members have in common.")
    merge: bool = Field(description="False only if the members should stay apart (they contradict each other or are unrelated).")
    title: str = Field(default="", description="A concise title covering every member's subject (one line).")
    description: str = Field(default="", description="A self-contained one-line summary of the combined insights.")
    body: str = Field(default="", description="The merged markdown body keeping every unique fact of every member.")


class MetadataOutput(BaseModel):
    decisions: list[MetadataDecision]


# --- the stub ------------------------------------------------------------------------------------


def _member_texts(group: GroupItem) -> list[MemberText]:
    return [MemberText(heading=m.title or f"Member {m.n}", title=m.title, description=m.description, body=m.body) for m in group.members]


def stub_title(group: GroupItem) -> str:
    """The words the members share, most shared first: tags for crux, title words for claude."""
    if group.topic and group.members:
        return group.members[0].title or group.topic
    terms = list(group.shared)
    if not terms:
        counts: Counter[str] = Counter()
        first: dict[str, int] = {}
        for m in group.members:
            for i, w in enumerate(sorted(significant_words(f"{m.title} {m.description}"))):
                counts[w] += 1
                first.setdefault(w, len(first))
        terms = sorted((w for w, c in counts.items() if c >= 2), key=lambda w: (-counts[w], first[w]))
    said = [text for m in group.members for text in (m.title, m.description)]
    terms = [" ".join(as_written(w, said) for w in t.replace("-", " ").split()) for t in terms[:3]]
    if not terms:
        return group.members[0].title or "Consolidated memory"
    words = terms[0][:1].upper() + terms[0][1:]
    if len(terms) == 1:
        return words
    return f"{', '.join([words, *terms[1:-1]])} and {terms[-1]}"


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    for end in (". ", "; "):
        if end in text:
            return text.split(end, 1)[0].rstrip(".")
    return text.rstrip(".")


def stub_description(group: GroupItem) -> str:
    parts = [_first_sentence(m.description or m.title) for m in group.members]
    return one_line("; ".join(p for p in parts if p) + ".", DESCRIPTION_MAX)


def _contradicting(group: GroupItem) -> str | None:
    ms = group.members
    for i, a in enumerate(ms):
        for b in ms[i + 1 :]:
            if a.description and b.description and judge_conflict(a.description, b.description)[0]:
                return f"members {a.n} and {b.n} contradict each other"
    return None


@register_stub(NAME)
def stub(payload: MetadataInput) -> MetadataOutput:
    out = []
    for g in payload.groups:
        clash = _contradicting(g)
        title = stub_title(g)
        out.append(
            MetadataDecision(
                handle=g.handle,
                reasoning=clash or f"{len(g.members)} memories on {title.lower()}; body: every member's unique lines under its own heading",
                merge=clash is None,
                title=title,
                description=stub_description(g),
                body=deterministic_merge(title, _member_texts(g)),
            )
        )
    return MetadataOutput(decisions=out)


# --- candidates and payloads ---------------------------------------------------------------------


def original_body(m: Memory) -> str:
    """What a merge starts from: the uncompressed original when a compressed twin is the live file."""
    return m.extra.get("twin_body") or m.body


def member_item(n: int, m: Memory) -> MemberItem:
    body = original_body(m)
    body = clip(body, MEMBER_CHARS)
    return MemberItem(n=n, title=m.title or m.slug, description=m.description, type=m.type, tags=list(m.tags), body=body)


def group_key(g: Group) -> str:
    return "\x00".join(g.members)


def find_groups(corpus: Corpus, outcome: Outcome) -> list[Group]:
    style = layout_of(corpus).consolidation_style
    if style == "crux":
        return crux_groups(corpus, outcome)
    if style == "claude":
        return claude_groups(corpus, outcome)
    return []


def group_item(g: Group, by_key: dict[str, Memory], handle: int) -> GroupItem:
    return GroupItem(handle=handle, shared=list(g.shared), topic=g.topic,
                     members=[member_item(i, by_key[k]) for i, k in enumerate(g.members, start=1)])


def payload_for(by_key: dict[str, Memory]):
    def make(handles: Handles, chunk: list[Group]) -> MetadataInput:
        return MetadataInput(groups=[group_item(g, by_key, handles.handle(group_key(g))) for g in chunk])

    return make


# --- turning a decision into an action -----------------------------------------------------------


class Namer:
    """File slugs not used by any memory, twin, tracker or earlier output of this run."""

    def __init__(self, corpus: Corpus) -> None:
        files = corpus.extra.get("crux", {}).get("memory_files") or [m.key for m in corpus.memories]
        self.taken: set[str] = {_slug_of(_file_name(k)) for k in files}
        self.taken |= {t.slug for t in corpus.trackers}
        self.taken |= {topic for m in corpus.memories if (topic := m.extra.get("consolidation_topic"))}
        # Every file of the folders, memory or not, holds its name and number.
        self.claude_keys = [m.key for m in corpus.memories] + other_files(corpus)
        # A new file takes no name a link in its folder may reach another by (claude_names.py).
        self.names_taken: dict[str, set[str]] = names_by_folder(corpus)
        self.archived: dict[str, list[str]] = corpus.extra.get("archived_names", {})
        self.numbers_given: dict[str, int] = {}  # the last number this run gave in each folder

    def crux(self, title: str) -> str:
        return unique_slug(slug_words(title), self.taken)

    def topic(self, title: str) -> str:
        base = slug_words(title, 50)
        topic = unique_slug(base, self.taken)
        self.taken |= {f"{topic}-pt{n}" for n in range(1, 100)}
        return topic

    def claude(self, folder: str, title: str, convention: Convention | None = None, sep: str = "_") -> tuple[str, str]:
        """The new file's path and its `name`: named after its title (its file name's words joined by
        `sep`, as its members' are), or as its members are named when they share one rule
        (claude_names.py)."""
        prefix = "" if folder == "." else f"{folder}/"
        sep = convention.sep if convention else sep
        base = stem_for(convention, slug_words(title, 50)) if convention else slug_words(title, 50).replace("-", sep)
        names = self.names_taken.setdefault(folder, set())  # its file names among them
        n = 1
        while True:
            slug = base if n == 1 else f"{base}{sep}{n}"
            name = slug if convention else (title if n == 1 else f"{title} {n}")
            if not {slug.casefold(), name.casefold()} & names:
                break
            n += 1
        names.update({slug.casefold(), name.casefold()})
        if not (convention and convention.numbered):
            return f"{prefix}{slug}.md", name
        number = max(next_number(self.claude_keys, folder, self.archived.get(folder, ())), self.numbers_given.get(folder, 0) + 1)
        self.numbers_given[folder] = number
        return f"{prefix}{number:0{convention.width}d}-{slug}.md", slug


def _file_name(key: str) -> str:
    """`PurePosixPath(key).name`, without making a path of every file of the store: the last part,
    unless that is empty or "." (a path to a folder), which the path's own parsing sets aside."""
    name = key.rsplit("/", 1)[-1]
    return name if name not in ("", ".") else PurePosixPath(key).name


def _slug_of(name: str) -> str:
    for suffix in (".memory.crux.md", ".memory.md", ".md"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def measure_for(settings: Settings):
    unit = settings.crux.sizeUnit
    return lambda text: body_size(text, unit)


def _crux_action(ctx: StageContext, g: Group, members: list[Memory], title: str, description: str, body: str,
                 reason: str, fallback: bool, namer: Namer) -> Action:
    crux = ctx.settings.crux
    measure = measure_for(ctx.settings)
    cap = crux.maxConsolidatedSize
    fm = crux_frontmatter(title, description, members, crux, ctx.settings.now)
    size = measure(body)
    if g.topic:
        return _topic_action(ctx, g, members, fm, body, reason, fallback)
    folder = crux_folder(members[0], fm["type"], crux)
    extra: dict[str, Any] = {"topic": None}
    if size <= cap:
        outputs = [{"path": f"{folder}/{namer.crux(title)}.memory.md", "frontmatter": fm, "body": body, "size": size}]
    else:
        topic = namer.topic(title)
        sections = sections_of(body, cap, measure)
        assignment = greedy_cut(sections, cap, measure)
        outputs = volume_outputs(topic, folder, fm, sections, assignment, greedy_titles(title, sections, assignment), measure)
        extra = {"topic": topic, "volumes": len(outputs)}
        reason += f"; {size} {crux.sizeUnit} > maxConsolidatedSize {cap}: split into {len(outputs)} volumes on headings and paragraphs"
    return ConsolidateAction(targets=sorted(g.members), reason=reason, source=ctx.source(NAME), to_type=fm["type"],
                             fallback=fallback, outputs=outputs, **extra)


def greedy_cut(sections: list[Section], cap: int, measure) -> list[list[int]]:
    return greedy_split([measure(s.text + "\n") for s in sections], gap_of(measure), cap, text_volume_size(sections, measure))


def topic_sections(volumes: list[Memory], replaced: dict[str, str], cap: int, measure) -> list[Section]:
    """The sections of a topic's content, volume by volume (`replaced`: new bodies for some volumes)."""
    out: list[Section] = []
    for v in volumes:
        out.extend(sections_of(replaced.get(v.key, original_body(v)), cap, measure))
    return out


def _topic_action(ctx: StageContext, g: Group, members: list[Memory], fm: dict[str, Any], body: str, reason: str, fallback: bool) -> Action:
    """7d: the new members merged into one volume; the whole topic re-cut if that volume overflows."""
    crux = ctx.settings.crux
    measure = measure_for(ctx.settings)
    cap = crux.maxConsolidatedSize
    topic_name = g.topic or ""
    topic = next(t for t in existing_topics(ctx.corpus) if t.name == topic_name and t.scope == members[0].group)
    volume = members[0]
    part = int(volume.extra.get("consolidation_part") or 1)
    fm = dict(fm)
    fm["id"] = volume_hash(topic_name, part)
    fm["type"] = volume.type or fm["type"]
    folder = crux_folder(volume, fm["type"], crux)
    fm["consolidation_topic"] = topic_name
    fm["consolidation_part"] = part
    size = measure(body)
    new_keys = [k for k in g.members if k != volume.key]
    if size <= cap:
        outputs = [{"path": f"{folder}/{topic_name}-pt{part}.memory.md", "frontmatter": fm, "body": body, "size": size}]
        targets = sorted([volume.key, *new_keys])
        reason += f"; merged into part {part}"
    else:
        sections = topic_sections(topic.volumes, {volume.key: body}, cap, measure)
        assignment = greedy_cut(sections, cap, measure)
        base = dict(fm)
        base["strength"] = sum(v.strength or 0 for v in topic.volumes if v.key != volume.key) + int(fm["strength"])
        outputs = volume_outputs(topic_name, folder, base, sections, assignment, greedy_titles(fm["title"], sections, assignment), measure)
        targets = sorted([*(v.key for v in topic.volumes), *new_keys])
        reason += f"; part {part} would hold {size} {crux.sizeUnit} > {cap}: topic re-cut into {len(outputs)} volumes on headings and paragraphs"
    return RebalanceVolumesAction(targets=targets, reason=reason, source=ctx.source(NAME), to_type=fm["type"],
                                  topic=topic_name, volumes=len(outputs), fallback=fallback, outputs=outputs)


def _claude_action(ctx: StageContext, g: Group, members: list[Memory], title: str, description: str, body: str,
                   reason: str, fallback: bool, namer: Namer) -> Action:
    folder = members[0].group
    convention = convention_of(members)
    path, name = namer.claude(folder, title, convention, file_separator(members))
    fm: dict[str, Any] = {"name": name, "description": description}
    if convention and convention.nested is not None:
        fm["metadata"] = {**convention.nested, "type": members[0].type}  # nested, as every member has it
    else:
        fm["type"] = members[0].type
    fm["consolidated_from"] = [PurePosixPath(m.key).name for m in members]
    # Asked, never automatic: a claude folder's files and its MEMORY.md are written by its owner (and
    # by Claude Code), and the seed for these folders (dream) merges duplicates but never folds topic
    # files together. On public folders the groups were arguable more often than not (a broad
    # playbook and the one rule it contains; a review series whose rounds the owner indexed one by
    # one), so the owner chooses with --select.
    return ConsolidateAction(targets=sorted(g.members), reason=reason, source=ctx.source(NAME), to_type=members[0].type,
                             topic=None, fallback=fallback, needs_user=True,
                             outputs=[{"path": path, "frontmatter": fm, "body": body, "size": len(body.splitlines())}])


class MetadataStage:
    name = NAME

    def applies(self, corpus: Corpus, settings: Settings) -> bool:
        return NAME in layout_of(corpus).stages(settings)

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome:
        groups = find_groups(ctx.corpus, outcome)
        if not groups:
            return outcome
        # One call per group: a store that has never been consolidated is done over several nights.
        limit = ctx.settings.llm.max_pairs_per_stage
        dropped = groups[limit:]
        groups = groups[:limit]
        by_key = ctx.by_key
        answers = ask_each(ctx, NAME, groups, group_key, payload_for(by_key), MetadataOutput, lambda r: r.decisions)
        namer = Namer(ctx.corpus)
        out = Outcome(list(outcome.actions), list(outcome.findings))
        for g in groups:
            d = answers.get(group_key(g))
            if d is None or not d.merge:
                continue
            members = [by_key[k] for k in g.members]
            # The stub's words stand in for a title or description the model left empty (the group's
            # item is made only then).
            title = (model_text(d.title, kind="title", limit=TITLE_MAX)
                     or model_text(stub_title(group_item(g, by_key, 1)), kind="title", limit=TITLE_MAX))
            description = model_text(d.description, limit=DESCRIPTION_MAX) or stub_description(group_item(g, by_key, 1))
            texts = [MemberText(heading=m.title or m.slug, title=m.title, description=m.description, body=original_body(m)) for m in members]
            proposed = model_text(d.body, kind="body")
            body = proposed.strip("\n") + "\n" if proposed.strip() else ""
            problems = merge_problems(texts, body)
            reason = g.reason
            if problems:
                body = deterministic_merge(title, texts)
                reason += f"; deterministic merge used: the proposed merged body failed its check ({problems[0]})"
            make = _crux_action if layout_of(ctx.corpus).consolidation_style == "crux" else _claude_action
            out.actions.append(make(ctx, g, members, title, description, body, reason, bool(problems), namer))
        if dropped:
            out.findings.append(Finding(kind="capped", targets=[], source=ctx.source(NAME),
                                        reason=f"metadata: {plural(len(dropped), 'more consolidation group')} over llm.max_pairs_per_stage wait for the next run"))
        return out


STAGE = MetadataStage()
