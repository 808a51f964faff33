"""Consolidation groups, chosen by code (CRUX seed 000, steps 7a and 7d; claude folders).

crux (7a): two memories of one scope are partners when they share at least two tags and at least
half of the larger tag set (`TAG_OVERLAP`); memories of different types only when they share at
least three quarters (`CROSS_TYPE_OVERLAP`: "only cross-type when the subject overlap is strong").
Pairs are found through an inverted index on tags (tags carried by more than `MAX_TAG_DF` memories
are too common to name a subject and are left out of the index), never by comparing all pairs.
Groups grow greedily from the strongest pair (same type first, then overlap, then a shared
`source`): a memory joins a group only if it is a partner of every member already in it, belongs
to at most one group, and a group holds at most `MAX_GROUP` memories.

crux (7d): a memory whose tags are mostly (half, at least two) covered by an existing multi-volume
topic's tags joins that topic instead: it is merged into the topic's volume it shares most tags
with (then the smallest, then the first part).

claude: no tags. First series: files `<prefix>-r1.md` .. `<prefix>-r7.md` (also `-round2`, `-part3`)
of one folder and one type whose name and description all name the prefix's subject are one group,
in round order. Then two memories of one folder and one type are partners when their significant words
(name, description and body) overlap strongly: at least `CLAUDE_MIN_SHARED` (5) shared words that
make up at least `CLAUDE_OVERLAP` (60 %) of the smaller word set. Words used by more than
`CLAUDE_MAX_DF` of a folder's memories (30 %, at least 3, at most 50) are not indexed.

Never grouped: memories an earlier proposal already touches (retired, moved, merged, disputed in a
conflict, a reorder candidate, a rule candidate, a strength sync: they stay standalone this run),
pinned memories, files that failed to parse, archived memories, members of a consolidated memory
still on disk (`merged_into`: the crux reader links a member by its written id, or, when it has
none, by the seed's id `sha256(title)[:7]` or its slug; the plan archives it instead), and pairs whose titles contradict each other (the stub's conflict
judge): merging "always X" with "never X" would hide a conflict.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Iterable

from ...layouts.crux.members import is_archived
from ...model import Corpus, Memory
from ...rules.outcome import Outcome
from ...rules.text import STOPWORDS, significant_words, tokens
from ..base import retired_keys
from ..heuristics.conflicts import judge_conflict

TAG_OVERLAP = 0.5
CROSS_TYPE_OVERLAP = 0.75
MIN_SHARED_TAGS = 2
MAX_TAG_DF = 50
MAX_GROUP = 8
CLAUDE_OVERLAP = 0.6
CLAUDE_MIN_SHARED = 5
CLAUDE_MAX_DF = 0.3
# Actions that touch nothing a consolidation would change.
_BOOKKEEPING = {"rebuild_index", "remove_orphan_tracker"}
_BUSY_FINDINGS = {"reorder_candidate", "parse_error", "pinned_skipped"}


@dataclass(frozen=True)
class Group:
    members: tuple[str, ...]  # keys, in merge order: oldest first, then by key
    reason: str
    shared: tuple[str, ...] = ()  # the tags (crux) or words (claude) the members share
    topic: str | None = None  # 7d: the existing consolidation_topic the new members join
    volume: str | None = None  # 7d: the topic's volume they are merged into (also in `members`)


@dataclass
class Topic:
    name: str
    scope: str
    volumes: list[Memory] = field(default_factory=list)  # by consolidation_part, then key

    @property
    def tags(self) -> list[str]:
        seen: dict[str, None] = {}
        for v in self.volumes:
            for t in v.tags:
                seen.setdefault(t.lower(), None)
        return list(seen)


def busy_keys(corpus: Corpus, outcome: Outcome) -> set[str]:
    """Memories an earlier proposal or finding already concerns."""
    busy = set(retired_keys(outcome))
    for a in outcome.actions:
        if a.kind not in _BOOKKEEPING:
            busy.update(a.targets)
    for f in [*corpus.findings, *outcome.findings]:
        if f.kind in _BUSY_FINDINGS:
            busy.update(f.targets)
    return busy


def merge_order(memories: Iterable[Memory]) -> list[Memory]:
    return sorted(memories, key=lambda m: (m.created.isoformat() if m.created else "9999", m.key))


def _tags(m: Memory) -> frozenset[str]:
    return frozenset(t.lower() for t in m.tags)


_ID_PREFIX = re.compile(r"^\d+[-_ .]+")  # "117-feedback_plans": a file number, not a claim about 117


def _titles_conflict(a: Memory, b: Memory) -> bool:
    ta, tb = _ID_PREFIX.sub("", a.title or a.description), _ID_PREFIX.sub("", b.title or b.description)
    if not ta or not tb:
        return False
    return judge_conflict(ta, tb)[0]


# --- crux -----------------------------------------------------------------------------------------


def crux_eligible(m: Memory, busy: set[str], unreadable: set[str]) -> bool:
    return (
        m.key not in busy
        and m.key not in unreadable
        and not m.pinned
        and bool(m.type)
        and not is_archived(m)
        and not m.extra.get("consolidation_topic")
        and not m.extra.get("merged_into")
    )


def _tag_partner(a: Memory, b: Memory, ta: frozenset[str], tb: frozenset[str]) -> tuple[bool, float, int]:
    """Whether two memories with these `_tags` are tag partners, their share of tags, and how many
    they share (the tags made once per memory: the pair search tries thousands of pairs)."""
    shared = len(ta & tb)
    if shared < MIN_SHARED_TAGS:
        return False, 0.0, shared
    ratio = shared / max(len(ta), len(tb))
    need = TAG_OVERLAP if a.type == b.type else CROSS_TYPE_OVERLAP
    return ratio >= need, ratio, shared


def _index_pairs(memories: list[Memory], features: dict[str, frozenset[str]], max_df: int) -> set[tuple[str, str]]:
    index: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m in memories:
        for f in features[m.key]:
            index[(m.group, f)].append(m.key)
    pairs: set[tuple[str, str]] = set()
    for keys in index.values():
        if len(keys) < 2 or len(keys) > max_df:
            continue
        keys = sorted(keys)
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                pairs.add((a, b))
    return pairs


@dataclass(frozen=True)
class _Edge:
    a: str
    b: str
    same_type: bool
    ratio: float
    same_source: bool
    shared: int

    def rank(self) -> tuple:
        return (not self.same_type, -self.ratio, not self.same_source, -self.shared, self.a, self.b)


def _grow(edges: list[_Edge], partners: set[tuple[str, str]]) -> list[list[str]]:
    """Greedy complete-link groups from the strongest edge down; each key in one group at most."""
    group_of: dict[str, int] = {}
    groups: list[list[str]] = []

    def ok(key: str, members: list[str]) -> bool:
        return all((min(key, k), max(key, k)) in partners for k in members)

    for e in sorted(edges, key=_Edge.rank):
        ga, gb = group_of.get(e.a), group_of.get(e.b)
        if ga is None and gb is None:
            group_of[e.a] = group_of[e.b] = len(groups)
            groups.append([e.a, e.b])
        elif ga is not None and gb is None:
            if len(groups[ga]) < MAX_GROUP and ok(e.b, groups[ga]):
                group_of[e.b] = ga
                groups[ga].append(e.b)
        elif gb is not None and ga is None:
            if len(groups[gb]) < MAX_GROUP and ok(e.a, groups[gb]):
                group_of[e.a] = gb
                groups[gb].append(e.a)
    return groups


def existing_topics(corpus: Corpus) -> list[Topic]:
    topics: dict[tuple[str, str], Topic] = {}
    for m in corpus.memories:
        name = m.extra.get("consolidation_topic")
        if name:
            topics.setdefault((m.group, name), Topic(name=name, scope=m.group)).volumes.append(m)
    for t in topics.values():
        t.volumes.sort(key=lambda v: (v.extra.get("consolidation_part") or 0, v.key))
    return [topics[k] for k in sorted(topics)]


def _topic_matches(topics: list[Topic], candidates: list[Memory], busy: set[str]) -> list[Group]:
    """7d: new memories that belong to an existing topic, merged into one of its volumes."""
    joined: dict[tuple[str, str], list[tuple[Memory, list[str]]]] = defaultdict(list)
    for m in candidates:
        best: tuple[tuple, Topic, list[str]] | None = None
        mt = _tags(m)
        for t in topics:
            if t.scope != m.group or any(v.key in busy for v in t.volumes):
                continue
            shared = [x for x in t.tags if x in mt]
            if len(shared) < MIN_SHARED_TAGS or not mt:
                continue
            ratio = len(shared) / len(mt)
            same_type = any(v.type == m.type for v in t.volumes)
            if ratio < (TAG_OVERLAP if same_type else CROSS_TYPE_OVERLAP):
                continue
            rank = (not same_type, -ratio, t.name)
            if best is None or rank < best[0]:
                best = (rank, t, shared)
        if best is not None:
            joined[(best[1].scope, best[1].name)].append((m, best[2]))
    groups = []
    by_name = {(t.scope, t.name): t for t in topics}
    for key in sorted(joined):
        topic = by_name[key]
        new = [m for m, _ in joined[key]]
        new_tags = set().union(*(_tags(m) for m in new))
        volume = min(
            topic.volumes,
            key=lambda v: (-len(_tags(v) & new_tags), v.extra.get("size") or 0, v.extra.get("consolidation_part") or 0, v.key),
        )
        shared = sorted({s for _, ss in joined[key] for s in ss})
        groups.append(
            Group(
                members=(volume.key, *[m.key for m in merge_order(new)]),
                reason=f"{len(new)} memor{'y' if len(new) == 1 else 'ies'} belong{'s' if len(new) == 1 else ''} to the existing topic "
                f"'{topic.name}' (shared tags: {', '.join(shared)})",
                shared=tuple(shared),
                topic=topic.name,
                volume=volume.key,
            )
        )
    return groups


def crux_groups(corpus: Corpus, outcome: Outcome) -> list[Group]:
    """7d topic joins first, then 7a groups among the memories left."""
    busy = busy_keys(corpus, outcome)
    unreadable = set(corpus.extra.get("crux", {}).get("unreadable", []))
    pool = [m for m in corpus.memories if crux_eligible(m, busy, unreadable)]
    topic_groups = _topic_matches(existing_topics(corpus), pool, busy)
    taken = {k for g in topic_groups for k in g.members}
    pool = [m for m in pool if m.key not in taken]
    by_key = {m.key: m for m in pool}
    features = {m.key: _tags(m) for m in pool}
    # The tag test first and the order after it: few of the pairs the index offers pass.
    tag_partners: dict[tuple[str, str], tuple[float, int]] = {}
    for a, b in _index_pairs(pool, features, MAX_TAG_DF):
        ok, ratio, n_shared = _tag_partner(by_key[a], by_key[b], features[a], features[b])
        if ok:
            tag_partners[(a, b)] = (ratio, n_shared)
    edges, partners = [], set()
    for a, b in sorted(tag_partners):
        ma, mb = by_key[a], by_key[b]
        if _titles_conflict(ma, mb):
            continue
        ratio, n_shared = tag_partners[(a, b)]
        partners.add((a, b))
        edges.append(_Edge(a, b, ma.type == mb.type, ratio, bool(ma.source) and ma.source == mb.source, n_shared))
    groups = []
    for keys in _grow(edges, partners):
        members = merge_order(by_key[k] for k in keys)
        counts = Counter(t for m in members for t in features[m.key])
        shared = sorted((t for t, n in counts.items() if n >= 2), key=lambda t: (-counts[t], t))
        types = sorted({m.type or "" for m in members})
        share = min(_tag_partner(a, b, features[a.key], features[b.key])[1] for i, a in enumerate(members) for b in members[i + 1 :])
        groups.append(
            Group(
                members=tuple(m.key for m in members),
                reason=f"{len(members)} memories share at least {round(share * 100)}% of their tags ({', '.join(shared)})"
                + ("" if len(types) == 1 else f"; types {', '.join(types)}"),
                shared=tuple(shared),
            )
        )
    return topic_groups + sorted(groups, key=lambda g: g.members)


# --- claude ---------------------------------------------------------------------------------------


def claude_words(m: Memory) -> frozenset[str]:
    """What a memory is about, for grouping: its significant words without numbers and ids ("083",
    "2026", "r4"), which two notes share by date or numbering, not by subject."""
    words = significant_words(" ".join([m.title.replace("-", " ").replace("_", " "), m.description, m.body]))
    return frozenset(w for w in words if not _NUMBERISH.fullmatch(w))


_NUMBERISH = re.compile(r"[a-z]?\d+")


_SERIES = re.compile(r"^(?P<prefix>.+?)[-_](?:r|round|part|pt)(?P<n>\d{1,2})$", re.IGNORECASE)
_TYPE_WORDS = frozenset({"project", "feedback", "reference", "user"})


def subject_words(text: str) -> list[str]:
    """The words that name a subject, in the order written: no numbers or ids ("117", "r4")."""
    out: list[str] = []
    for w in tokens(text.replace("-", " ").replace("_", " ")):
        if w in STOPWORDS or len(w) < 3 or re.fullmatch(r"[a-z]?\d+", w):
            continue  # "117", "r4", "v2", "2026": numbers and ids, not a subject
        if w not in out:
            out.append(w)
    return out


def _title_phrase(members: list[Memory]) -> str | None:
    """The longest run of subject words every member's name has, in order ("self contained plans"
    from 117-feedback_self_contained_plans, 1376-feedback_self_contained_plans ...), if two words long."""
    names = [[w for w in subject_words(m.title) if w not in _TYPE_WORDS] for m in members]
    first = names[0]
    best: list[str] = []
    for i in range(len(first)):
        for j in range(len(first), i + len(best), -1):
            run = " ".join(first[i:j])
            if all(f" {run} " in f" {' '.join(n)} " for n in names[1:]):
                best = first[i:j]
                break
    return " ".join(best) if len(best) >= 2 else None


def _ordered(common: frozenset[str], members: list[Memory]) -> tuple[str, ...]:
    """What the stub's title is made of: the members' shared name phrase, else their shared words
    in the order the first member writes them; never numbers ("117, 1376 and 1378" is not a title a
    person would write) and never the type word every memory of the type has."""
    phrase = _title_phrase(members)
    return (phrase,) if phrase else _words_in_order(common, members)


def _words_in_order(common: frozenset[str], members: list[Memory]) -> tuple[str, ...]:
    """The shared words the first member writes, in its order, then the rest alphabetically; no
    numbers, no type word: what a title is made of, and what a reason names first."""
    first = members[0]
    order = subject_words(" ".join([first.title, first.description, first.body]))
    ranked = [w for w in order if w in common and w not in _TYPE_WORDS]
    rest = sorted(w for w in common if w not in ranked and w not in _TYPE_WORDS and not re.fullmatch(r"[a-z]?\d+", w))
    return tuple(ranked + rest)


def series_groups(pool: list[Memory]) -> list[Group]:
    """Files of one series (`x-r1.md` .. `x-r7.md`): one folder, one type, one topic prefix, and that
    subject in every member's name and description. Stores without tags keep their rounds this way."""
    series: dict[tuple[str, str, str], list[tuple[int, Memory]]] = defaultdict(list)
    for m in pool:
        match = _SERIES.match(PurePosixPath(m.key).stem)
        if match:
            series[(m.group, m.type or "", match.group("prefix").lower())].append((int(match.group("n")), m))
    groups = []
    for (_folder, _type, prefix), numbered in sorted(series.items()):
        subject = [w for w in subject_words(prefix) if w not in _TYPE_WORDS]
        if not subject:
            continue
        members = [m for _n, m in sorted(numbered, key=lambda x: (x[0], x[1].key))
                   if set(subject) & set(subject_words(m.title)) and set(subject) & set(subject_words(m.description))]
        members = members[:MAX_GROUP]
        if len(members) < 2 or any(_titles_conflict(members[0], m) for m in members[1:]):
            continue
        rounds = [_SERIES.match(PurePosixPath(m.key).stem).group("n") for m in members]  # type: ignore[union-attr]
        groups.append(
            Group(
                members=tuple(m.key for m in members),
                reason=f"{len(members)} {members[0].type} memories of one series '{prefix}' (rounds {', '.join(rounds)}) "
                f"with the same subject in name and description",
                shared=(" ".join(subject),),
            )
        )
    return groups


