"""Issue 11, items 1-7: Claude Code memory folders built the way the wild ones are (text written
here, never copied from ../shared), read as Claude Code reads them and rebuilt as an edit."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from helpers import NOW, apply_json, plan_json, run_cli, snapshot

from pipeline.actions import MergeDuplicateAction
from pipeline.config import Settings
from pipeline.layouts.claude import memory_md, reader, writer
from pipeline.layouts.registry import open_store
from pipeline.text.lenient_frontmatter import parse_lines, split_frontmatter_lenient

AGENT = ".claude/agent-memory/planner/"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def topic(name: str, description: str, body: str = "", kind: str = "project") -> str:
    body = body or f"Notes on {name}."  # distinct bodies: identical ones would merge
    return f"---\nname: {name}\ndescription: {description}\ntype: {kind}\n---\n\n{body}\n"


def actions(plan: dict, kind: str) -> list[dict]:
    return [a for a in plan["actions"] if a["kind"] == kind]


def findings(plan: dict, kind: str) -> list[dict]:
    return [f for f in plan["findings"] if f["kind"] == kind]


# ---------------------------------------------------------------------------------------------
# 1. front matter strict YAML rejects


def test_lenient_parser_reads_what_yaml_rejects():
    meta = parse_lines(
        'name: "Ledger rewards" then the epoch boundary\n'
        "description: Reward flow: snapshot, pulse, distribution\n"
        "metadata:\n  type: reference\n  origin: session: 4f2\n"
        "tags:\n  - ledger\n  - rewards\n"
    )
    assert meta == {
        "name": '"Ledger rewards" then the epoch boundary',
        "description": "Reward flow: snapshot, pulse, distribution",
        "metadata": {"type": "reference", "origin": "session: 4f2"},
        "tags": ["ledger", "rewards"],
    }
    assert parse_lines('name: "wholly quoted: yes"')["name"] == "wholly quoted: yes"
    assert parse_lines("just prose, no key\n") is None


def test_yaml_stays_first_and_real_breakage_stays_a_parse_error():
    fm, lenient = split_frontmatter_lenient("---\nname: plain\ncount: 3\n---\nbody\n")
    assert not lenient and fm.meta == {"name": "plain", "count": 3}
    fm, lenient = split_frontmatter_lenient("---\ndescription: a: b\n---\nbody\n")
    assert lenient and fm.meta == {"description": "a: b"} and fm.body == "body\n"


def test_front_matter_claude_code_reads_is_never_a_parse_error(tmp_path):
    folder = tmp_path / AGENT
    write(folder / "MEMORY.md", "# Planner\n\n- [Rewards](rewards.md) — reward flow\n- [Quoted](quoted.md) — naming\n- [Broken](broken.md) — list\n")
    write(folder / "rewards.md", "---\nname: Rewards\ndescription: Reward flow: snapshot timing, pulse spreading\ntype: reference\n---\n\nBody.\n")
    write(folder / "quoted.md", '---\nname: "Quoted" style names for the planner\nmetadata:\n  type: feedback\n---\n\nBody.\n')
    write(folder / "broken.md", "---\nname: broken\ndescription: [never closed\n---\n\nBody.\n")
    corpus, _ = open_store(tmp_path, Settings())
    by = corpus.by_key()
    assert by[AGENT + "rewards.md"].description == "Reward flow: snapshot timing, pulse spreading"
    assert by[AGENT + "rewards.md"].type == "reference" and by[AGENT + "rewards.md"].has_frontmatter
    assert by[AGENT + "quoted.md"].title == '"Quoted" style names for the planner'
    assert by[AGENT + "quoted.md"].type == "feedback"
    # a flow list YAML could not close is malformed, not merely unquoted: the fallback refuses it
    assert [f.targets for f in corpus.findings if f.kind == "parse_error"] == [[AGENT + "broken.md"]]


# ---------------------------------------------------------------------------------------------
# 2. a store is any folder holding MEMORY.md; in-repository symlinks followed once


def test_a_store_outside_dot_claude_is_found_and_a_symlink_to_it_read_once(tmp_path):
    write(tmp_path / "agent-memory-src/MEMORY.md", "# Memory\n\n- [Lanes](lanes.md) — edits land through a lane\n")
    write(tmp_path / "agent-memory-src/lanes.md", topic("lanes", "edits land through a lane clone"))
    (tmp_path / ".claude").mkdir()
    os.symlink("../agent-memory-src", tmp_path / ".claude/agent-memory")
    os.symlink("../nowhere", tmp_path / ".claude/old-memory")  # dangling
    os.symlink("..", tmp_path / "agent-memory-src/loop")  # a loop back up the tree
    corpus, _ = open_store(tmp_path, Settings())
    assert [m.key for m in corpus.memories] == ["agent-memory-src/lanes.md"]
    skipped = {f.targets[0]: f.reason for f in corpus.findings if f.kind == "symlink_skipped"}
    assert list(skipped) == [".claude/old-memory"] and "dangling" in skipped[".claude/old-memory"]


def test_a_store_reached_only_through_an_in_repository_symlink_is_followed(tmp_path):
    # the real folder sits where the walk never goes (node_modules); the link is how Claude Code reaches it
    write(tmp_path / "node_modules/shared-memory/MEMORY.md", "- [Ports](ports.md) — dev ports\n")
    write(tmp_path / "node_modules/shared-memory/ports.md", topic("ports", "the dev server ports"))
    (tmp_path / ".claude").mkdir()
    os.symlink("../node_modules/shared-memory", tmp_path / ".claude/agent-memory")
    corpus, _ = open_store(tmp_path, Settings())
    assert [m.key for m in corpus.memories] == [".claude/agent-memory/ports.md"]


def test_a_symlink_leaving_the_repository_is_a_finding_not_a_failure(tmp_path):
    outside = tmp_path / "elsewhere"
    write(outside / "MEMORY.md", "- [Secret](secret.md) — not ours\n")
    write(outside / "secret.md", topic("secret", "not ours"))
    root = tmp_path / "repo"
    write(root / ".claude/memory/MEMORY.md", "- [Mine](mine.md) — ours\n")
    write(root / ".claude/memory/mine.md", topic("mine", "ours"))
    os.symlink(outside, root / ".claude/agent-memory")
    plan = plan_json(root, "--model", "none")
    assert [f["targets"] for f in findings(plan, "symlink_skipped")] == [[".claude/agent-memory"]]
    assert "outside" in findings(plan, "symlink_skipped")[0]["reason"]
    assert plan["memories"] == 1


# ---------------------------------------------------------------------------------------------
# 3. MEMORY.md holding the memories itself

INLINE = """# Tester memory

