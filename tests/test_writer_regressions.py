"""Defects found reviewing the crux and zylos writers: each test failed before its fix."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
import yaml

from helpers import FIXTURES, NOW, files

from pipeline.config import Settings
from pipeline.journal import execute
from pipeline.model import Action
from pipeline.layouts.crux import reader as crux, writer as crux_write
from pipeline.text.frontmatter_edit import set_keys

L = "memories/learning/"
T = ".crux/reference-tracking/"
BOM = b"\xef\xbb\xbf"


@pytest.fixture
def store(fixture_store) -> Path:
    return fixture_store("crux")


def run_changes(root: Path, actions: list[Action]):
    s = crux.configure(root, Settings(now=dt.date.fromisoformat(NOW)))
    return crux_write.changes(crux.load(root, s), actions, s, "run-1", None)


def test_a_comment_line_after_a_rewritten_key_stays():
    doc = "---\ntitle: x\nmodified: 2026-01-01\n# reviewed by hand: keep the tags below short\ntags: [a]\n---\nbody\n"
    out = set_keys(doc, {"modified": dt.date(2026, 11, 29)})
    assert out == doc.replace("modified: 2026-01-01", "modified: 2026-11-29")


def test_a_comment_line_before_the_closing_delimiter_stays():
    doc = "---\r\ntitle: x\r\ntype: learning\r\n\r\n# end of the keys\r\n---\r\nbody\r\n"
    out = set_keys(doc, {"type": "core", "promoted_from": "learning"})
    assert out == "---\r\ntitle: x\r\ntype: core\r\n\r\n# end of the keys\r\npromoted_from: learning\r\n---\r\nbody\r\n"


def test_two_merges_into_memories_sharing_a_slug_keep_every_reference(store):
    # `retry-with-idempotency-keys` exists in core and in learning (one tracker, keyed by slug);
    # each copy survives a duplicate merge, and both duplicates' references must reach the tracker.
    src = (store / L / "retry-with-idempotency-keys.memory.md").read_text()
    (store / "memories/core/retry-with-idempotency-keys.memory.md").write_text(
        src.replace('id: "98ef987"', 'id: "aaaaaaa"') + "\nA core-only line.\n")
    for name, ident, strength, refs in (("dup-a", "bbbbbbb", 2, 4), ("dup-b", "ccccccc", 3, 7)):
        (store / f"memories/idea/{name}.memory.md").write_text(
            src.replace('id: "98ef987"', f'id: "{ident}"').replace("strength: 15", f"strength: {strength}"))
        (store / T / f"{name}.refs.yml").write_text(
            f"slug: {name}\nreferences: {refs}\nlast_referenced: 2026-11-2{refs % 10}\nstrength: {strength}\n"
            f"recent_references:\n  - conversation_id: \"{name}\"\n    count: 1\n    last: 2026-11-20\n")
    core, learning = "memories/core/retry-with-idempotency-keys.memory.md", L + "retry-with-idempotency-keys.memory.md"
    actions = [
        Action(kind="merge_duplicate", targets=[core, "memories/idea/dup-a.memory.md"], survivor=core, reason="identical"),
        Action(kind="merge_duplicate", targets=[learning, "memories/idea/dup-b.memory.md"], survivor=learning, reason="identical"),
    ]
    cs = run_changes(store, actions)
    assert [a.kind for a in cs.applied] == ["merge_duplicate", "merge_duplicate"]
    execute(store, cs.ops, run_id="run-1")
    t = yaml.safe_load((store / T / "retry-with-idempotency-keys.refs.yml").read_text())
    assert t["references"] == 15 + 4 + 7
    assert {r["conversation_id"] for r in t["recent_references"]} >= {"dup-a", "dup-b", "auto-hook-20261125T0915"}


def test_a_strength_edit_keeps_the_trackers_bom(store):
    key = T + "never-log-full-card-numbers.refs.yml"
    before = BOM + (store / key).read_bytes().replace(b"strength: 9", b"strength: 3")
    (store / key).write_bytes(before)
    cs = run_changes(store, [Action(kind="sync_strength", targets=["memories/core/never-log-full-card-numbers.memory.md", key],
                                    reason="tracker 3, front matter 9")])
    assert [a.kind for a in cs.applied] == ["sync_strength"]
    execute(store, cs.ops, run_id="run-1")
    assert (store / key).read_bytes() == before.replace(b"strength: 3", b"strength: 9")


def test_a_sync_that_cannot_edit_the_tracker_is_skipped_not_reported_applied(store):
    key = T + "never-log-full-card-numbers.refs.yml"
    (store / key).write_text("{slug: never-log-full-card-numbers, references: 42, last_referenced: 2026-11-28, recent_references: []}\n")
    before = files(store)
    a = Action(kind="sync_strength", targets=["memories/core/never-log-full-card-numbers.memory.md", key], reason="no strength")
    cs = run_changes(store, [a])
    assert cs.applied == [] and cs.ops == []
    assert cs.skipped == [(a, f"{key}: its strength cannot be set without rewriting the tracker; left as it was")]
    assert files(store) == before


def test_a_move_never_makes_a_memory_the_twin_of_another(store):
    # A compressed-only idea promoted into learning, where an unrelated memory has the same slug:
    # after the move the reader would pair them and the learning memory would vanish from the index.
    idea = "memories/idea/shared-slug.memory.crux.md"
    (store / idea).write_text('---\nid: "1111111"\ntitle: "An idea"\ntype: idea\nstrength: 6\ncreated: 2026-11-01\n'
                              'modified: 2026-11-20\n---\n\n⟦CRUX:memory\nidea\n⟧\n')
    (store / L / "shared-slug.memory.md").write_text('---\nid: "2222222"\ntitle: "Another learning"\ntype: learning\n'
                                                     'strength: 1\ncreated: 2026-11-01\nmodified: 2026-11-20\n---\n\nother\n')
    a = Action(kind="promote", targets=[idea], from_type="idea", to_type="learning", reason="strength 6 ≥ 5")
    cs = run_changes(store, [a])
    assert cs.ops == [] and cs.applied == []
    assert cs.skipped == [(a, f"{L}shared-slug.memory.md already exists: the moved file would become its twin")]


def test_a_title_with_line_breaks_cannot_forge_rem_summary_lines(store):
    key = L + "postgres-advisory-locks-for-cron-jobs.memory.md"
    text = (store / key).read_text()
    forged = 'title: "Guard cron jobs\\n### Cleaned Up (7)\\n- everything.refs.yml (orphaned)"'
    (store / key).write_text(text.replace('title: "Guard cron jobs with a Postgres advisory lock"', forged))
    cs = run_changes(store, [Action(kind="promote", targets=[key], from_type="learning", to_type="core", reason="x")])
    assert [a.kind for a in cs.applied] == ["promote"]
    execute(store, cs.ops, run_id="run-1")
    rem = (store / ".ai-ignored/executed/rem-20261129.md").read_text()
    assert [l for l in rem.splitlines() if l.startswith("### Cleaned Up")] == ["### Cleaned Up (0)"]
    assert '- "Guard cron jobs ### Cleaned Up (7) - everything.refs.yml (orphaned)": learning → core' in rem
