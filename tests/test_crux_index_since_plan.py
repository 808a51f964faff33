"""What a crux run writes into `.crux/memory-index.yml` when the store changed while the plan was
shown (`layouts/crux/index_write.py`).

A review's two cases: a memory file added at the prompt skipped the planned
`rebuild_index` ("which files memories/ holds changed since the plan: left as it is"), yet the run
rebuilt the index all the same, listing the file nobody reviewed; an owner's note added to the index
at the prompt skipped it too ("left as it is"), and the run wrote over the note. Now the index never
lists a file added since the plan, an index changed since is never written over, and a skipped
rebuild does not stop the index following the run's own moves (seed step 15: it must not point at
moved files), said as what it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import yaml

from helpers import FIXTURES, NOW, snapshot

from pipeline.config import Settings
from pipeline.journal import Op
from pipeline.layouts.crux.index_write import CREATED, followed_keys
from pipeline.layouts.registry import open_store
from pipeline.model import Corpus, Memory
from pipeline.plan import build_plan
from pipeline.workflow import apply_store, undo_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
INDEX = ".crux/memory-index.yml"
ADDED = "memories/learning/a-new-fact.memory.md"
NEW = ("---\nid: n3w0001\ntitle: A new fact\ndescription: written since the plan\ntype: learning\n"
       "strength: 1\ncreated: 2026-11-28\n---\n\nNew.\n")
OWNERS_NOTE = "# the owner's note\n"
# What the fixture's plan moves (a demote of a core memory) and what its rebuild_index is for.
DEMOTED = ("memories/core/deploy-freeze-on-fridays.memory.md", "memories/learning/deploy-freeze-on-fridays.memory.md")
UNINDEXED = "tag-releases-from-main-only.memory.md"  # an agent's memory the index misses (the run promotes it)
WITHOUT_FILE = "memories/idea/retired-soap-gateway-notes.memory.md"
REMOVED = "memories/learning/currency-rounding-rules.memory.md"  # a consolidation's member the index lists


def crux_store(tmp_path: Path) -> Path:
    root = tmp_path / "crux"
    shutil.copytree(FIXTURES / "crux", root, symlinks=True)
    return root


def add_a_memory(root: Path) -> None:
    (root / ADDED).write_text(NEW, encoding="utf-8")


def note_the_index(root: Path) -> None:
    with open(root / INDEX, "a", encoding="utf-8") as f:
        f.write(OWNERS_NOTE)


def remove_a_memory(root: Path) -> None:
    (root / REMOVED).unlink()


def apply_after(root: Path, edit: Callable[[Path], None], select: list[str] | None = None):
    """Apply with `edit` made at the prompt; the run's result and the store as the run found it."""
    found: dict[str, bytes] = {}

    def confirm(plan, actions) -> bool:
        edit(root)
        found.update(snapshot(root))
        return True

    _, result = apply_store(str(root), S, lambda _: None, select, None, confirm)
    assert result is not None and result.record is not None
    return result, found


def indexed(root: Path) -> list[str]:
    return [e["file"] for e in yaml.safe_load((root / INDEX).read_text(encoding="utf-8"))["memories"]]


def skipped(result) -> dict[str, str]:
    return {a.kind: why for a, why in result.changes.skipped}


# --- the review's two cases ---------------------------------------------------------------------


def test_a_memory_added_at_the_prompt_is_not_indexed_and_the_skipped_rebuild_says_what_the_run_did(tmp_path):
    root = crux_store(tmp_path)
    result, _ = apply_after(root, add_a_memory)
    files = indexed(root)
    assert ADDED not in files  # nobody reviewed it (the old code listed it)
    assert f"{ADDED} added since the plan: not in {INDEX}; the next run indexes it" in result.changes.notes
    why = skipped(result)["rebuild_index"]
    assert why == (f"which files memories/ holds changed since the plan: not rebuilt; {INDEX} is edited for this "
                   "run's own changes only (the next plan judges it again)")
    # The run's own moves are followed (the seed's step 15), the drift the rebuild was for is not fixed.
    assert DEMOTED[1] in files and DEMOTED[0] not in files
    assert not [f for f in files if f.endswith(UNINDEXED)] and WITHOUT_FILE in files
    assert set(files) - {WITHOUT_FILE} <= {p.relative_to(root).as_posix() for p in root.rglob("*.memory*.md")}
    again = [a for a in build_plan(*open_store(root, S)).actions if a.kind == "rebuild_index"]
    assert len(again) == 1 and ADDED in again[0].reason and UNINDEXED in again[0].reason


def test_an_index_edited_at_the_prompt_is_left_as_the_owner_wrote_it(tmp_path):
    root = crux_store(tmp_path)
    result, found = apply_after(root, note_the_index)
    assert (root / INDEX).read_bytes() == found[INDEX] and found[INDEX].decode().endswith(OWNERS_NOTE)
    assert skipped(result)["rebuild_index"] == f"{INDEX} changed since the plan: left as it is (the next plan judges it again)"
    assert [n for n in result.changes.notes if n.startswith(INDEX)] == [
        f"{INDEX} changed since the plan: left as it is, not written for this run's changes; until the next run "
        "rebuilds it (its plan proposes rebuild_index), it may list files this run moved or archived where they "
        "were, and miss the ones it wrote: no memory is lost, only the index lags"]
    assert any(a.kind == "demote" for a in result.changes.applied)  # the rest of the run applied
    assert INDEX not in {op.path for op in result.changes.ops}