## Selectors
- Prefer role-based locators; CSS classes change with every restyle.
- Wait for the network to go idle before reading dashboard totals.

## Flaky specs
- Prefer role-based locators; CSS classes change with every restyle.
- The checkout spec fails under parallel runs with the refund spec.
  It shares the seeded cart fixture.

Retries hide failures: keep them at zero on CI and fix the spec.
"""


def test_memory_md_only_store_reads_one_memory_per_bullet_and_paragraph(tmp_path):
    write(tmp_path / ".claude/agent-memory/tester/MEMORY.md", INLINE)
    corpus, _ = open_store(tmp_path, Settings())
    index = ".claude/agent-memory/tester/MEMORY.md"
    assert [m.key for m in corpus.memories] == [
        f"{index}#flaky-specs/1", f"{index}#flaky-specs/2", f"{index}#flaky-specs/3",
        f"{index}#selectors/1", f"{index}#selectors/2",
    ]
    nested = corpus.by_key()[f"{index}#flaky-specs/2"]
    assert nested.body.endswith("It shares the seeded cart fixture.")  # the nested line belongs to its bullet


def test_duplicates_inside_memory_md_are_cut_in_place_archived_and_undoable(tmp_path):
    index = tmp_path / ".claude/agent-memory/tester/MEMORY.md"
    write(index, INLINE)
    before = snapshot(tmp_path)
    plan = plan_json(tmp_path, "--model", "none")
    merges = actions(plan, "merge_duplicate")
    assert len(merges) == 1 and all("MEMORY.md#" in t for t in merges[0]["targets"])
    out = apply_json(tmp_path)
    assert [a["kind"] for a in out["applied"]] == ["merge_duplicate"]
    text = index.read_text(encoding="utf-8")
    assert text.count("Prefer role-based locators") == 1
    # everything else stays as written: exactly one line fewer, the rest in order
    dup = "- Prefer role-based locators; CSS classes change with every restyle."
    others = [line for line in INLINE.splitlines() if line != dup]
    assert [line for line in text.splitlines() if line != dup] == others
    assert len(text.splitlines()) == len(INLINE.splitlines()) - 1
    archived = list((index.parent / ".archive").glob("*/MEMORY.md"))
    assert len(archived) == 1 and archived[0].read_text(encoding="utf-8") == INLINE
    assert actions(plan_json(tmp_path, "--model", "none"), "merge_duplicate") == []
    assert run_cli("undo", str(tmp_path)).returncode == 0
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# 4. ~/.claude/projects/<encoded-path>/memory/: the repository from the session transcripts


def _home_store(tmp_path: Path, monkeypatch, cwd: str) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    project = home / ".claude/projects" / reader.encoded(cwd)
    write(project / "memory/MEMORY.md", "- [App](app.md) — entry point\n")
    write(project / "memory/app.md", topic("app", "the entry point", "The entry point is `src/app.py`."))
    lines = [json.dumps({"type": "summary", "summary": "x" * 100}), json.dumps({"type": "user", "cwd": cwd, "message": "hi"})]
    write(project / "5d0c.jsonl", "\n".join(lines) + "\n")
    return home / ".claude/projects"


def test_home_layout_finds_the_repository_from_the_transcript_cwd(tmp_path, monkeypatch):
    repo = tmp_path / "work/shop"
    write(repo / "src/app.py", "print('hi')\n")
    store = _home_store(tmp_path, monkeypatch, str(repo))
    corpus, _ = open_store(store, Settings())
    (m,) = corpus.memories
    assert m.extra["repo"] == str(repo)
    plan = plan_json(store, "--model", "none")
    assert findings(plan, "staleness_skipped") == []
    assert [f["class"] for f in findings(plan, "stale")] == ["FRESH"]


def test_home_layout_without_a_usable_cwd_says_staleness_was_skipped(tmp_path, monkeypatch):
    store = _home_store(tmp_path, monkeypatch, str(tmp_path / "gone/checkout"))  # never trusted: it does not exist
    plan = plan_json(store, "--model", "none")
    (skipped,) = findings(plan, "staleness_skipped")
    assert "does not exist" in skipped["reason"]
    assert findings(plan, "stale") == [] and actions(plan, "prune_stale") == []


def test_transcripts_are_read_line_by_line_within_a_bound(tmp_path):
    path = write(tmp_path / "big.jsonl", "")
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"blob": "y" * (3 * reader.TRANSCRIPT_LINE)}) + "\n")
        fh.write(json.dumps({"cwd": "/late"}) + "\n")
    assert reader._first_cwd(path) == "/late"  # the long line is cut and skipped, not loaded whole
    far = write(tmp_path / "far.jsonl", "")
    with far.open("w", encoding="utf-8") as fh:
        for _ in range(reader.TRANSCRIPT_BYTES // 100 + 10):
            fh.write(json.dumps({"pad": "z" * 90}) + "\n")
        fh.write(json.dumps({"cwd": "/too-late"}) + "\n")
    assert reader._first_cwd(far) is None


# ---------------------------------------------------------------------------------------------
# 5. indexed = reached from MEMORY.md

TREE = """<!-- index = a tree: open the sub-index whose keywords match -->
# Planner memory

