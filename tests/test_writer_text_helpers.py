import datetime as dt

from hypothesis import given, strategies as st

from pipeline.layouts.crux.trackers import distribute, merge_trackers
from pipeline.storage.files import split_frontmatter
from pipeline.text.frontmatter_edit import set_keys
from pipeline.layouts.claude.memory_md import IndexItem, reach, rebuild
from pipeline.model import Tracker

DOC = """---
id: "abc1234"
title: "A title: with colon"
type: "learning"
strength: 2
created: 2026-04-27
modified: 2026-05-24

source: "spec:x"
tags: [a, b]
unknownKey: keep me
nested:
  deep: 1
reducedBy: 69%
---

  Indented body line kept.
Trailing spaces   
"""


def test_set_keys_changes_only_those_keys():
    out = set_keys(DOC, {"type": "core", "promoted_from": "learning", "modified": dt.date(2026, 11, 29)})
    old, new = split_frontmatter(DOC), split_frontmatter(out)
    assert new.body == old.body
    assert list(new.meta)[: len(old.meta)] == list(old.meta)
    assert new.meta["type"] == "core" and new.meta["promoted_from"] == "learning"
    assert new.meta["modified"] == dt.date(2026, 11, 29)
    for k in ("id", "title", "strength", "created", "source", "tags", "unknownKey", "nested", "reducedBy"):
        assert new.meta[k] == old.meta[k]
    changed = [l for l in out.splitlines() if l not in DOC.splitlines()]
    assert changed == ['type: "core"', "modified: 2026-11-29", 'promoted_from: "learning"']


def test_set_keys_replaces_multiline_values():
    doc = "---\ntags:\n  - a\n  - b\nname: x\n---\nbody\n"
    out = set_keys(doc, {"tags": ["a", "b", "c"]})
    assert split_frontmatter(out).meta == {"tags": ["a", "b", "c"], "name": "x"}


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_set_keys_round_trips_any_string(value):
    out = set_keys("---\nname: x\n---\nbody\n", {"description": value})
    assert split_frontmatter(out).meta["description"] == value


def test_memory_index_keeps_prose_and_every_entry_within_budget():
    existing = "# Agent Memory\n\nSome prose to keep.\n\n- [Old](gone.md) — removed file\n- [A](a.md) — kept hook\n\n## Notes\nMore prose.\n"
    items = [IndexItem("b.md", "B", "new hook")]
    r = rebuild(existing, "Agent", items, ["gone.md"], 17408, 90)
    assert "Some prose to keep." in r.text and "More prose." in r.text
    assert reach(r.text, ["a.md", "b.md"], lambda n: None).entries == ["a.md", "b.md"]
    # b.md has no sibling among the entries: it goes to one "Unindexed" section at the end
    assert r.text.index("[A](a.md)") < r.text.index("## Notes") < r.text.index("## Unindexed") < r.text.index("[B](b.md)")
    many = [IndexItem(f"m{i:03d}.md", f"Memory {i}", "a long hook with many words " * 8) for i in range(180)]
    big = rebuild(None, "Big", many, [], 17408, 90)
    # the hooks it writes are cut for the 17 KB target, never under 90 characters: Claude Code loads it whole
    assert 17408 < len(big.text.encode()) <= 24 * 1024
    assert big.added == sorted(i.filename for i in many)
    for line in big.text.splitlines()[2:]:
        assert line.startswith("- [") and 80 < len(line.split(" — ", 1)[1]) < 90 + 4
    assert any("new entries' hooks cut to" in w for w in big.warnings)


def test_memory_index_warns_instead_of_dropping():
    many = [IndexItem(f"memory-file-with-a-long-name-{i:04d}.md", f"A title {i}", "hook " * 30) for i in range(400)]
    r = rebuild(None, "Huge", many, [], 17408, 90)
    assert r.added == sorted(i.filename for i in many)
    assert r.warnings


def test_merge_trackers():
    a = Tracker(key="a", slug="a", references=3, last_referenced=dt.date(2026, 5, 1),
                recent_references=[{"conversation_id": f"a{i}", "last": dt.date(2026, 4, i + 1)} for i in range(8)])
    b = Tracker(key="b", slug="b", references=4, last_referenced=dt.date(2026, 6, 1),
                recent_references=[{"conversation_id": f"b{i}", "last": dt.date(2026, 5, i + 1)} for i in range(8)])
    m = merge_trackers([a, b], "ab", "t/ab.refs.yml", 5, 10)
    assert m.references == 7 and m.last_referenced == dt.date(2026, 6, 1) and m.strength == 5
    assert len(m.recent_references) == 10 and m.recent_references[0]["conversation_id"] == "b7"


@given(st.integers(0, 500), st.lists(st.integers(0, 100), min_size=1, max_size=8))
def test_distribute_preserves_the_total(total, weights):
    parts = distribute(total, weights)
    assert sum(parts) == total
    if total >= len(weights):
        assert min(parts) >= 1
