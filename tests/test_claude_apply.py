"""Apply on claude memory folders: retired files move to `.archive/<run-id>/`, MEMORY.md is rebuilt
around its prose, nothing is deleted, and undo, a second apply and a crash all leave the store whole.

The fixture run is compared with the tree under tests/data/expected/claude (the run id, which is in
archive paths and reports, is written there as RUN_ID). After a deliberate change, regenerate it
with `UPDATE_EXPECTED=1 pytest tests/test_claude_apply.py` and read the diff by eye.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, REAL_STORES, REPO, copy_real, files, kill_apply_then_recover, plan_json, run_cli, snapshot, with_git_history

from pipeline.config import Settings
from pipeline.journal import execute
from pipeline.actions import MergeDuplicateAction
from pipeline.model import Action, Finding
from pipeline.layouts.claude import LAYOUT as CLAUDE
from pipeline.rules.outcome import Outcome
from pipeline.layouts.claude import memory_md, reader as claude, writer as claude_write
from pipeline.layouts.claude.index_rebuild import first_prose, raw_scalar

EXPECTED = REPO / "tests" / "data" / "expected" / "claude"
REAL = REAL_STORES / "orchestkit"  # read in place, copied writable to apply
A = ".claude/agent-memory/backend-architect/"
P = ".claude/projects/-home-dev-acme-shop/memory/"
MASK = "RUN_ID"
S = Settings(now=dt.date.fromisoformat(NOW))


@pytest.fixture
def store(fixture_store) -> Path:
    # with git history showing the stale memories' files deleted: only then is a prune automatic
    return with_git_history(fixture_store("claude"))


def apply(root: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli("apply", str(root), "--now", NOW, "--model", "none", "--yes", *extra, env=env)


def apply_json(root: Path, *extra: str) -> dict:
    res = apply(root, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def masked(tree: dict[str, bytes], run_id: str) -> dict[str, bytes]:
    return {k.replace(run_id, MASK): v.replace(run_id.encode(), MASK.encode()) for k, v in tree.items()}


def write_expected(tree: dict[str, bytes]) -> None:
    shutil.rmtree(EXPECTED, ignore_errors=True)
    for key, data in tree.items():
        path = EXPECTED / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def entries_of(root: Path, index_key: str) -> list[str]:
    """The targets the reader finds in a MEMORY.md, in file order (repeats kept)."""
    folder = index_key.rsplit("/", 1)[0]
    text = (root / index_key).read_text(encoding="utf-8")
    return [e.target for e in claude.parse_index(text, index_key, folder)]


def reached_of(root: Path, index_key: str) -> list[str]:
    """The files a MEMORY.md reaches, as the reader sees it (links, mentions, sub-indexes)."""
    folder = (root / index_key).parent
    names = [p.name for p in folder.iterdir() if p.suffix == ".md" and p.name != "MEMORY.md"]
    found = memory_md.reach((root / index_key).read_text(encoding="utf-8"), names, lambda n: (folder / n).read_text(encoding="utf-8"))
    prefix = index_key[: -len("MEMORY.md")]
    return [prefix + n for n in found.reached]


def topic_files(root: Path, folder: str) -> list[str]:
    return sorted(f"{folder}{p.name}" for p in (root / folder).iterdir() if p.suffix == ".md" and p.name != "MEMORY.md")


def non_entry_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not re.match(r"^\s*[-*]\s+\[[^\]]*\]\([^)]+\.md\)", line)]


def run_changes(root: Path, actions: list[Action], resolve: str | None = None, findings=None):
    corpus = claude.load(root, S)
    return corpus, claude_write.changes(corpus, actions, S, "run-1", resolve, findings=findings)


# ---------------------------------------------------------------------------------------------
# The fixture, end to end through the command line


def test_fixture_apply_matches_the_expected_tree(store):
    before = files(store)
    out = apply_json(store)
    run_id = out["run_id"]
    assert [(a["kind"], a["targets"][-1]) for a in out["applied"]] == [
        ("merge_duplicate", P + "project_ci_cache_copy.md"),
        ("prune_stale", A + "project_export_jobs.md"),
        ("prune_stale", A + "project_legacy_billing.md"),
        ("rebuild_index", A + "MEMORY.md"),
        ("absolutize_dates", A + "project_cache_layer.md"),  # "this week" -> "the week of 2026-11-16"
    ]
    assert out["skipped"] == []
    after = files(store)
    tree = masked(after, run_id)
    if os.environ.get("UPDATE_EXPECTED") == "1":
        write_expected(tree)
    expected = files(EXPECTED)
    assert sorted(tree) == sorted(expected)
    for key in sorted(expected):
        assert tree[key] == expected[key], f"{key} differs from tests/data/expected/claude/{key}"
    # moved, not rewritten; the old indexes are kept whole
    arch_a, arch_p = f"{A}.archive/{run_id}/", f"{P}.archive/{run_id}/"
    assert after[arch_a + "project_export_jobs.md"] == before[A + "project_export_jobs.md"]
    assert after[arch_a + "project_legacy_billing.md"] == before[A + "project_legacy_billing.md"]
    assert after[arch_p + "project_ci_cache_copy.md"] == before[P + "project_ci_cache_copy.md"]
    assert after[arch_a + "MEMORY.md"] == before[A + "MEMORY.md"]
    assert after[arch_p + "MEMORY.md"] == before[P + "MEMORY.md"]
    # nothing was lost: every file of before is somewhere in after, byte for byte, but the one edited
    # in place, whose only change is its phrase (its before-image is in the journal, for undo)
    edited = A + "project_cache_layer.md"
    assert after[edited] == before[edited].replace(b"this week.", b"the week of 2026-11-16.")
    for key, data in before.items():
        assert data in after.values() or key.endswith("MEMORY.md") or key == edited, key
    # every file no action touches is byte-identical
    changed = {A + "MEMORY.md", P + "MEMORY.md", A + "project_export_jobs.md", A + "project_legacy_billing.md",
               P + "project_ci_cache_copy.md", edited}
    for key in before:
        if key not in changed:
            assert after[key] == before[key], key
    report = (store / ".memconsolidate" / "reports" / f"{run_id}.md").read_text()
    assert report.startswith(f"# memconsolidate run {run_id}")
    assert "## Dream Consolidation Report" in report and "| Stale entries pruned (archived) | 2 |" in report
    assert "DELETED" not in report and "| ARCHIVED to" in report


def test_the_folder_report_sits_beside_the_archived_files(store):
    run_id = apply_json(store)["run_id"]
    report = (store / A / ".archive" / run_id / "REPORT.md").read_text()
    assert report.startswith(f"## Dream Consolidation Report — {A.rstrip('/')}")
    assert f"| `project_legacy_billing.md` | ARCHIVED to `.archive/{run_id}/project_legacy_billing.md` |" in report
    flagged = report.split("### Flagged for Review (PARTIALLY_STALE)")[1]
    assert "| `project_router_refactor.md` | `src/api/legacy_routes.ts` no longer exists |" in flagged
    assert "consult-gate: looked up as 'search'" in flagged
    assert "project_legacy_billing" not in flagged  # archived, not flagged
    assert "acme-shop" not in report  # only this folder


def test_undo_restores_byte_for_byte(store):
    before = snapshot(store)
    assert apply(store).returncode == 0
    assert snapshot(store) != before
    res = run_cli("undo", str(store))
    assert res.returncode == 0, res.stderr
    assert snapshot(store) == before  # contents, file set and folders (.archive is gone again)


def test_apply_twice_the_second_does_nothing(store):
    assert apply(store).returncode == 0
    plan = plan_json(store, "--model", "none")
    assert [a for a in plan["actions"] if not a["needs_user"]] == []
    assert not [f for f in plan["findings"] if f["kind"] == "over_budget"]
    settled = snapshot(store)
    res = apply(store)
    assert res.returncode == 0 and "Nothing to apply" in res.stdout, res.stdout
    assert snapshot(store) == settled


def test_memory_md_prose_is_kept_and_every_surviving_file_is_indexed_once(store):
    old = {k: (store / k).read_text() for k in (A + "MEMORY.md", P + "MEMORY.md")}
    apply_json(store)
    for index, folder in ((A + "MEMORY.md", A), (P + "MEMORY.md", P)):
        new = (store / index).read_text()
        assert non_entry_lines(new) == non_entry_lines(old[index])
        listed = entries_of(store, index)
        # 1:1, no repeats, nothing missing; the author's order is kept (issue 11, item 6)
        assert sorted(listed) == topic_files(store, folder) and len(listed) == len(set(listed))
    text = (store / A / "MEMORY.md").read_text()
    assert "- [cache-layer](project_cache_layer.md) — Redis cache in front of the catalogue queries" in text
    assert "old_notes.md" not in text  # its file is gone; the line survives in the archived copy
    assert "- [Router refactor](project_router_refactor.md) -- halfway through" in text  # the author's line, as written


# ---------------------------------------------------------------------------------------------
# Bad input: untouched, still indexed


def test_malformed_files_stay_untouched_and_indexed(store, tmp_path):
    folder = store / A
    (folder / "latin1_notes.md").write_bytes("caf\xe9 notes\n".encode("latin-1"))
    (folder / "binary_blob.md").write_bytes(b"\x00\x01\x02 not text")
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: outside\n---\nsecret\n")
    (folder / "linked_outside.md").symlink_to(outside)
    (folder / "team notes (draft).md").write_text("---\nname: team notes [draft]\ntype: project\n---\n\nDraft.\n")
    odd = [A + "broken_frontmatter.md", A + "latin1_notes.md", A + "binary_blob.md"]
    before = {k: (store / k).read_bytes() for k in odd}
    out = apply_json(store)
    assert out["skipped"] == []
    for key in odd:
        assert (store / key).read_bytes() == before[key], key
    assert (folder / "linked_outside.md").is_symlink() and outside.read_text().endswith("secret\n")
    listed = entries_of(store, A + "MEMORY.md")
    assert sorted(listed) == topic_files(store, A)
    for key in odd + [A + "linked_outside.md", A + "team notes (draft).md"]:
        assert listed.count(key) == 1
    # a link the reader can follow back to the file, and a title that does not break the link
    assert "- [team notes (draft)](team%20notes%20%28draft%29.md) — Draft." in (folder / "MEMORY.md").read_text()
    assert [a["kind"] for a in plan_json(store, "--model", "none")["actions"]] == []


def test_actions_naming_unreadable_or_unknown_files_never_move_them(store):
    actions = [
        Action(kind="prune_stale", targets=[A + "broken_frontmatter.md"], reason="crafted"),
        Action(kind="merge_duplicate", targets=[A + "user_preferences.md", A + "broken_frontmatter.md"],
               survivor=A + "user_preferences.md", reason="crafted"),
        Action(kind="prune_stale", targets=[A + "no_such_file.md"], reason="crafted"),
    ]
    _, cs = run_changes(store, actions)
    assert cs.ops == [] and cs.applied == []
    whys = [why for _, why in cs.skipped]
    assert whys[0] == f"{A}broken_frontmatter.md: unreadable file: left untouched"
    assert whys[1] == f"{A}broken_frontmatter.md: unreadable file: left untouched"
    assert whys[2] == f"{A}no_such_file.md: not a memory file of this store"


def test_an_unreadable_memory_md_is_never_rewritten(store):
    index = store / P / "MEMORY.md"
    index.write_bytes(b"# acme\n\n- [CI cache](project_ci_cache.md) \xff\xfe broken\n")
    raw = index.read_bytes()
    run_id = apply_json(store)["run_id"]
    assert index.read_bytes() == raw
    assert (store / P / ".archive" / run_id / "project_ci_cache_copy.md").is_file()  # the merge still happened
    report = (store / P / ".archive" / run_id / "REPORT.md").read_text()
    assert "| `MEMORY.md` | NOT REBUILT | MEMORY.md left untouched: not UTF-8 (byte 42) |" in report  # the reader's parse_error
    assert not (store / P / ".archive" / run_id / "MEMORY.md").exists()


@pytest.mark.parametrize("entry", ["+ [A](a.md) — a", "1. [A](a.md) -- a", '- [A](a.md "title") : a', "- [A](a.md#top) — a"])
def test_entry_shapes_the_reader_accepts_are_rebuilt_once_and_code_blocks_kept(tmp_path, entry):
    root = tmp_path / "q"
    folder = root / ".claude" / "memory"
    folder.mkdir(parents=True)
    for name in ("a", "b"):
        (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {name.upper()} file\ntype: user\n---\n{name}\n")
    prose = ["```", "- [x](x.md) an example inside a code block", "```", "- [abs](/etc/x.md) a link that is prose"]
    (folder / "MEMORY.md").write_text("\n".join(["# M", "", entry, "", *prose]) + "\n")
    assert apply(root).returncode == 0
    text = (folder / "MEMORY.md").read_text()
    assert entries_of(root, ".claude/memory/MEMORY.md") == [".claude/memory/a.md", ".claude/memory/b.md"]
    assert text.endswith("\n".join(prose) + "\n")
    assert plan_json(root, "--model", "none")["actions"] == []


# ---------------------------------------------------------------------------------------------
# MEMORY.md over its byte budget


def big_store(tmp_path: Path, n: int = 160, unindexed: int | None = 7) -> Path:
    root = tmp_path / "big"
    folder = root / ".claude" / "agent-memory" / "librarian"
    folder.mkdir(parents=True)
    hook = "a long hook that explains in far too many words what the topic file is about, " * 2
    lines = ["# Librarian Memory", "", "Read the topic files on demand. This line is prose and stays.", ""]
    for i in range(n):
        name = f"topic_{i:03d}.md"
        (folder / name).write_text(
            f"---\nname: topic-{i:03d}\ndescription: {hook.strip()} number {i}\ntype: project\n---\n\nTopic {i} notes.\n"
        )
        if i != unindexed:  # one file not indexed: drift, so the plan asks for a rebuild
            lines.append(f"- [Topic {i:03d}]({name}) — {hook.strip()} number {i}")
    lines += ["", "## Afterword", "Prose after the entries stays too."]
    (folder / "MEMORY.md").write_text("\n".join(lines) + "\n")
    return root


def test_an_index_over_budget_is_trimmed_without_dropping_an_entry(tmp_path):
    root = big_store(tmp_path)
    index = root / ".claude/agent-memory/librarian/MEMORY.md"
    old = index.read_text()
    assert len(old.encode()) > S.claude.index_budget_bytes
    out = apply_json(root)
    assert [a["kind"] for a in out["applied"]] == ["trim_budget", "rebuild_index"]
    new = index.read_text()
    # past what Claude Code loads: trimmed only as far as loading it whole takes
    assert len(old.encode()) > S.claude.index_load_bytes >= len(new.encode()) > S.claude.index_load_bytes - 160 * 4
    listed = entries_of(root, ".claude/agent-memory/librarian/MEMORY.md")
    assert sorted(listed) == topic_files(root, ".claude/agent-memory/librarian/") and len(listed) == 160
    assert non_entry_lines(new) == non_entry_lines(old)
    assert "- [Topic 000](topic_000.md) — a long hook that explains" in new and "…" in new
    assert any("159 hand-written hooks shortened, by " in n for n in out["notes"])
    plan = plan_json(root, "--model", "none")
    assert plan["actions"] == [] and not [f for f in plan["findings"] if f["kind"] == "over_budget"]


def test_a_trim_budget_action_rebuilds_an_index_that_only_is_too_big(tmp_path):
    root = big_store(tmp_path, unindexed=None)
    key = ".claude/agent-memory/librarian/MEMORY.md"
    plan = plan_json(root, "--model", "none")
    assert [a["kind"] for a in plan["actions"]] == ["trim_budget"]
    assert [f["kind"] for f in plan["findings"] if f["kind"] == "over_budget"] == ["over_budget"]
    action = Action(kind="trim_budget", targets=[key], reason="over budget")
    _, cs = run_changes(root, [action])
    assert cs.applied == [action]
    written = {op.path: op.data for op in cs.ops if op.kind == "write"}
    assert len(written[key]) <= S.claude.index_load_bytes
    assert written[".claude/agent-memory/librarian/.archive/run-1/MEMORY.md"] == (root / key).read_bytes()


# ---------------------------------------------------------------------------------------------
# Conflicts, under each resolution


def conflict(a: str, b: str) -> Action:
    return Action(kind="conflict", targets=[a, b], reason="one says always pnpm, the other never", needs_user=True)


def test_conflict_newer_archives_the_older_side(store):
    before = files(store)
    _, cs = run_changes(store, [conflict(P + "feedback_npm.md", P + "feedback_pnpm.md")], resolve="newer")
    assert [a.kind for a in cs.applied] == ["conflict"] and cs.skipped == []
    assert [op for op in cs.ops if op.kind == "move"] == [
        claude_write.Op("move", P + "feedback_pnpm.md", dest=P + ".archive/run-1/feedback_pnpm.md",
                        expect=claude_write.sha(before[P + "feedback_pnpm.md"]))  # refused if it changed since
    ]
    execute(store, cs.ops, run_id="run-1")
    after = files(store)
    assert after[P + ".archive/run-1/feedback_pnpm.md"] == before[P + "feedback_pnpm.md"]
    assert after[P + "feedback_npm.md"] == before[P + "feedback_npm.md"]
    assert "feedback_pnpm.md" not in after[P + "MEMORY.md"].decode()
    report = after[P + ".archive/run-1/REPORT.md"].decode()
    assert "contradicted by newer feedback_npm.md (2026-07-15)" in report
    assert "| Contradictions resolved | 1 |" in report


def test_conflict_newer_falls_back_to_mtime_and_leaves_a_tie_alone(store):
    for name, body in (("x_first.md", "Deploy on Fridays.\n"), ("x_second.md", "Never deploy on Fridays.\n")):
        (store / A / name).write_text(body)
    os.utime(store / A / "x_first.md", (1_700_000_000, 1_700_000_000))
    os.utime(store / A / "x_second.md", (1_700_000_100, 1_700_000_100))
    _, cs = run_changes(store, [conflict(A + "x_second.md", A + "x_first.md")], resolve="newer")
    assert [op.path for op in cs.ops if op.kind == "move"] == [A + "x_first.md"]
    os.utime(store / A / "x_first.md", (1_700_000_100, 1_700_000_100))
    _, cs = run_changes(store, [conflict(A + "x_second.md", A + "x_first.md")], resolve="newer")
    assert cs.ops == [] and cs.skipped[0][1].startswith("cannot tell which is newer")


def test_conflict_keep_both_notes_each_body_once_and_deletes_nothing(store):
    before = files(store)
    actions = [conflict(P + "feedback_npm.md", P + "feedback_pnpm.md")]
    _, cs = run_changes(store, actions, resolve="keep-both")
    assert [a.kind for a in cs.applied] == ["conflict"]
    assert not [op for op in cs.ops if op.kind != "write"]
    execute(store, cs.ops, run_id="run-1")
    after = files(store)
    for key, other in ((P + "feedback_npm.md", "feedback_pnpm.md"), (P + "feedback_pnpm.md", "feedback_npm.md")):
        note = f"\n> Note (memconsolidate, {NOW}): conflicts with {other} — kept both.\n"
        assert after[key] == before[key] + note.encode()
    assert set(before) <= set(after)
    # noted once: the same conflict again (even on another day) writes nothing
    _, again = run_changes(store, actions, resolve="keep-both")
    assert again.ops == [] and again.skipped[0][1] == "both sides already carry the note"


def test_keep_both_between_memories_kept_inside_memory_md_says_why_nothing_is_noted(tmp_path):
    """Such memories are never annotated: the conflict is skipped for that, not as "already noted"
    (red-team bug 11)."""
    folder = tmp_path / ".claude" / "projects" / "-home-x" / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Project Memory\n\n## Rules\n- Always use pnpm to install dependencies here\n"
                                      "- Never use pnpm to install dependencies here\n")
    before = files(tmp_path)
    _, cs = run_changes(tmp_path, [conflict(*sorted(m.key for m in claude.load(tmp_path, S).memories))], resolve="keep-both")
    assert cs.applied == [] and [why for _, why in cs.skipped] == ["neither side noted: a memory kept inside MEMORY.md is not annotated"]
    assert cs.ops == [] and files(tmp_path) == before


def test_keep_both_says_why_each_side_it_cannot_note_is_left_alone(tmp_path):
    """A side is noted only over the text the plan read: edited, gone, no longer parsing or no longer
    UTF-8 since, it is left as it is, and the run's notes and the conflict's outcome say which."""
    folder = tmp_path / ".claude" / "projects" / "-home-x" / "memory"
    folder.mkdir(parents=True)

    def text(name: str, meta: str | None = None) -> str:
        meta = meta or f"name: {name}\ndescription: about {name}\ntype: feedback"
        return f"---\n{meta}\n---\n\nAlways use pnpm here ({name}).\n"

    for name in ("edited", "gone", "listed", "latin1"):
        (folder / f"{name}.md").write_text(text(name))
    (folder / "MEMORY.md").write_text("".join(f"- [{n}]({n}.md) — about {n}\n" for n in ("edited", "gone", "listed", "latin1")))
    corpus = claude.load(tmp_path, S)
    (folder / "edited.md").write_text(text("edited") + "Since then: npm.\n")
    (folder / "gone.md").unlink()
    (folder / "listed.md").write_text(text("listed", "- a list, not a mapping"))
    (folder / "latin1.md").write_bytes(text("latin1").replace("here", "ici, café").encode("latin-1"))
    before = files(tmp_path)
    key = ".claude/projects/-home-x/memory/{}.md".format

    cs = claude_write.changes(corpus, [conflict(key("edited"), key("gone")), conflict(key("listed"), key("latin1"))],
                              S, "run-1", "keep-both")

    latin1 = "cannot read it again: 'utf-8' codec can't decode byte 0xe9 in position 87: invalid continuation byte"
    assert cs.applied == [] and cs.ops == [] and files(tmp_path) == before
    assert [why for _, why in cs.skipped] == [
        "neither side noted: edited.md: it changed on disk since it was read; gone.md: cannot read it again: it is gone",
        f"neither side noted: listed.md: it no longer parses; latin1.md: {latin1}",
    ]
    assert cs.notes == [
        f"{key('edited')}: not noted, it changed on disk since it was read",
        f"{key('gone')}: not noted, cannot read it again: it is gone",
        f"{key('latin1')}: not noted, {latin1}",
        f"{key('listed')}: not noted, it no longer parses",
    ]

def test_conflicts_without_a_resolution_are_not_executed(store):
    _, cs = run_changes(store, [conflict(P + "feedback_npm.md", P + "feedback_pnpm.md")], resolve=None)
    assert cs.ops == [] and cs.skipped[0][1] == "conflicts are applied only with --resolve newer|keep-both"


# ---------------------------------------------------------------------------------------------
# Several actions on one file, in any order


def planned(actions: list[Action], findings: list[Finding]) -> list[Action]:
    """The actions as the plan leaves them: the claude layout's guard decides the hand-overs."""
    return CLAUDE.guard(Outcome(list(actions), list(findings)), S).actions