Core rules:
- 7. Always plan before editing — the lane rule
- **[Backlog](index-backlog.md)** — backlog state, slicing (2 rules)
- See [release flow](release-flow.md) for the branch rules
1. [Ports](ports.md): dev ports
- Tooling
  - nested: [lint](lint.md) — lint order
The tester reads `fixtures.md` first.
"""


def _tree_store(root: Path) -> Path:
    folder = root / AGENT
    write(folder / "MEMORY.md", TREE)
    write(folder / "index-backlog.md", "---\nname: index-backlog\ndescription: backlog rules\n---\n\n- [Slicing](slicing.md) — slice thin\n- 12. Items are never renumbered\n")
    write(folder / "7-plan-first.md", topic("plan-first", "plan before editing"))
    write(folder / "12-never-renumber.md", topic("never-renumber", "ids are immutable"))
    write(folder / "slicing.md", topic("slicing", "slice thin", "Thin slices; see [release flow](release-flow.md)."))
    for name in ("release-flow", "ports", "lint", "fixtures"):
        write(folder / f"{name}.md", topic(name, f"about {name}"))
    return folder


def test_every_way_of_linking_counts_and_sub_indexes_are_not_memories(tmp_path):
    _tree_store(tmp_path)
    plan = plan_json(tmp_path, "--model", "none")
    assert actions(plan, "rebuild_index") == []
    corpus, _ = open_store(tmp_path, Settings())
    keys = {m.key for m in corpus.memories}
    assert AGENT + "index-backlog.md" not in keys  # an index, never deduplicated or pruned
    assert AGENT + "slicing.md" in keys  # a memory that links another stays a memory
    assert corpus.extra["sub_indexes"][AGENT + "MEMORY.md"] == [AGENT + "index-backlog.md"]


def test_a_file_reached_by_nothing_is_drift(tmp_path):
    folder = _tree_store(tmp_path)
    write(folder / "orphan.md", topic("orphan", "nobody links me"))
    (rebuild,) = actions(plan_json(tmp_path, "--model", "none"), "rebuild_index")
    assert "1 file not indexed: " + AGENT + "orphan.md" in rebuild["reason"]


# ---------------------------------------------------------------------------------------------
# 6. rebuild_index is an edit of the author's index

SECTIONED = """# Reviewer memory

