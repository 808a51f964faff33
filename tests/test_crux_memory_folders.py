"""A crux load walks each memory folder once (`reader.walk_memory_folders`): the files it reads, the
files it reports, the symlinked folders it says it did not follow, and each folder's listing that a
`rebuild_index` is judged on all come from that one walk, and agree with the writer's own listers."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from helpers import NOW, plan_json

from pipeline.config import build_settings
from pipeline.layouts.crux import reader
from pipeline.storage.files import rel
from pipeline.storage.since_plan import listing_key, listing_state

FILES = ("memories/core/a.memory.md", "memories/idea/b.memory.md", "memories/idea/b.memory.crux.md",
         "memories/agents/bot/learning/c.memory.md")


def store(tmp_path: Path) -> Path:
    root, elsewhere = tmp_path / "crux", tmp_path / "elsewhere"
    (root / ".crux").mkdir(parents=True)
    (root / ".crux/crux-memories.json").write_text(json.dumps({"flags": [{"enableMemories": "true"}]}))
    for key in FILES:
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text(f"---\ntitle: \"{Path(key).name}\"\nstrength: 1\n---\n\nBody.\n")
    (elsewhere / "goal").mkdir(parents=True)
    (elsewhere / "goal/d.memory.md").write_text("---\ntitle: \"d\"\n---\n\nBody.\n")
    os.symlink(elsewhere / "goal", root / "memories/goal")
    return root


def test_a_load_walks_each_memory_folder_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = store(tmp_path)
    walked: Counter[str] = Counter()
    walk = reader.walk_files

    def counted(top: Path, start: Path, *args):  # type: ignore[no-untyped-def]
        walked[rel(root, start)] += 1
        return walk(top, start, *args)

    monkeypatch.setattr(reader, "walk_files", counted)
    reader.load(root, build_settings({}, {"now": NOW}))
    # the trackers' folder and the archive are walked too, each once; the memory folders once each
    assert walked["memories"] == 1 and walked["memories/agents"] == 1
    assert set(walked.values()) == {1}


def test_what_the_load_reads_reports_and_fingerprints_is_what_the_writer_lists(tmp_path: Path) -> None:
    root = store(tmp_path)
    settings = build_settings({}, {"now": NOW})
    corpus = reader.load(root, settings)
    on_disk = [rel(root, p) for p in reader.memory_files(root, settings.crux)]
    assert on_disk == sorted(FILES) and corpus.extra["crux"]["memory_files"] == sorted(FILES)
    assert sorted(m.key for m in corpus.memories) == [k for k in sorted(FILES) if k != "memories/idea/b.memory.md"]
    # the symlinked type folder: said, not read
    assert [f.targets for f in corpus.findings if f.kind == "symlink_skipped"] == [["memories/goal"]]
    # each folder's listing as the writer's lister (`DiskReads`) will judge it at apply
    listings = {k: v for k, v in corpus.index_shas.items() if k.endswith("/")}
    assert listings == {listing_key(f): listing_state(reader.memory_names(root / f)) for f in ("memories", "memories/agents")}


def _automatic(plan: dict) -> list[tuple[str, tuple[str, ...]]]:
    return [(a["kind"], tuple(a["targets"])) for a in plan["actions"] if not a["needs_user"]]


def test_a_memories_folder_linked_inside_the_store_is_read(tmp_path: Path) -> None:
    """memoriesDir a symlink to another folder of the store (`memories -> data/memories`): its
    memories are read as before. A walk that refused every start folder reached through a link read
    none, called every tracker an orphan and rebuilt the index empty, all automatically."""
    root = store(tmp_path)
    (root / "data").mkdir()
    os.rename(root / "memories", root / "data/memories")
    os.symlink("data/memories", root / "memories")
    (root / ".crux/reference-tracking").mkdir(parents=True)
    (root / ".crux/reference-tracking/a.refs.yml").write_text("slug: a\nreferences: []\n")
    settings = build_settings({}, {"now": NOW})
    corpus = reader.load(root, settings)
    assert sorted(m.key for m in corpus.memories) == [k for k in sorted(FILES) if k != "memories/idea/b.memory.md"]
    assert not [k for k in _automatic(plan_json(root, "--model", "none")) if k[0] == "remove_orphan_tracker"]


def test_a_tracker_whose_memory_may_sit_behind_a_symlinked_folder_is_not_removed_automatically(tmp_path: Path) -> None:
    """memories/goal links to a folder outside the store: its memory d is not read (said: not
    followed), so d's tracker matched no memory file and a nightly run archived it as an orphan."""
    root = store(tmp_path)
    (root / ".crux/reference-tracking").mkdir(parents=True)
    (root / ".crux/reference-tracking/d.refs.yml").write_text("slug: d\nreferences: 2\nstrength: 1\n")
    removals = [a for a in plan_json(root, "--model", "none")["actions"] if a["kind"] == "remove_orphan_tracker"]
    assert [a["targets"] for a in removals] == [[".crux/reference-tracking/d.refs.yml"]]
    assert removals[0]["needs_user"] and "memories/goal not read" in removals[0]["reason"], removals[0]


def test_a_link_to_a_folder_the_walk_reads_keeps_orphan_removal_automatic(tmp_path: Path) -> None:
    """`memories/core-alias -> core`: not followed, but its memories are read through `core`; taking
    it for an unread folder made every orphan tracker the user's call, every night, for good."""
    root = store(tmp_path)
    os.symlink("core", root / "memories/core-alias")
    (root / ".crux/reference-tracking").mkdir(parents=True)
    (root / ".crux/reference-tracking/gone.refs.yml").write_text("slug: gone\nreferences: 2\nstrength: 1\n")
    (root / ".crux/reference-tracking/d.refs.yml").write_text("slug: d\nreferences: 2\nstrength: 1\n")
    removals = {a["targets"][0]: a for a in plan_json(root, "--model", "none")["actions"] if a["kind"] == "remove_orphan_tracker"}
    # memories/goal links outside the store: still unread, so still the user's call; the alias adds nothing
    assert all(a["needs_user"] and "memories/goal not read" in a["reason"] and "core-alias" not in a["reason"]
               for a in removals.values()), removals
    os.unlink(root / "memories/goal")
    removals = {a["targets"][0]: a for a in plan_json(root, "--model", "none")["actions"] if a["kind"] == "remove_orphan_tracker"}
    assert sorted(removals) == [".crux/reference-tracking/d.refs.yml", ".crux/reference-tracking/gone.refs.yml"]
    assert not any(a["needs_user"] for a in removals.values()), removals
