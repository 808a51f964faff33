"""A live agent beside memconsolidate: it keeps a memory file open and appends while a run applies,
or re-creates a file after a crash, before recovery. Whatever it writes is never lost."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, files, run_cli, snapshot

from pipeline import journal
from pipeline.apply import select_actions
from pipeline.config import Settings
from pipeline.errors import RunFailed
from pipeline.journal import execute, recover, undo
from pipeline.plan import build_plan
from pipeline.layouts.registry import layout_of, open_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
BLOG = "blog/memories.jsonl"
LOG = "sessions/current.md"
CLOCK = {"MEMCONSOLIDATE_CLOCK": "2026-11-29T09:30:00+00:00"}


class Agent:
    """An agent that opened a memory file once, O_APPEND, and appends a line now and then."""

    def __init__(self, path: Path, prefix: str = "agent") -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self.prefix = prefix
        self.lines: list[bytes] = []

    def write(self) -> None:
        line = f'{{"id": "{self.prefix}-{len(self.lines)}", "text": "written by the live agent"}}\n'.encode()
        os.write(self.fd, line)
        self.lines.append(line)

    def close(self) -> None:
        os.close(self.fd)


def store_of(layout: str, tmp_path: Path) -> Path:
    root = tmp_path / layout
    shutil.copytree(FIXTURES / layout, root, symlinks=True)
    return root


def changes(root: Path, keep=lambda a: True):
    corpus, settings = open_store(root, S)
    actions = [a for a in select_actions(build_plan(corpus, settings), None, None) if keep(a)]
    return layout_of(corpus).changes(corpus, actions, settings, "run-live", None)


def agent_after_each_op(monkeypatch, agent: Agent, start_after: str) -> None:
    """The agent writes right after each op, from the op on `start_after` on (the file appended to)."""
    real = journal._apply_op
    started = []

    def op_then_agent(root, op, *args, **kwargs):
        real(root, op, *args, **kwargs)
        if op.path == start_after:
            started.append(op)
        if started:
            agent.write()

    monkeypatch.setattr(journal, "_apply_op", op_then_agent)


# ---------------------------------------------------------------------------------------------
# Append-only files are appended to in place: the agent's descriptor stays on the live file.


@pytest.mark.parametrize("layout,path", [("bank", BLOG), ("zylos", LOG)])
def test_an_agent_appending_through_an_open_descriptor_during_apply_loses_nothing(layout, path, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMCONSOLIDATE_CLOCK", CLOCK["MEMCONSOLIDATE_CLOCK"])
    root = store_of(layout, tmp_path)
    original = (root / path).read_bytes()
    # zylos: no rotation, so the run logs itself by appending to the current session log
    cs = changes(root, keep=lambda a: a.kind != "rotate_session")
    agent = Agent(root / path)
    agent_after_each_op(monkeypatch, agent, path)
    record = execute(root, cs.ops, run_id="run-live")
    monkeypatch.undo()
    agent.write()  # and after the run, through the same descriptor
    agent.close()
    assert record.status == "committed"
    now = (root / path).read_bytes()
    assert now.startswith(original)
    for line in agent.lines:
        assert line in now  # every line the agent wrote is in the file everyone reads
    ours = next(op for op in cs.ops if op.path == path).data
    assert ours in now  # and so is the run's own append, whole
    assert len(agent.lines) >= 2


def test_an_agent_appending_between_the_journal_and_the_append_refuses_the_run(tmp_path, monkeypatch):
    root = store_of("bank", tmp_path)
    cs = changes(root)
    before = files(root)
    agent = Agent(root / BLOG)
    real = journal._apply_op

    def agent_first(root_, op, *args, **kwargs):
        if op.path == BLOG:
            agent.write()
        return real(root_, op, *args, **kwargs)

    monkeypatch.setattr(journal, "_apply_op", agent_first)
    with pytest.raises(RunFailed, match="changed while the run was applying"):
        execute(root, cs.ops, run_id="run-live")
    agent.close()
    assert files(root) == {**before, BLOG: before[BLOG] + b"".join(agent.lines)}


def test_an_agent_appending_in_a_thread_during_apply_loses_nothing(tmp_path, monkeypatch):
    """Real concurrency: whatever the timing, the run is applied whole or refused whole, and every
    line the agent wrote is in the file."""
    root = store_of("bank", tmp_path)
    original = (root / BLOG).read_bytes()
    cs = changes(root)
    agent = Agent(root / BLOG)
    stop = threading.Event()

    def keep_writing():
        while not stop.is_set():
            agent.write()
            stop.wait(0.002)

    monkeypatch.setenv("MEMCONSOLIDATE_FAULT_DELAY_MS", "5")
    thread = threading.Thread(target=keep_writing)
    thread.start()
    try:
        try:
            execute(root, cs.ops, run_id="run-live")
            applied = True
        except RunFailed:
            applied = False
    finally:
        stop.set()
        thread.join()
        agent.close()
    now = (root / BLOG).read_bytes()
    assert now.startswith(original)
    for line in agent.lines:
        assert line in now
    ours = next(op for op in cs.ops if op.path == BLOG).data
    assert (ours in now) == applied


def test_undo_of_an_append_cuts_it_back_in_place(tmp_path):
    root = store_of("bank", tmp_path)
    before = files(root)
    inode = (root / BLOG).stat().st_ino
    execute(root, changes(root).ops, run_id="run-live")
    assert (root / BLOG).stat().st_ino == inode  # appended where it is, not replaced
    undo(root)
    assert files(root) == before
    assert (root / BLOG).stat().st_ino == inode


# ---------------------------------------------------------------------------------------------
# A file that must be rewritten (claude's MEMORY.md): bytes written to the replaced file during
# the run are detected; the run is refused and that very file is put back.


def test_bytes_appended_to_a_rewritten_index_during_the_run_refuse_it_and_are_kept(tmp_path, monkeypatch):
    root = store_of("claude", tmp_path)
    cs = changes(root)
    index = next(op.path for op in cs.ops if op.kind == "write" and op.path.endswith("/MEMORY.md") and "/.archive/" not in op.path)
    before = files(root)
    fd = os.open(root / index, os.O_WRONLY | os.O_APPEND)
    line = b"- [Written meanwhile](meanwhile.md) \xe2\x80\x94 by the agent, through a descriptor opened earlier\n"
    real = journal._apply_op

    def agent_after_the_swap(root_, op, *args, **kwargs):
        real(root_, op, *args, **kwargs)
        if op.path == index:
            os.write(fd, line)  # lands in the file the run just replaced

    monkeypatch.setattr(journal, "_apply_op", agent_after_the_swap)
    try:
        with pytest.raises(RunFailed, match=f"{index} was written by something else"):
            execute(root, cs.ops, run_id="run-live")
        # the very file is back at its path: the agent's next line lands where everyone reads it
        os.write(fd, b"- and one more\n")
    finally:
        os.close(fd)
    assert files(root) == {**before, index: before[index] + line + b"- and one more\n"}


def test_a_rewritten_index_left_alone_during_the_run_is_applied(tmp_path):
    root = store_of("claude", tmp_path)
    cs = changes(root)
    record = execute(root, cs.ops, run_id="run-live")
    assert record.status == "committed"
    assert not (root / ".memconsolidate" / "runs" / "run-live" / "live").exists()  # no second names left


# ---------------------------------------------------------------------------------------------
# Recovery after a crash, when an agent wrote in between.


def _kill_at(store: Path, step: int) -> None:
    env = {**os.environ, **CLOCK, "MEMCONSOLIDATE_FAULT_AFTER": str(step)}
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", env=env)  # a process of its own
    assert res.returncode == 99, res.stderr


def _steps_of(tmp_path: Path) -> tuple[int, list[dict], dict]:
    """Apply the zylos fixture once: the step count of its copies + journal, its ops, its touched map."""
    ref = store_of("zylos", tmp_path / "ref")
    res = run_cli("apply", str(ref), "--now", NOW, "--model", "none", "--yes", "--json", env={**os.environ, **CLOCK})
    assert res.returncode == 0, res.stderr
    run_id = json.loads(res.stdout)["run_id"]
    record = json.loads((ref / ".memconsolidate" / "runs" / run_id / "journal.json").read_text())
    copies = sum(1 for e in record["touched"].values() if "blob" in e or "append" in e)
    return copies + 1, record["ops"], record["touched"]


@pytest.mark.parametrize("after", ["move", "fresh log"])
def test_a_moved_session_log_whose_source_an_agent_recreated_is_kept_with_it(tmp_path, after):
    prepared, ops, _ = _steps_of(tmp_path)
    move = next(i for i, o in enumerate(ops) if o["kind"] == "move" and o["path"] == LOG)
    dest = ops[move]["dest"]
    fresh = next(i for i, o in enumerate(ops) if o["kind"] == "write" and o["path"] == LOG)
    step = prepared + 1 + (move if after == "move" else fresh)
    store = store_of("zylos", tmp_path / "s")
    before = snapshot(store)
    previous_log = before[LOG]
    _kill_at(store, step)
    assert (store / dest).read_bytes() == previous_log
    # the agent writes its session log: the file is gone (or freshly written), it appends anyway
    agent_lines = b"".join(f"- line {n} written by the agent after the crash\n".encode() for n in range(8))
    with open(store / LOG, "ab") as fh:
        fh.write(agent_lines)
    res = run_cli("plan", str(store), "--now", NOW, "--model", "none", "--json", env={**os.environ, **CLOCK})
    assert res.returncode == 0, res.stderr
    now = snapshot(store)
    # both places hold data: both are kept, and the message says so
    assert now[dest] == previous_log
    assert now[LOG].endswith(agent_lines)
    assert dest in res.stderr and "kept" in res.stderr
    # every other file is as before the run
    assert {k: v for k, v in now.items() if k not in (LOG, dest) and not k.startswith(dest.rsplit("/", 1)[0] + "/")} == {
        k: v for k, v in before.items() if k not in (LOG, dest) and not k.startswith(dest.rsplit("/", 1)[0] + "/")
    }


def test_a_moved_file_is_linked_back_without_a_copy(tmp_path, monkeypatch):
    """Rollback of a move renames the file back (the same inode): no space needed, descriptors kept."""
    root = tmp_path / "s"
    root.mkdir()
    (root / "a.md").write_bytes(b"a\n")
    inode = (root / "a.md").stat().st_ino

    class Crash(BaseException):
        pass

    real = journal._apply_op
    done = []

    def crash_after_one(root_, op, *args, **kwargs):
        if done:
            raise Crash()
        done.append(op)
        return real(root_, op, *args, **kwargs)

    monkeypatch.setattr(journal, "_apply_op", crash_after_one)
    with pytest.raises(Crash):
        execute(root, [journal.Op("move", "a.md", dest="archive/a.md"), journal.Op("write", "b.md", data=b"b\n")], run_id="r1")
    monkeypatch.undo()
    recover(root)
    assert (root / "a.md").read_bytes() == b"a\n" and (root / "a.md").stat().st_ino == inode
    assert not (root / "archive").exists()



class _Crash(BaseException):
    """A crash the journal does not catch (it catches OSError): the run stays unfinished."""


def crash_right_after_the_append(root: Path, monkeypatch):
    """Apply the bank fixture's changes and crash right after the append to BLOG."""
    cs = changes(root)
    real = journal._apply_op

    def crash_after_the_append(root_, op, *args, **kwargs):
        real(root_, op, *args, **kwargs)
        if op.path == BLOG:
            raise _Crash()

    monkeypatch.setattr(journal, "_apply_op", crash_after_the_append)
    with pytest.raises(_Crash):
        execute(root, cs.ops, run_id="run-live")
    monkeypatch.undo()
    return cs