Read the rules section first.

## Rules
- [rules-style](rules-style.md) — style rules
- [rules-tests](rules-tests.md) — test rules

## Rounds
- [pr-12-r1](pr-12-r1.md) — first round
- [pr-12-r2](pr-12-r2.md) — second round
- [pr-12-r9](pr-12-r9.md) — a round whose file is gone
- Background in [old notes](old-notes.md) and [rules-style](rules-style.md).

<!-- keep rounds in order -->
"""


def _sectioned(root: Path) -> Path:
    folder = root / AGENT
    write(folder / "MEMORY.md", SECTIONED)
    for name in ("rules-style", "rules-tests", "pr-12-r1", "pr-12-r2", "pr-12-r3", "cache-keys"):
        write(folder / f"{name}.md", topic(name, f"about {name}"))
    return folder


def test_rebuild_adds_beside_siblings_removes_gone_entries_and_keeps_the_rest(tmp_path):
    folder = _sectioned(tmp_path)
    out = apply_json(tmp_path)
    assert [a["kind"] for a in out["applied"]] == ["rebuild_index"]
    text = (folder / "MEMORY.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    # pr-12-r3 joins its series in "Rounds"; cache-keys has no sibling: one "Unindexed" section at the end
    assert lines[lines.index("- [pr-12-r2](pr-12-r2.md) — second round") + 1] == "- [pr-12-r3](pr-12-r3.md) — about pr-12-r3"
    assert lines[-3:] == ["## Unindexed", "", "- [cache-keys](cache-keys.md) — about cache-keys"]
    assert "pr-12-r9" not in text  # its entry line is removed
    assert "- Background in ~~old notes~~ and [rules-style](rules-style.md)." in lines  # an inline link to a gone file is struck out
    kept = [line for line in SECTIONED.splitlines() if line and "pr-12-r9" not in line and "old-notes" not in line]
    assert [line for line in lines if line in kept] == kept  # headings, prose, comment, order: as written
    assert text.startswith(SECTIONED[: SECTIONED.index("- [pr-12-r9]")].replace("second round\n", "second round\n- [pr-12-r3](pr-12-r3.md) — about pr-12-r3\n"))
    assert actions(plan_json(tmp_path, "--model", "none"), "rebuild_index") == []


def test_rebuild_never_pushes_a_reached_file_past_line_200_nor_drops_an_entry(tmp_path):
    folder = tmp_path / AGENT
    body = ["# Big memory", ""]
    for section in range(10):
        body += [f"## Area {section}"] + [f"- [a{section}-{i}](a{section}-{i}.md) — hook {i}" for i in range(19)] + [""]
        for i in range(19):
            write(folder / f"a{section}-{i}.md", topic(f"a{section}-{i}", "x"))
    write(folder / "MEMORY.md", "\n".join(body) + "\n")
    for i in range(5):
        write(folder / f"a3-new{i}.md", topic(f"new {i}", "a late addition"))
    before = memory_md.reach((folder / "MEMORY.md").read_text(), [p.name for p in folder.iterdir()], lambda n: None, 200)
    out = apply_json(tmp_path)
    text = (folder / "MEMORY.md").read_text(encoding="utf-8")
    after = memory_md.reach(text, [p.name for p in folder.iterdir()], lambda n: None, 200)
    assert set(before.reached) <= set(after.reached)  # everything reached before is still within 200 lines
    assert all(f"a3-new{i}.md" in text for i in range(5))  # added, at the end rather than pushing others down
    assert any("200" in note for note in out["notes"])


def test_rebuild_over_the_byte_budget_trims_hooks_never_entries(tmp_path):
    folder = tmp_path / AGENT
    lines = ["# Wordy memory", "", "## Notes"]
    for i in range(60):
        write(folder / f"n{i:02d}.md", topic(f"n{i:02d}", "x"))
        lines.append(f"- [n{i:02d}](n{i:02d}.md) — " + "a long hook that says far too much " * 14)
    write(folder / "MEMORY.md", "\n".join(lines) + "\n")
    plan = plan_json(tmp_path, "--model", "none")
    assert actions(plan, "trim_budget")
    apply_json(tmp_path)
    text = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert len(text.encode()) <= Settings().claude.index_load_bytes  # trimmed only as far as loading it whole takes
    assert all(f"[n{i:02d}](n{i:02d}.md)" in text for i in range(60))
    assert text.splitlines()[:3] == ["# Wordy memory", "", "## Notes"]


# ---------------------------------------------------------------------------------------------
# 7. one grammar


def test_one_grammar_serves_reader_drift_and_rebuild(tmp_path):
    assert not hasattr(writer, "reconcile_entry_lines")
    folder = _sectioned(tmp_path)
    write(folder / "MEMORY.md", SECTIONED + "```\n- [in-code](in-code.md) — not an entry\n```\n+ [Rules-tests](rules-tests.md) — Test rules\n")
    apply_json(tmp_path)
    plan = plan_json(tmp_path, "--model", "none")
    assert actions(plan, "rebuild_index") == []  # what the rebuild wrote, the reader reads as 1:1
    text = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert "- [in-code](in-code.md) — not an entry" in text  # code blocks are the author's
    assert "Test rules" not in text  # the repeated entry line went (nothing of its own: `listed_again`)


@pytest.mark.parametrize("name", ["MEMORY.md"])
def test_parse_index_is_the_grammar(name):
    entries = reader.parse_index("- **[Cat](index-cat.md)** — sub\n- 3. [Three](three.md) — n\n", name, ".")
    assert [(e.target, e.title, e.hook) for e in entries] == [("index-cat.md", "Cat", "sub"), ("three.md", "Three", "n")]


def test_a_symlinked_memory_md_holding_memories_is_never_cut(tmp_path):
    real = write(tmp_path / "notes/tester.md", INLINE)
    folder = tmp_path / ".claude/agent-memory/tester"
    folder.mkdir(parents=True)
    os.symlink("../../../notes/tester.md", folder / "MEMORY.md")
    index = ".claude/agent-memory/tester/MEMORY.md"
    plan = plan_json(tmp_path, "--model", "none")
    assert plan["actions"] == []  # before: the merge of its two "Prefer role-based locators" lines, which apply skipped
    assert [(f["targets"], f["reason"]) for f in plan["findings"] if f["kind"] == "manual_review"] == [
        ([index], "5 memories kept inside it, which apply never cuts, merges or archives "
                  "(kept inside MEMORY.md, left untouched: it is a symlink)")]
    assert apply_json(tmp_path)["applied"] == []
    # a merge asked anyway (a caller's) is refused for the same reason
    corpus, settings = open_store(tmp_path, Settings())
    merge = MergeDuplicateAction(targets=[f"{index}#selectors/1", f"{index}#flaky-specs/1"], survivor=f"{index}#selectors/1",
                                 reason="normalized text identical")
    changes = writer.changes(corpus, [merge], settings, "run", None)
    assert changes.ops == [] and [why for _, why in changes.skipped] == [
        f"{index}#flaky-specs/1: kept inside MEMORY.md, left untouched: it is a symlink"]
    assert real.read_text(encoding="utf-8") == INLINE


def test_a_cwd_naming_another_project_is_not_trusted(tmp_path, monkeypatch):
    other = tmp_path / "work/other"
    other.mkdir(parents=True)
    store = _home_store(tmp_path, monkeypatch, str(tmp_path / "work/shop"))
    transcript = next(store.glob("*/5d0c.jsonl"))
    transcript.write_text(json.dumps({"cwd": str(other)}) + "\n", encoding="utf-8")  # exists, but is not this project
    corpus, _ = open_store(store, Settings())
    assert corpus.memories[0].extra["repo"] is None
    assert [f.kind for f in corpus.findings] == ["staleness_skipped"]
    assert reader.names_project("/home/a/my_app.v2", "-home-a-my-app-v2")
    assert reader.names_project("/home/a/my_app.v2", "-home-a-my_app-v2")


@given(st.sets(st.from_regex(r"0?[0-9]{1,3}[-_a][a-z-]{0,6}\.md", fullmatch=True), max_size=12), st.integers(0, 999))
def test_a_numbered_line_stands_for_the_one_file_starting_with_its_number(names, number):
    # What `numbered` means, written as plainly as it was before the names were indexed by number;
    # a zero-padded name (`007-x.md`) is file 7 too, as `- 007. X` and `- 7. X` are line 7.
    found = [n for n in names if (lead := re.match(r"(\d+)[-_]", n)) and int(lead.group(1)) == number]
    assert memory_md.numbered(number, memory_md.by_number(names)) == (found[0] if len(found) == 1 else None)