def test_a_pruned_survivor_hands_over_to_a_kept_duplicate_in_any_order(store):
    merge = MergeDuplicateAction(targets=[P + "project_ci_cache.md", P + "project_ci_cache_copy.md"],
                                 survivor=P + "project_ci_cache.md", reason="normalized text identical")
    prune = Action(kind="prune_stale", targets=[P + "project_ci_cache.md"], reason="fully stale (constructed)")
    kept = [Finding(kind="stale", targets=[P + "project_ci_cache_copy.md"], reason="guarded", **{"class": "PARTIALLY_STALE"})]
    [merge, prune] = planned([merge, prune], kept)
    assert merge.handover == [P + "project_ci_cache_copy.md"]  # decided at plan time, shown in the plan
    results = []
    for actions in ([merge, prune], [prune, merge], [prune, merge, prune]):
        _, cs = run_changes(store, actions, findings=kept)
        moves = [(op.path, op.dest) for op in cs.ops if op.kind == "move"]
        results.append(moves)
        assert len({p for p, _ in moves}) == len(moves)  # never two moves of one file
    assert results[0] == results[1] == results[2] == [(P + "project_ci_cache.md", P + ".archive/run-1/project_ci_cache.md")]
    # when the duplicate would be pruned too, both go
    gone = [Finding(kind="stale", targets=[P + "project_ci_cache_copy.md"], reason="x", **{"class": "FULLY_STALE"})]
    [merge, prune] = planned([merge, prune], gone)
    assert merge.handover == []
    for actions in ([merge, prune], [prune, merge]):
        _, cs = run_changes(store, actions, findings=gone)
        assert sorted(op.path for op in cs.ops if op.kind == "move") == [P + "project_ci_cache.md", P + "project_ci_cache_copy.md"]


