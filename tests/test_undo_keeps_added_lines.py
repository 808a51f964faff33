"""`undo` after an agent added lines: the run's changes go, the agent's lines stay.

An agent writes the morning after a nightly apply (a line to `MEMORY.md`, `state.md`, a rewritten
`memories.jsonl`). Undo used to refuse the whole run then, leaving the person to choose between the
run's changes and the agent's lines. A file the run rewrote, holding exactly what the run left plus
whole lines after it, now gets its bytes from before the run plus those lines (with the line break
the run added after their last line when they had none; after the owner's unterminated last line
the run left as it was, what the agent wrote on it). A file the run appended to in place is cut back in place or not at all (an agent may hold it open), a later run
that changed the file must be undone first, and any other change still refuses the undo; a refused
undo changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import NOW, kill_undo_at_every_step, run_cli, snapshot

from pipeline.actions import ConsolidateAction
from pipeline.api import apply_plan, build_plan, open_store
from pipeline.config import Settings
from pipeline.journal import committed_runs

APPLY = ["--now", NOW, "--model", "stub", "--no-cache", "--yes"]
LINE = {
    "bank": b'{"id": "agent-1", "text": "written by the agent after the run"}\n',
    "claude": b"- [Agent note](agent_note.md) \xe2\x80\x94 added by the agent after the run\n",
    "crux": b"Added by the agent after the run.\n",
    "zylos": b"- added by the agent after the run\n",
}


def _apply(store):
    res = run_cli("apply", str(store), *APPLY)
    assert res.returncode == 0, res.stderr
    return committed_runs(store)[-1]


def _rewritten(record) -> list[str]:
    """Paths the run rewrote (not created, not moved away, not appended to in place)."""
    return sorted(p for p, e in record.touched.items()
                  if "absent" not in (e["before"], e["after"]) and e["before"] != e["after"] and "append" not in e)


def _appended(record) -> list[str]:
    return sorted(p for p, e in record.touched.items() if "append" in e)


@pytest.mark.parametrize("layout", ["claude", "crux", "zylos"])  # bank runs only append (below)
def test_lines_added_to_every_file_the_run_rewrote_are_kept_by_undo(fixture_store, layout):
    store = fixture_store(layout)
    before = snapshot(store)
    record = _apply(store)
    changed = _rewritten(record)
    assert changed, f"the {layout} fixture's run rewrites no file"
    for p in changed:
        with open(store / p, "ab") as fh:  # what an agent does: open, append, close
            fh.write(LINE[layout])
    res = run_cli("undo", str(store))
    assert res.returncode == 0, res.stderr
    expected = dict(before)
    for p in changed:
        expected[p] = before[p] + LINE[layout]
    assert snapshot(store) == expected
    for p in changed:
        assert f"kept what was added to {p} since the run ({len(LINE[layout])} bytes)" in res.stdout


def test_the_undo_json_names_what_it_kept(fixture_store):
    store = fixture_store("claude")
    record = _apply(store)
    index = _rewritten(record)[0]
    with open(store / index, "ab") as fh:
        fh.write(LINE["claude"] * 2)
    res = run_cli("undo", str(store), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["undone"] == record.run_id and out["kept_added"] == {index: 2 * len(LINE["claude"])}


def test_lines_added_to_a_file_the_run_appended_to_in_place_refuse_the_undo(fixture_store):
    """Undo takes an append back by cutting the file where it is (an agent may hold it open, writing
    on): with lines after the run's, that cut would drop them and a rewrite would strand that agent,
    so the undo is refused, changing nothing, and says what to do."""
    store = fixture_store("bank")
    record = _apply(store)
    blog = _appended(record)[0]
    with open(store / blog, "ab") as fh:
        fh.write(LINE["bank"])
    after = snapshot(store)
    res = run_cli("undo", str(store))
    assert res.returncode == 1
    assert f"{blog} gained lines since it ran, but the run appended to it in place" in res.stderr
    assert snapshot(store) == after


def test_undoing_a_run_that_a_later_run_changed_the_same_file_after_is_refused(fixture_store):
    """The lines after the first run's bytes are then the later run's own (with its merges and summed
    strengths), not an agent's: they are never kept as if added by hand; undo the later run first."""
    store = fixture_store("claude")
    first = _apply(store)
    index = next(p for p in _rewritten(first) if p.endswith("MEMORY.md"))
    folder = (store / index).parent
    memory = next(p for p in sorted(folder.glob("*.md")) if p.name != "MEMORY.md")
    (folder / f"{memory.stem}_again.md").write_bytes(memory.read_bytes())  # the next run merges it
    second = _apply(store)
    assert index in second.touched
    after = snapshot(store)
    res = run_cli("undo", str(store), "--run", first.run_id)
    assert res.returncode == 1
    assert f"{index} was changed since by run {second.run_id}, applied after it: undo that run first" in res.stderr
    assert snapshot(store) == after
    assert run_cli("undo", str(store), "--run", second.run_id).returncode == 0
    assert run_cli("undo", str(store), "--run", first.run_id).returncode == 0


