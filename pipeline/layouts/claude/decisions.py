"""What a claude apply will do, decided before any file operation.

`decide` reads the plan's actions (and the plan's staleness findings, `StaleInfo`: apply never
re-runs that pass) and settles which memories are archived and why, which conflict sides get a note,
which consolidated files are written, which MEMORY.md rebuilds were asked for, and each action's
outcome. Prunes come first, then merges (a pruned survivor hands over), consolidations, conflicts:
the result does not depend on the order of the actions. The writer turns it into file operations.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import yaml

from ...actions import ConflictAction, MergeDuplicateAction, outputs_of
from ...kinds import ActionKind, FindingKind
from ...model import Action, Corpus, Finding, Memory, is_entry
from .paths import _name, folder_of
from .reader import INDEX

INDEX_KINDS = ("rebuild_index", "trim_budget")


# ---------------------------------------------------------------------------------------------
# What the plan's staleness pass said about each memory


class StaleInfo:
    """The plan's `stale` findings by memory key (the writer never re-runs the staleness pass: it
    reads repositories, and what apply does must be what the plan showed). None, from a caller
    without a plan, means nothing is known to be stale."""

    def __init__(self, findings: list[Finding] | None) -> None:
        self._by_key = {f.targets[0]: f for f in findings or [] if f.kind == FindingKind.STALE and f.targets}

    def by_key(self) -> dict[str, Finding]:
        return self._by_key

    def cls(self, key: str) -> str | None:
        f = self.by_key().get(key)
        return f.class_ if f else None


# ---------------------------------------------------------------------------------------------
# The decisions, before any file operation


class Created(NamedTuple):
    """A consolidation's new file."""

    data: bytes
    title: str
    hook: str  # its description: the index entry's hook when no member had one
    members: tuple[str, ...]  # the memories it consolidates, in the plan's order: its entry takes the first listed one's place


@dataclass
class Decisions:
    retire: dict[str, str] = field(default_factory=dict)  # memory key -> why it is archived
    notes: dict[str, list[str]] = field(default_factory=dict)  # key -> other sides to note
    outcome: dict[int, str | None] = field(default_factory=dict)  # action index -> None (applied) or why skipped
    index_actions: dict[str, list[int]] = field(default_factory=dict)  # MEMORY.md key -> action indexes
    resolved: list[str] = field(default_factory=list)  # folder of each conflict resolved
    created: dict[str, Created] = field(default_factory=dict)  # new file -> what it is
    # archived memory -> the memory now holding its content (a merge's survivor, a consolidation's new
    # file): an owner's note on it in MEMORY.md points there instead of going with it
    successor: dict[str, str] = field(default_factory=dict)


def reported_by_reader(corpus: Corpus) -> dict[str, str]:
    """The reason of each `parse_error` the reader reported, by file: never moved or edited."""
    return {t: f.reason for f in corpus.findings if f.kind == FindingKind.PARSE_ERROR for t in f.targets}


def unmovable_in(corpus: Corpus, unreadable: set[str] | None = None) -> Callable[[str], str | None]:
    """Why a memory may not be moved or edited (unreadable, not a memory file, a symlink, pinned), or
    None. `unreadable`: the files of `reported_by_reader`, when the caller has them already."""
    root = Path(corpus.root)
    by_key = corpus.by_key()
    unreadable = set(reported_by_reader(corpus)) if unreadable is None else unreadable

    def unmovable(key: str) -> str | None:
        if key in unreadable:
            return "unreadable file: left untouched"
        m = by_key.get(key)
        if m is None:
            return "not a memory file of this store"
        if (root / key).is_symlink():
            return "a symlink: left untouched"
        if m.pinned:
            return "pinned"
        return None

    return unmovable


def _effective_date(m: Memory) -> tuple[dt.date | None, float | None]:
    if m.modified is not None:
        return m.modified, None
    if m.created is not None:
        return m.created, None
    if m.mtime is not None:
        return dt.datetime.fromtimestamp(m.mtime, tz=dt.timezone.utc).date(), m.mtime
    return None, None


def _older_of(a: Memory, b: Memory) -> tuple[Memory, Memory] | str:
    """(older, newer), or why that cannot be told."""
    (da, ta), (db, tb) = _effective_date(a), _effective_date(b)
    if da is None or db is None:
        undated = a.key if da is None else b.key
        return f"cannot tell which is newer: {_name(undated)} has no date"
    if da != db:
        return (a, b) if da < db else (b, a)
    if ta is not None and tb is not None and ta != tb:
        # Neither has a front-matter date: the file times decide.
        return (a, b) if ta < tb else (b, a)
    return f"cannot tell which is newer: both dated {da.isoformat()}"