def test_a_conflict_on_a_file_another_action_archives_is_skipped(store):
    actions = [
        Action(kind="prune_stale", targets=[P + "feedback_pnpm.md"], reason="constructed"),
        conflict(P + "feedback_npm.md", P + "feedback_pnpm.md"),
    ]
    for resolve in ("newer", "keep-both"):
        _, cs = run_changes(store, actions, resolve=resolve)
        assert [op.path for op in cs.ops if op.kind == "move"] == [P + "feedback_pnpm.md"]
        assert not [op for op in cs.ops if op.path == P + "feedback_npm.md"]
        assert cs.skipped == [(actions[1], f"{P}feedback_pnpm.md is archived by another action of this run")]


# ---------------------------------------------------------------------------------------------
# A crash mid-apply


@pytest.mark.parametrize("step", [3, 10, 16])
def test_a_killed_apply_is_undone_by_the_next_plan(store, step):
    kill_apply_then_recover(store, step)
    assert apply(store).returncode == 0  # and it still applies cleanly


# ---------------------------------------------------------------------------------------------
# The real orchestkit folders


def test_real_orchestkit_store_applies_and_undoes(tmp_path):
    root = tmp_path / "orchestkit"
    copy_real(REAL, root)
    before = snapshot(root)
    res = apply(root)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    for index in sorted(root.rglob("MEMORY.md")):
        if ".archive" in index.parts:
            continue
        key = index.relative_to(root).as_posix()
        folder = key[: -len("MEMORY.md")]
        listed = entries_of(root, key)
        # every file reached (an entry, an inline link, a backtick mention), no entry line twice
        assert sorted(reached_of(root, key)) == topic_files(root, folder) and len(listed) == len(set(listed)), key
    plan = plan_json(root, "--model", "none")
    assert [a for a in plan["actions"] if not a["needs_user"]] == []
    assert run_cli("undo", str(root)).returncode == 0
    assert snapshot(root) == before


