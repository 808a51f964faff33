"""`undo` after an agent added lines: the run's changes go, the agent's lines stay.

An agent writes the morning after a nightly apply (a memory appended to `memories.jsonl`, a line to
`MEMORY.md` or `state.md`). Undo used to refuse the whole run then, leaving the person to choose
between the run's changes and the agent's lines. A file holding exactly what the run left plus whole
lines after it now gets its bytes from before the run plus those lines; any other change still
refuses the undo and changes nothing.
"""

from __future__ import annotations

import json
import os

import pytest

from helpers import FAULT_ENV, NOW, run_cli, snapshot

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
    """Paths the run changed and left in place (not created, not moved away)."""
    return sorted(p for p, e in record.touched.items() if "absent" not in (e["before"], e["after"]) and e["before"] != e["after"])


@pytest.mark.parametrize("layout", ["bank", "claude", "crux", "zylos"])
def test_lines_added_to_every_file_the_run_changed_are_kept_by_undo(fixture_store, layout):
    store = fixture_store(layout)
    before = snapshot(store)
    record = _apply(store)
    changed = _rewritten(record)
    assert changed, f"the {layout} fixture's run changes no file in place"
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
    store = fixture_store("bank")
    record = _apply(store)
    blog = _rewritten(record)[0]
    with open(store / blog, "ab") as fh:
        fh.write(LINE["bank"] * 2)
    res = run_cli("undo", str(store), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["undone"] == record.run_id and out["kept_added"] == {blog: 2 * len(LINE["bank"])}


def test_an_undo_with_nothing_added_keeps_nothing_and_restores_byte_for_byte(fixture_store):
    store = fixture_store("bank")
    before = snapshot(store)
    _apply(store)
    res = run_cli("undo", str(store), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["kept_added"] == {} and snapshot(store) == before


@pytest.mark.parametrize("edit", ["middle", "last_line", "shorter"])
def test_any_other_change_still_refuses_the_undo_and_changes_nothing(fixture_store, edit):
    store = fixture_store("bank")
    record = _apply(store)
    blog = _rewritten(record)[0]
    data = (store / blog).read_bytes()
    if edit == "middle":  # a line rewritten, then one appended
        first = data.index(b"\n")
        data = data[:first].replace(b'"', b"'", 1) + data[first:] + LINE["bank"]
    elif edit == "last_line":  # written onto the run's last line: no line break before the addition
        data = data.rstrip(b"\n") + b" and more\n"
    else:
        data = data[: len(data) // 2]
    (store / blog).write_bytes(data)
    after = snapshot(store)
    res = run_cli("undo", str(store))
    assert res.returncode == 1
    assert f"changed since it ran: {blog}" in res.stderr and "Traceback" not in res.stderr
    assert snapshot(store) == after


def test_lines_that_would_join_the_last_pre_run_line_refuse_the_undo(fixture_store):
    """Bytes from before the run without a final line break: the first added line would be glued
    onto their last line (a JSONL record broken), so the undo is refused and nothing changes."""
    store = fixture_store("bank")
    blog = "blog/memories.jsonl"
    (store / blog).write_bytes((store / blog).read_bytes().rstrip(b"\n"))
    record = _apply(store)
    assert blog in _rewritten(record)
    with open(store / blog, "ab") as fh:
        fh.write(LINE["bank"])
    after = snapshot(store)
    res = run_cli("undo", str(store))
    assert res.returncode == 1
    assert "gained lines since it ran, but its bytes from before the run do not end with a line break" in res.stderr
    assert snapshot(store) == after


def test_an_undo_keeping_added_lines_killed_at_every_step_loses_nothing(fixture_store):
    """A kill anywhere in such an undo is rolled back to the run's bytes plus the agent's lines, and a
    second undo then finishes it: the store from before the run plus the agent's lines."""
    step, finished = 1, False
    while not finished:
        store = fixture_store("bank", f"k{step}")
        before = snapshot(store)
        changed = _rewritten(_apply(store))
        for p in changed:
            with open(store / p, "ab") as fh:
                fh.write(LINE["bank"])
        expected = {**before, **{p: before[p] + LINE["bank"] for p in changed}}
        killed = run_cli("undo", str(store), env={**os.environ, FAULT_ENV: str(step)})
        if killed.returncode == 0:  # more steps than the undo has
            finished = True
        else:
            assert killed.returncode == 99, killed.stderr
            again = run_cli("undo", str(store))
            assert again.returncode == 0, again.stderr
        assert snapshot(store) == expected, f"kill at undo step {step}"
        step += 1
    assert step > 4
