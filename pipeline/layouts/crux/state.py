"""What the crux writer knows while it works through a run: where each memory is now, what will be
set in its front matter, which files and trackers are archived, and what went into the summary.

One `Run` per apply. The action handlers (`crux_actions`, `crux_content`) ask it whether a memory
can still be changed and tell it what they changed; `crux_write` turns the result into ops.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Collection, Sequence

from ...kinds import FindingKind
from ...changes import ChangeSet
from ...config import Settings
from ...model import Action, Corpus, Memory, Tracker
from .rules.common import trackers_by_slug
from .overlay import Overlay
from .reader import memory_names
from .render import append_note
from ...storage.files import Unreadable
from ...text.frontmatter_edit import set_keys
from ...text.lines import decode_utf8, encode_utf8
from ...storage.since_plan import changed_since_plan
from ...storage.text_edits import EditRefused, Fields, edit_text

TRACKER_SUFFIX = ".refs.yml"


@dataclass(eq=False)
class Live:
    """One memory of the corpus and what this run does to it."""

    m: Memory
    path: str  # where its primary file is now (after a move in this run)
    twin: str | None
    updates: dict[str, Any] = field(default_factory=dict)  # front-matter keys set on both files
    notes: list[str] = field(default_factory=list)  # lines appended to both bodies
    strength: int | None = None  # front-matter strength after this run
    retired_by: str | None = None  # the action kind that archived it
    moved_by: str | None = None  # the action kind that moved it to another type folder
    tracker_merge: list[Tracker] = field(default_factory=list)  # trackers merged into its own
    tracker_sync: bool = False  # a sync_strength action named its tracker
    text_edits: dict[str, Fields] = field(default_factory=dict)  # file -> in-place replacements (`edits.py`)

    @property
    def files(self) -> list[str]:
        return [self.path] + ([self.twin] if self.twin else [])

    @property
    def untouched(self) -> bool:
        return not (self.retired_by or self.moved_by or self.updates or self.notes or self.tracker_merge or self.text_edits)


@dataclass
class Summary:
    """What the REM summary reports, in the seed's sections."""

    promotions: list[tuple[str, str, str]] = field(default_factory=list)
    demotions: list[tuple[str, str, str]] = field(default_factory=list)
    archived: list[tuple[str, str, str]] = field(default_factory=list)  # title, old type, note
    consolidated: list[dict[str, Any]] = field(default_factory=list)
    rebalanced: list[tuple[str, int, int, str]] = field(default_factory=list)
    compressed: list[tuple[str, int, int, int]] = field(default_factory=list)
    strength: list[tuple[str, int | None, int]] = field(default_factory=list)
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)