def _by_file_time(a: Memory, b: Memory) -> bool:
    """Whether `_older_of(a, b)` rests on a file's modification time (a side has no front-matter
    date), which no hash of the plan covers: a `touch` changes it and no content."""
    return _effective_date(a)[1] is not None or _effective_date(b)[1] is not None


def _ref(key: str, near: str) -> str:
    """`key` as said beside `near`: its file name in the same folder, else the whole key."""
    return _name(key) if folder_of(key) == folder_of(near) else key


def _sides(a: Action, by_key: dict[str, Memory]) -> tuple[Memory, Memory] | None:
    """The two memories a conflict is between, or None when it does not name two of them."""
    sides = list(dict.fromkeys(a.targets))[:2]
    if len(sides) < 2 or any(t not in by_key for t in sides):
        return None
    return by_key[sides[0]], by_key[sides[1]]


def newer_sides(corpus: Corpus, actions: list[Action]) -> list[Action]:
    """Plan time: `actions` with each conflict whose newer side a file's modification time tells
    carrying that side (`newer`) and saying, in its reason, what `--resolve newer` archives. The
    plan decides and apply executes: the fingerprint then covers the file times too, so a pinned
    apply after a `touch` that turned the order is refused as changed, and `decide` archives the
    side the plan named or none. Conflicts dated by their front matter are left as they are (their
    dates are in the hashed content)."""
    by_key = corpus.by_key()
    out: list[Action] = []
    for a in actions:
        sides = _sides(a, by_key) if isinstance(a, ConflictAction) else None
        order = _older_of(*sides) if sides is not None and _by_file_time(*sides) else None
        if isinstance(order, tuple):
            older, newer = order
            said = (f"--resolve newer archives {_ref(older.key, newer.key)}, keeps {_ref(newer.key, older.key)} "
                    "(newer by file modification time)")
            a = a.model_copy(update={"newer": newer.key, "reason": f"{a.reason}; {said}"})
        out.append(a)
    return out


def _as_planned(a: Action, ma: Memory, mb: Memory) -> tuple[Memory, Memory] | str:
    """(older, newer) of a conflict's sides for `--resolve newer`, or why it is not resolved: the
    order cannot be told, or the plan named the other side the newer by the file times
    (`newer_sides`), which a `touch` since turned."""
    order = _older_of(ma, mb)
    planned = a.newer if isinstance(a, ConflictAction) else None
    if isinstance(order, str) or planned is None or planned == order[1].key:
        return order
    now = order[1].key
    return (f"the plan named {_ref(planned, now)} the newer by file modification time, and the file times now name "
            f"{_ref(now, planned)}: nothing archived; plan again, or resolve it by hand")


