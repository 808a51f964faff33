"""The retirement cap counts the live memories, and the layout says which are archived
(`Layout.is_archived`): the plan counted every memory not typed `archived`, while a crux memory is
archived also in the `archived` type folder (`members.is_archived`: the seed's file move cut short)."""

from __future__ import annotations

from test_crux_judgement import write_store

from pipeline.config import Settings
from pipeline.layouts.base import BaseLayout
from pipeline.layouts.crux import LAYOUT as CRUX
from pipeline.layouts.registry import open_store
from pipeline.model import Memory
from pipeline.plan import build_plan


def test_a_crux_memory_left_in_archived_with_its_old_type_is_not_live_for_the_cap(tmp_path):
    """Four files the seed's file move left in archived/ still typed learning: 12 live memories, not
    16 (the cap read the type alone and let 4 archives through where 3 are a quarter)."""
    root = write_store(tmp_path / "crux", 12, trackers=True)  # 11 old memories without a tracker
    folder = root / "memories" / "archived"
    folder.mkdir()
    for i in range(4):
        (folder / f"cut-short-{i}.memory.md").write_text(
            f"---\ntitle: Cut short {i}\ntype: learning\nstrength: 1\ncreated: 2025-06-01\n---\n\nArchive {i} cut short.\n")
    corpus, settings = open_store(root, Settings(now="2026-11-29", llm={"model": "none"}))
    plan = build_plan(corpus, settings)
    [capped] = [f for f in plan.findings if f.kind == "capped"]
    assert "at most 3 of 12 live memories" in capped.reason
    assert len([a for a in plan.actions if a.kind == "archive" and not a.needs_user]) == 3
    assert [CRUX.is_archived(m) for m in corpus.memories if m.key.startswith("memories/archived/")] == [True] * 4


def test_a_layout_without_its_own_answer_calls_a_memory_archived_by_its_type():
    assert BaseLayout().is_archived(Memory(key="a.md", layout="x", type="archived"))
    assert not BaseLayout().is_archived(Memory(key="archived/a.md", layout="x", type="learning"))