def test_an_undo_with_nothing_added_keeps_nothing_and_restores_byte_for_byte(fixture_store):
    store = fixture_store("claude")
    before = snapshot(store)
    _apply(store)
    res = run_cli("undo", str(store), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["kept_added"] == {} and snapshot(store) == before


@pytest.mark.parametrize("edit", ["middle", "last_line", "half_a_line", "shorter"])
def test_any_other_change_still_refuses_the_undo_and_changes_nothing(fixture_store, edit):
    store = fixture_store("claude")
    record = _apply(store)
    index = _rewritten(record)[0]
    data = (store / index).read_bytes()
    if edit == "middle":  # a line rewritten, then one appended
        first = data.index(b"\n")
        data = data[:first] + b" (edited)" + data[first:] + LINE["claude"]
    elif edit == "last_line":  # written onto the run's last line: no line break before the addition
        data = data.rstrip(b"\n") + b" and more\n"
    elif edit == "half_a_line":  # a line still being written: no line break at its end yet
        data = data + LINE["claude"].rstrip(b"\n")
    else:
        data = data[: len(data) // 2]
    (store / index).write_bytes(data)
    after = snapshot(store)
    res = run_cli("undo", str(store))
    assert res.returncode == 1
    assert f"changed since it ran: {index}" in res.stderr and "Traceback" not in res.stderr
    assert snapshot(store) == after


def test_lines_added_after_the_final_line_break_a_rebuild_gave_the_index_are_kept_as_lines(fixture_store):
    """Red-team 2 bug 14: bytes from before the run without a final line break, which the run's
    rebuild added (a rebuild asked for fixes that drift). The agent's line appended after it was
    refused by undo ("its bytes from before the run do not end with a line break"), the run's
    changes stuck: the owner's bytes come back, with that line break, then the agent's line."""
    store = fixture_store("claude")
    # the fixture's run rebuilds it (its rebuild_index applied: a final line break is added)
    index = ".claude/agent-memory/backend-architect/MEMORY.md"
    owners = (store / index).read_bytes().rstrip(b"\n")
    (store / index).write_bytes(owners)
    before = snapshot(store)
    record = _apply(store)
    assert index in _rewritten(record) and (store / index).read_bytes().endswith(b"\n")
    with open(store / index, "ab") as fh:
        fh.write(LINE["claude"])
    res = run_cli("undo", str(store))
    assert res.returncode == 0, res.stderr
    assert snapshot(store) == {**before, index: owners + b"\n" + LINE["claude"]}
    assert f"kept what was added to {index} since the run ({len(LINE['claude'])} bytes)" in res.stdout


AGENT_DIR = ".claude/agent-memory/tester"
TOPIC = "---\nname: {0}\ndescription: about {0}\ntype: project\n---\n\n{0} notes.\n"


def _unterminated_index_store(root: Path, last: str) -> Path:
    """A claude store whose MEMORY.md has no final line break, its last line `last`'s entry."""
    folder = root / AGENT_DIR
    folder.mkdir(parents=True)
    names = ["alpha-r1.md", "alpha-r2.md", "lunch.md"]
    for name in names:
        (folder / name).write_text(TOPIC.format(name[:-3]), encoding="utf-8")
    lines = [f"- [{n[:-3]}]({n}) — about {n[:-3]}" for n in sorted(names, key=lambda n: n == last)]
    (folder / "MEMORY.md").write_bytes(("# Memory\n\n" + "\n".join(lines)).encode())
    return folder / "MEMORY.md"


def _consolidate_alpha(root: Path) -> str:
    """Apply only a consolidation of alpha-r1 and alpha-r2 (its own index edits: the missing final
    line break stays); the run's id."""
    settings = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
    corpus, settings = open_store(root, settings)
    action = ConsolidateAction(
        targets=[f"{AGENT_DIR}/alpha-r1.md", f"{AGENT_DIR}/alpha-r2.md"], reason="one subject",
        outputs=[{"path": f"{AGENT_DIR}/alpha.md", "frontmatter": {"name": "alpha", "description": "both", "type": "project"},
                  "body": "Both rounds.", "size": 1}])
    result = apply_plan(corpus, build_plan(corpus, settings), settings, actions=[action])
    assert [a.kind for a in result.changes.applied] == ["consolidate"], result.changes.skipped
    return result.run_id


def test_an_agents_line_written_on_the_owners_unterminated_last_line_is_kept_by_undo(tmp_path):
    """The same file after a run that only edits the index for its own files: the final line break
    is still missing, and an agent's append goes on the owner's last line, which the run left as it
    was. Undo refused ("changed since it ran"); it now puts back the owner's bytes with what the
    agent added after them, as the append would have left the file without the run."""
    index = _unterminated_index_store(tmp_path, last="lunch.md")
    before = snapshot(tmp_path)
    _consolidate_alpha(tmp_path)
    assert not index.read_bytes().endswith(b"\n") and index.read_bytes().endswith(b"about lunch")
    with open(index, "ab") as fh:
        fh.write(LINE["claude"])
    res = run_cli("undo", str(tmp_path))
    assert res.returncode == 0, res.stderr
    key = f"{AGENT_DIR}/MEMORY.md"
    assert snapshot(tmp_path) == {**before, key: before[key] + LINE["claude"]}


def test_an_agents_line_written_on_the_runs_own_unterminated_last_line_refuses_the_undo(tmp_path):
    """When the last line is the run's (a consolidation's entry in its member's place), the agent's
    bytes continue it: put onto the owner's line they would say something else, so the undo is
    refused and nothing changes."""
    index = _unterminated_index_store(tmp_path, last="alpha-r1.md")
    _consolidate_alpha(tmp_path)
    assert b"(alpha.md)" in index.read_bytes().rsplit(b"\n", 1)[-1]
    with open(index, "ab") as fh:
        fh.write(LINE["claude"])
    after = snapshot(tmp_path)
    res = run_cli("undo", str(tmp_path))
    assert res.returncode == 1 and f"changed since it ran: {AGENT_DIR}/MEMORY.md" in res.stderr
    assert snapshot(tmp_path) == after


def test_an_undo_keeping_added_lines_killed_at_every_step_loses_nothing(fixture_store):
    """A kill anywhere in such an undo is rolled back to the run's bytes plus the agent's lines, and a
    second undo then finishes it: the store from before the run plus the agent's lines."""
    changed: list[str] = []

    def prepare(step):
        store = fixture_store("zylos", f"k{step}")
        before = snapshot(store)
        changed[:] = _rewritten(_apply(store))
        for p in changed:
            with open(store / p, "ab") as fh:
                fh.write(LINE["zylos"])
        return store, {**before, **{p: before[p] + LINE["zylos"] for p in changed}}

    def says_what_it_kept(again):  # even when the kill came after the undo's commit
        assert all(f"kept what was added to {p}" in again.stdout for p in changed), again.stdout

    assert kill_undo_at_every_step(prepare, says_what_it_kept) >= 3


def test_an_agents_line_started_after_the_runs_own_unterminated_last_line_is_kept_by_undo(tmp_path):
    """The run rewrote the last line of a file without a final line break (an update_ref), and the
    agent first ended that line, then wrote its own: what it added does not continue the run's line,
    so undo puts it after the owner's (red-team 3 bug 11: refused as "changed since it ran")."""
    index = _unterminated_index_store(tmp_path, last="alpha-r1.md")
    before = snapshot(tmp_path)
    _consolidate_alpha(tmp_path)
    added = b"\n" + LINE["claude"]
    with open(index, "ab") as fh:
        fh.write(added)
    res = run_cli("undo", str(tmp_path))
    assert res.returncode == 0, res.stderr
    key = f"{AGENT_DIR}/MEMORY.md"
    assert snapshot(tmp_path) == {**before, key: before[key] + added}