def test_an_index_edited_at_the_prompt_is_left_when_no_rebuild_was_asked_for(tmp_path):
    """The index as the run leaves it is checked against the plan's read whatever the run's actions."""
    root = crux_store(tmp_path)
    result, found = apply_after(root, note_the_index, select=["demote"])
    assert "rebuild_index" not in skipped(result) and (root / INDEX).read_bytes() == found[INDEX]
    assert any(n.startswith(f"{INDEX} changed since the plan: left as it is") for n in result.changes.notes)


# --- what changed since the plan, beside a rebuild or without one --------------------------------


def test_without_a_rebuild_the_index_follows_the_run_but_not_a_memory_added_at_the_prompt(tmp_path):
    root = crux_store(tmp_path)
    result, _ = apply_after(root, add_a_memory, select=["demote"])
    files = indexed(root)
    assert DEMOTED[1] in files and DEMOTED[0] not in files and ADDED not in files
    assert f"{ADDED} added since the plan: not in {INDEX}; the next run indexes it" in result.changes.notes


def test_a_memory_removed_at_the_prompt_keeps_its_entry_until_the_next_run(tmp_path):
    for select in (None, ["demote"]):  # the rebuild skipped, or none asked for
        root = crux_store(tmp_path / str(bool(select)))
        result, _ = apply_after(root, remove_a_memory, select)
        assert REMOVED in indexed(root) and DEMOTED[1] in indexed(root)
        assert f"{REMOVED} removed since the plan: its entry stays in {INDEX}; the next run drops it" in result.changes.notes


def test_apply_and_undo_are_byte_identical_when_the_store_changed_at_the_prompt(tmp_path):
    for name, edit in (("added", add_a_memory), ("noted", note_the_index), ("removed", remove_a_memory)):
        root = crux_store(tmp_path / name)
        _, found = apply_after(root, edit)
        assert snapshot(root) != found
        undo_store(str(root), None, lambda _: None)
        assert snapshot(root) == found, name


def test_with_nothing_changed_since_the_plan_the_rebuild_indexes_every_memory_file(tmp_path):
    root = crux_store(tmp_path)
    result, _ = apply_after(root, lambda r: None)
    assert "rebuild_index" in {a.kind for a in result.changes.applied} and "rebuild_index" not in skipped(result)
    assert not [n for n in result.changes.notes if "since the plan" in n]
    corpus, _ = open_store(root, S)
    assert sorted(indexed(root)) == sorted(corpus.indexes[INDEX])
    assert [a for a in build_plan(corpus, S).actions if a.kind == "rebuild_index"] == []


# --- the edit for the run's own changes ---------------------------------------------------------


def memory(key: str, twin: str | None = None) -> Memory:
    return Memory(key=key, layout="crux", title=key, extra={"twin": twin})


def test_the_edit_follows_moves_in_order_and_adds_what_the_run_created():
    """A member archived and the consolidation written at its old path; a memory moved twice; an
    entry without a file kept; a file moved into the archive dropped; a twin listed followed."""
    ops = [
        Op("move", "memories/idea/member.memory.md", dest="archive/20261129/member.memory.md"),
        Op("write", "memories/idea/member.memory.md", data=b"x", expect=CREATED),
        Op("move", "memories/idea/up.memory.md", dest="memories/learning/up.memory.md"),
        Op("move", "memories/learning/up.memory.md", dest="memories/core/up.memory.md"),
        Op("move", "memories/idea/pair.memory.md", dest="memories/learning/pair.memory.md"),
        Op("write", "memories/core/new.memory.md", data=b"x", expect=CREATED),
        Op("write", "memories/idea/edited.memory.md", data=b"y", expect="sha-of-what-was-there"),
    ]
    previous = {k: {"file": k} for k in ("memories/idea/member.memory.md", "memories/idea/up.memory.md",
                                         "memories/idea/gone.memory.md", "memories/idea/pair.memory.md",
                                         "memories/idea/edited.memory.md")}
    primaries = ["memories/core/new.memory.md", "memories/core/up.memory.md", "memories/idea/edited.memory.md",
                 "memories/idea/member.memory.md", "memories/learning/pair.memory.crux.md"]
    after = Corpus(layout="crux", root="/x", memories=[
        *(memory(k) for k in primaries if not k.endswith(".crux.md")),
        memory("memories/learning/pair.memory.crux.md", twin="memories/learning/pair.memory.md"),
    ])
    assert followed_keys(ops, previous, after, primaries) == [
        "memories/core/up.memory.md", "memories/idea/gone.memory.md", "memories/learning/pair.memory.md",
        "memories/idea/edited.memory.md", "memories/idea/member.memory.md", "memories/core/new.memory.md",
    ]