def claude_groups(corpus: Corpus, outcome: Outcome) -> list[Group]:
    busy = busy_keys(corpus, outcome)
    pool = [m for m in corpus.memories if m.key not in busy and not m.pinned and m.type and m.has_frontmatter]
    series = series_groups(pool)
    in_series = {k for g in series for k in g.members}
    pool = [m for m in pool if m.key not in in_series]
    by_key = {m.key: m for m in pool}
    features = {m.key: claude_words(m) for m in pool}
    folder_size = Counter(m.group for m in corpus.memories)
    # The document-frequency cap depends on the folder; index each folder on its own.
    pairs: set[tuple[str, str]] = set()
    for folder in sorted({m.group for m in pool}):
        members = [m for m in pool if m.group == folder]
        cap = max(3, min(MAX_TAG_DF, int(CLAUDE_MAX_DF * folder_size[folder])))
        pairs |= _index_pairs(members, features, cap)
    edges, partners = [], set()
    for a, b in sorted(pairs):
        ma, mb = by_key[a], by_key[b]
        if ma.type != mb.type:
            continue
        shared = features[a] & features[b]
        smaller = min(len(features[a]), len(features[b]))
        if len(shared) < CLAUDE_MIN_SHARED or not smaller or len(shared) / smaller < CLAUDE_OVERLAP:
            continue
        if _titles_conflict(ma, mb):
            continue
        partners.add((a, b))
        edges.append(_Edge(a, b, True, len(shared) / smaller, False, len(shared)))
    groups = []
    for keys in _grow(edges, partners):
        members = merge_order(by_key[k] for k in keys)
        common = frozenset.intersection(*(features[m.key] for m in members))
        share = min(len(features[a.key] & features[b.key]) / min(len(features[a.key]), len(features[b.key]))
                    for i, a in enumerate(members) for b in members[i + 1 :])
        groups.append(
            Group(
                members=tuple(m.key for m in members),
                reason=f"{len(members)} {members[0].type} memories in one folder share at least {round(share * 100)}% of their "
                f"significant words ({', '.join(_words_in_order(common, members)[:6] or sorted(common)[:6])})",
                shared=_ordered(common, members),
            )
        )
    return sorted(series + groups, key=lambda g: g.members)