class Run:
    def __init__(self, corpus: Corpus, settings: Settings, run_id: str) -> None:
        self.corpus = corpus
        self.settings = settings
        self.crux = settings.crux
        self.now: dt.date = settings.now
        self.day = self.now.strftime("%Y%m%d")
        self.run_id = run_id
        self.root = Path(corpus.root)
        self.ov = Overlay(self.root, settings.max_file_bytes, lister=memory_names)  # a memory folder's listing: what a rebuild indexes
        self.out = ChangeSet()
        self.summary = Summary()
        self.unreadable = {t for f in corpus.findings if f.kind == FindingKind.PARSE_ERROR for t in f.targets}
        self.trackers = trackers_by_slug(corpus)
        self.archived_trackers: set[str] = set()
        self.lives: dict[str, Live] = {}
        self.by_file: dict[str, Live] = {}
        for m in sorted(corpus.memories, key=lambda m: m.key):
            live = Live(m=m, path=m.key, twin=m.extra.get("twin"), strength=m.strength)
            self.lives[m.key] = live
            for f in live.files:
                self.by_file[f] = live
        self.archive_dir = f"{self.crux.storage.compressionSourceArchive}/{self.day}"

    # --- outcomes -----------------------------------------------------------------------------

    def applied(self, action: Action) -> None:
        self.out.applied.append(action)

    def skip(self, action: Action, why: str) -> None:
        self.out.skipped.append((action, why))

    def changed_since_plan(self, action: Action) -> str | None:
        """Why the action must not run: a file it was judged on no longer holds the bytes the plan
        read (an agent wrote it while the plan was shown or the model consulted), or None. Paths an
        earlier action of this run moved or wrote are left to the handler, which says why."""
        return changed_since_plan(action, self.ov.disk.state, unchecked=self.ov.state)

    # --- finding memories ---------------------------------------------------------------------

    def resolve(self, key: str) -> Live | str:
        """The memory a target names, or why it cannot be changed."""
        if key in self.unreadable:
            return f"{key}: unreadable file: left untouched"
        live = self.by_file.get(key)
        if live is None:
            return f"{key}: not a memory file of this store"
        twin = live.m.extra.get("twin")
        for f in [live.m.key] + ([twin] if twin else []):
            if f in self.unreadable:
                return f"{key}: its twin {f} is unreadable: left untouched"
            if (self.root / f).is_symlink():
                return f"{key}: {f} is a symlink: left untouched"
        return live

    def live_users(self, slug: str, besides: Collection[str] = ()) -> list[Live]:
        """Memories that will still exist with this slug (they share its tracker)."""
        return [
            x for k, x in self.lives.items() if x.m.slug == slug and not x.retired_by and k not in besides
        ]

    # --- paths --------------------------------------------------------------------------------

    def tracker_path(self, slug: str) -> str:
        return f"{self.crux.trackingDir}/{slug}{TRACKER_SUFFIX}"

    def tracker_of(self, slug: str) -> Tracker | None:
        t = self.trackers.get(slug)
        return None if t is None or t.key in self.archived_trackers else t

    def tracker_problem(self, slug: str) -> str | None:
        """Why the tracker of `slug` must not be touched (unreadable, a symlink), or None."""
        t = self.trackers.get(slug)
        for path in dict.fromkeys([self.tracker_path(slug)] + ([t.key] if t else [])):
            if path in self.unreadable:
                return f"its tracker {path} is unreadable: left untouched"
            if (self.root / path).is_symlink():
                return f"its tracker {path} is a symlink: left untouched"
        return None

    def archive_target(self, path: str, sub: str = "") -> str:
        name = PurePosixPath(path).name
        folder = f"{self.archive_dir}/{sub}" if sub else self.archive_dir
        return self.ov.free_variant(f"{folder}/{name}")

    def archive_ok(self) -> str | None:
        """Why archiving is impossible: the archive folder must not be read back as live memories."""
        folders = [self.crux.storage.memoriesDir, self.crux.storage.agentMemoriesDir, self.crux.trackingDir]
        arch = PurePosixPath(self.archive_dir)
        for f in folders:
            p = PurePosixPath(f)
            if f in (".", "") or arch == p or p in arch.parents:
                return f"the archive folder {self.archive_dir} is inside {f}: archived files would be read back"
        return None

    def add_created(self, path: str, fm: dict[str, Any], size: int, like: Memory, kind: str) -> Live:
        """A memory this run writes (a consolidation's output), so a later action of the same run
        (the compression of the merged file) can find it."""
        m = Memory(
            key=path,
            layout="crux",
            title=str(fm.get("title") or ""),
            type=fm.get("type") if isinstance(fm.get("type"), str) else None,
            strength=fm.get("strength") if isinstance(fm.get("strength"), int) else None,
            group=like.group,
            extra={**{k: like.extra.get(k) for k in ("scope", "agent")}, "twin": None, "size": size, "created_by": kind},
        )
        live = Live(m=m, path=path, twin=None, strength=m.strength)
        self.lives[path] = live
        self.by_file[path] = live
        return live

    # --- changes ------------------------------------------------------------------------------

    def archive_memory(self, live: Live, kind: str) -> list[tuple[str, str]]:
        """Move the memory (and its twin) into the dated archive folder, bytes unchanged."""
        moved = []
        for f in live.files:
            dest = self.archive_target(f)
            self.ov.move(f, dest)
            moved.append((f, dest))
        live.retired_by = kind
        return moved

    def archive_tracker(self, slug: str) -> Tracker | None:
        """Archive the tracker of `slug` unless another memory still uses it; returns it."""
        t = self.tracker_of(slug)
        if t is None or self.live_users(slug):
            return None
        self.ov.move(t.key, self.archive_target(t.key, "trackers"))
        self.archived_trackers.add(t.key)
        return t

    def text_of(self, path: str) -> tuple[str, bool]:
        data = self.ov.read(path)
        if data is None:
            raise Unreadable(f"{path} is gone")
        return decode_utf8(data)

    def edited(self, path: str, updates: dict[str, Any], notes: Sequence[str], edits: Fields | None = None) -> bytes:
        text, bom = self.text_of(path)
        if edits:  # first: their offsets are into the text as read
            text = edit_text(text, edits, True, path)
        if updates:
            text = set_keys(text, updates)
        for line in notes:
            text = append_note(text, line)
        return encode_utf8(text, bom)

    def try_edit(self, live: Live, updates: dict[str, Any], notes: Sequence[str] = ()) -> str | None:
        """Why the memory's files cannot take these edits (with the ones already pending), or None."""
        for f in live.files:
            try:
                self.edited(f, {**live.updates, **updates}, [*live.notes, *notes], live.text_edits.get(f))
            except (Unreadable, UnicodeDecodeError, ValueError, EditRefused) as exc:
                return f"{f}: front matter cannot be edited safely ({exc})"
        return None