# ---------------------------------------------------------------------------------------------
# Small pieces


def test_hooks_derived_from_bodies_and_front_matter():
    assert first_prose("# Title\n\nFirst paragraph\ncontinues here.\n\nSecond.\n") == "First paragraph continues here."
    assert first_prose("# Hook Comparison\n\n## Coverage\n| a | b |\n|---|---|\n") == "Hook Comparison"
    assert first_prose("## Items\n- first item\n- second\n") == "first item"
    assert first_prose("") == ""
    assert first_prose("word " * 100).endswith("…") and len(first_prose("word " * 100)) <= 150
    raw = "name: x\ndescription: Review of #2041 dedup migration\ntype: project\n"
    assert raw_scalar(raw, "description", "Review of") == "Review of #2041 dedup migration"
    assert raw_scalar('description: "quoted # kept"\n', "description", "quoted # kept") == "quoted # kept"
    assert raw_scalar("description: plain\n", "description", "plain") == "plain"


def test_memory_md_with_mixed_line_endings_keeps_them_on_the_lines_a_rebuild_keeps(store):
    index = store / A / "MEMORY.md"
    lines = index.read_bytes().split(b"\n")
    lines[2] += b"\r"  # two prose lines near the top end with CRLF, the rest with LF
    lines[3] += b"\r"
    index.write_bytes(b"\n".join(lines))
    crlf_lines = {line for line in index.read_bytes().split(b"\n") if line.endswith(b"\r")}
    out = apply_json(store, "--select", "rebuild_index")
    assert [a["kind"] for a in out["applied"]] == ["rebuild_index"]
    after = index.read_bytes().split(b"\n")
    assert crlf_lines <= set(after)  # the same lines, their CRLF kept
    assert sum(line.endswith(b"\r") for line in after) == len(crlf_lines)  # and no LF line turned CRLF