def test_a_crash_after_the_append_and_an_agent_appending_after_keeps_everything(tmp_path, monkeypatch):
    root = store_of("bank", tmp_path)
    original = (root / BLOG).read_bytes()
    cs = crash_right_after_the_append(root, monkeypatch)
    agent = Agent(root / BLOG)
    agent.write()
    agent.close()
    messages = recover(root)
    now = (root / BLOG).read_bytes()
    assert now.startswith(original) and now.endswith(agent.lines[0])
    assert any(BLOG in m for m in messages)


def test_a_crash_mid_append_is_cut_back_to_the_bytes_before(tmp_path, monkeypatch):
    """A kill (or a full disk) in the middle of the append leaves part of it: rollback cuts it off."""
    root = store_of("bank", tmp_path)
    cs = changes(root)
    before = files(root)
    real_write_all = journal._write_all

    class Crash(BaseException):
        pass

    seen = []

    def half_then_crash(fd, data):
        if data.startswith(b"{") and b"superseded_by" in data:
            seen.append(data)
        if len(seen) == 2:  # the first is the journal's copy of the bytes to add; this, the append
            seen.append(data)
            real_write_all(fd, data[: len(data) // 2])
            raise Crash()
        real_write_all(fd, data)

    monkeypatch.setattr(journal, "_write_all", half_then_crash)
    with pytest.raises(Crash):
        execute(root, cs.ops, run_id="run-live")
    monkeypatch.undo()
    assert files(root) != before
    recover(root)
    assert files(root) == before


# ---------------------------------------------------------------------------------------------
# Temp files a kill leaves behind are removed by recovery: ours only, inside the store only.


def _tmp_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.mc-tmp-*"))


@pytest.mark.parametrize("layout", ["claude", "zylos"])
def test_temp_files_left_by_a_kill_inside_a_write_are_removed_by_recovery(layout, tmp_path):
    left_in_store = 0
    for n in range(1, 40):
        store = store_of(layout, tmp_path / f"k{n}")
        before = snapshot(store)
        env = {**os.environ, **CLOCK, "MEMCONSOLIDATE_FAULT_IN_WRITE": str(n)}
        res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", env=env)  # a process of its own
        if res.returncode == 0:
            break  # more writes than the run makes
        assert res.returncode == 99, res.stderr
        tmps = _tmp_files(store)
        assert tmps, f"write {n}: the kill left no temp file"
        left_in_store += any(not t.startswith(".memconsolidate/") for t in tmps)
        nxt = run_cli("plan", str(store), "--now", NOW, "--model", "none", "--json", env={**os.environ, **CLOCK})
        assert nxt.returncode == 0, nxt.stderr
        # `plan` is read-only for a run killed before its journal: a writing command discards it
        assert all(t.startswith(".memconsolidate/runs/") for t in _tmp_files(store)), f"write {n}"
        recover(store)
        assert _tmp_files(store) == [], f"write {n}"
        assert snapshot(store) == before
    else:
        pytest.fail("the run never completed")
    assert left_in_store >= 2  # some kills really landed beside the store's own files


def test_recovery_removes_only_our_own_temp_files_and_never_follows_a_symlink(tmp_path, monkeypatch):
    root = tmp_path / "s"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_bytes(b"a\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_bytes(b"outside\n")
    (outside / ".b.md.mc-tmp-abcdef").write_bytes(b"not ours to remove\n")
    os.symlink(outside / "precious.txt", root / "notes" / ".a.md.mc-tmp-123456")  # our pattern, a symlink
    (root / "notes" / ".a.md.mc-tmp-654321").mkdir()  # our pattern, a folder
    (root / "notes" / ".a.md.mc-tmp-looong").write_bytes(b"not our pattern\n")
    (root / "notes" / ".a.md.mc-tmp-abcdef").write_bytes(b"ours: a kill left it\n")

    class Crash(BaseException):
        pass

    monkeypatch.setattr(journal, "_apply_op", lambda *a, **k: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        execute(root, [journal.Op("write", "notes/a.md", data=b"a2\n")], run_id="r1")
    monkeypatch.undo()
    os.symlink(outside, root / "linked")
    recover(root)
    assert not (root / "notes" / ".a.md.mc-tmp-abcdef").exists()
    assert (root / "notes" / ".a.md.mc-tmp-123456").is_symlink()
    assert (root / "notes" / ".a.md.mc-tmp-654321").is_dir()
    assert (root / "notes" / ".a.md.mc-tmp-looong").exists()
    assert (outside / "precious.txt").read_bytes() == b"outside\n"
    assert (outside / ".b.md.mc-tmp-abcdef").exists()


# ---------------------------------------------------------------------------------------------
# Hard links and late writes: an in-place change never reaches another file, and rollback never cuts
# bytes written after it looked.


def test_rollback_never_cuts_bytes_appended_after_it_read_the_file(tmp_path, monkeypatch):
    root = store_of("bank", tmp_path)
    cs = crash_right_after_the_append(root, monkeypatch)
    agent = Agent(root / BLOG)
    real_ours = journal._ours

    def agent_writes_after_the_check(run, entry, cur):
        ours = real_ours(run, entry, cur)
        if not agent.lines:
            agent.write()  # between rollback's first read and its truncation
        return ours

    monkeypatch.setattr(journal, "_ours", agent_writes_after_the_check)
    with pytest.raises(RunFailed):
        recover(root)
    monkeypatch.undo()
    agent.close()
    assert (root / BLOG).read_bytes().endswith(agent.lines[0])
    recover(root)  # the next command: the file is no longer what the run left, so it is kept
    assert (root / BLOG).read_bytes().endswith(agent.lines[0])


def test_apply_never_appends_through_a_hard_link(tmp_path):
    root = store_of("bank", tmp_path)
    outside = tmp_path / "snapshot.jsonl"
    os.link(root / BLOG, outside)
    before, kept = files(root), outside.read_bytes()
    with pytest.raises(RunFailed, match="hard links"):
        execute(root, changes(root).ops, run_id="run-live")
    assert outside.read_bytes() == kept
    assert files(root) == before


def test_undo_never_cuts_back_through_a_hard_link(tmp_path):
    root = store_of("bank", tmp_path)
    execute(root, changes(root).ops, run_id="run-live")
    outside = tmp_path / "snapshot.jsonl"
    os.link(root / BLOG, outside)
    kept = outside.read_bytes()
    with pytest.raises(RunFailed, match="hard links"):
        undo(root)
    assert outside.read_bytes() == kept == (root / BLOG).read_bytes()