def decide(
    corpus: Corpus, actions: list[Action], resolve: str | None, unmovable: Callable[[str], str | None], stale: StaleInfo
) -> Decisions:
    by_key = corpus.by_key()
    d = Decisions()

    # 1. prunes
    for i, a in enumerate(actions):
        if a.kind != ActionKind.PRUNE_STALE:
            continue
        moved = []
        problems = []
        for t in dict.fromkeys(a.targets):
            why = unmovable(t)
            if why:
                problems.append(f"{t}: {why}")
            elif t not in d.retire:
                d.retire[t] = a.reason
                moved.append(t)
        d.outcome[i] = None if moved else ("; ".join(problems) or "already archived by another action of this run")

    # 2. merges, against the prunes: a survivor that is pruned hands over to a member that would be kept
    for i, a in enumerate(actions):
        if a.kind != ActionKind.MERGE_DUPLICATE:
            continue
        if not a.survivor or a.survivor not in a.targets:
            d.outcome[i] = "no survivor named among the targets"
            continue
        why = unmovable(a.survivor) if a.survivor not in by_key else None
        if why:
            d.outcome[i] = f"survivor {a.survivor}: {why}"
            continue
        members = [t for t in dict.fromkeys(a.targets) if t != a.survivor]
        survivor: str | None = a.survivor
        handover = ""
        if survivor in d.retire:
            # The plan named who may take over (layouts/claude/rules.hand_overs): the first still here.
            planned = (a.handover if isinstance(a, MergeDuplicateAction) else None) or []
            keepable = [t for t in planned if t in members and t not in d.retire and not unmovable(t)]
            survivor = keepable[0] if keepable else None
            handover = (
                f" (survives in place of {_ref(a.survivor, survivor)}, archived in this run)" if survivor else ""
            )
        retired = []
        problems = []
        for t in members:
            if t == survivor or t in d.retire:
                continue
            why = unmovable(t)
            if why:
                problems.append(f"{t}: {why}")
                continue
            if survivor:
                d.retire[t] = f"duplicate of {_ref(survivor, t)}{handover}"
                d.successor[t] = survivor
            else:
                d.retire[t] = f"duplicate of {_ref(a.survivor, t)}, itself archived as fully stale"
            retired.append(t)
        d.outcome[i] = None if retired else ("; ".join(problems) or "nothing left to retire")

    # 2b. consolidations: the new file is written, the members are archived
    for i, a in enumerate(actions):
        if a.kind == ActionKind.CONSOLIDATE:
            d.outcome[i] = _consolidate(corpus, a, unmovable, d)

    # 3. conflicts, against prunes and merges; their own archivals join afterwards, so the order of
    # conflicts among themselves does not matter either.
    conflict_retire: dict[str, str] = {}
    for i, a in enumerate(actions):
        if a.kind != ActionKind.CONFLICT:
            continue
        if resolve not in ("newer", "keep-both"):
            d.outcome[i] = "conflicts are applied only with --resolve newer|keep-both"
            continue
        sides = list(dict.fromkeys(a.targets))[:2]
        if len(sides) < 2:
            d.outcome[i] = "a conflict needs two memories"
            continue
        problems = [f"{t}: {why}" for t in sides if (why := unmovable(t))]
        if problems:
            d.outcome[i] = "; ".join(problems)
            continue
        gone = [t for t in sides if t in d.retire]
        if gone:
            d.outcome[i] = f"{gone[0]} is archived by another action of this run"
            continue
        ma, mb = by_key[sides[0]], by_key[sides[1]]
        if resolve == "newer":
            order = _as_planned(a, ma, mb)
            if isinstance(order, str):
                d.outcome[i] = order
                continue
            older, newer = order
            when = _effective_date(newer)[0]
            conflict_retire.setdefault(
                older.key, f"contradicted by newer {_ref(newer.key, older.key)} ({when}): {a.reason}"
            )
            d.resolved.append(folder_of(older.key))
            d.outcome[i] = None
        else:
            d.notes.setdefault(ma.key, []).append(_ref(mb.key, ma.key))
            d.notes.setdefault(mb.key, []).append(_ref(ma.key, mb.key))
            d.outcome[i] = None  # may still turn into "already noted" when the text is built
    for key, entry in conflict_retire.items():
        d.retire.setdefault(key, entry)

    # 4. index rebuilds asked for by the plan
    for i, a in enumerate(actions):
        if a.kind in INDEX_KINDS and a.targets and all(_name(t) == INDEX for t in a.targets):
            for t in a.targets:
                d.index_actions.setdefault(t, []).append(i)
        elif i not in d.outcome:
            d.outcome[i] = f"{a.kind} does not apply to claude memory folders"
    return d


def _consolidate(corpus: Corpus, a: Action, unmovable: Callable[[str], str | None], d: Decisions) -> str | None:
    """Record one consolidation in `d`; None when it applies, else why it is skipped."""
    outputs = outputs_of(a)
    if len(outputs) != 1:
        return "a claude consolidation writes exactly one file"
    out = outputs[0]
    path, meta, body = out.get("path"), out.get("frontmatter"), out.get("body")
    if not isinstance(path, str) or not isinstance(meta, dict) or not isinstance(body, str) or not path.endswith(".md"):
        return "the consolidated file has no path, front matter or body"
    members = list(dict.fromkeys(a.targets))
    if any(is_entry(t) for t in members):
        return "memories kept inside MEMORY.md are merged there, not consolidated into a new file"
    if len(members) < 2 or any(folder_of(t) != folder_of(path) for t in members):
        return "members and the consolidated file must share one memory folder"
    if _name(path) == INDEX or path in corpus.by_key() or path in d.created or (Path(corpus.root) / path).exists():
        return f"{path} exists: never overwritten"
    problems = [f"{t}: {why}" for t in members if (why := unmovable(t))]
    taken = [t for t in members if t in d.retire]
    if problems or taken:
        return "; ".join(problems) or f"{taken[0]} is archived by another action of this run"
    front = yaml.safe_dump({k: v for k, v in meta.items()}, sort_keys=False, allow_unicode=True, width=10**9)
    data = f"---\n{front}---\n\n{body.rstrip()}\n".encode()
    title = str(meta.get("name") or meta.get("title") or _name(path)[:-3])
    d.created[path] = Created(data, title, str(meta.get("description") or ""), tuple(members))
    for t in members:
        d.retire[t] = f"consolidated into {_name(path)}"
        d.successor[t] = path
    return None
