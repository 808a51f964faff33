"""Review of the apply path's first promise, "nothing is ever lost": each test pins one defect found
in the journal or a writer (a byte lost, a permission widened, a backup deleted, a wrong run undone).

A crash is simulated in-process by raising a BaseException subclass out of the journal's op loop:
`execute` only rolls back on OSError, so the run is left "prepared", exactly as a SIGKILL leaves it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, files

from pipeline import journal
from pipeline.apply import select_actions
from pipeline.config import Settings
from pipeline.errors import RunFailed
from pipeline.journal import Op, execute, recover, undo
from pipeline.model import Action
from pipeline.plan import build_plan
from pipeline.layouts.bank import writer as bank_write
from pipeline.layouts.claude import reader as claude, writer as claude_write
from pipeline.layouts.registry import open_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
BLOG = "blog/memories.jsonl"
AGENT_LINE = b'{"id": "m900", "text": "written by the agent while memconsolidate was busy"}\n'
A = ".claude/agent-memory/backend-architect/"


class Crash(BaseException):
    """Stands for SIGKILL: nothing in the journal catches it."""


def bank_store(tmp_path: Path) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(FIXTURES / "bank", root)
    return root


def bank_ops(root: Path) -> list[Op]:
    """The ops `apply` would execute on the bank fixture (its writer reads the file now)."""
    corpus, settings = open_store(root, S)
    actions = select_actions(build_plan(corpus, settings), None, None)
    ops = bank_write.changes(corpus, actions, settings, "run-t", None).ops
    assert ops[0].path == BLOG
    return ops


def crash_after(monkeypatch: pytest.MonkeyPatch, n_ops: int) -> None:
    real = journal._apply_op
    done: list[Op] = []

    def op_then_crash(root, op, *args, **kwargs):
        if len(done) == n_ops:
            raise Crash()
        done.append(op)
        return real(root, op, *args, **kwargs)

    monkeypatch.setattr(journal, "_apply_op", op_then_crash)


# ---------------------------------------------------------------------------------------------
# 1. A write built on bytes read earlier must not replace bytes written since.


def test_a_line_appended_after_the_writer_read_the_bank_is_not_overwritten(tmp_path):
    root = bank_store(tmp_path)
    ops = bank_ops(root)
    with open(root / BLOG, "ab") as fh:  # the agent remembers something between plan and apply
        fh.write(AGENT_LINE)
    before = files(root)
    with pytest.raises(RunFailed, match="changed since"):
        execute(root, ops, run_id="run-t")
    assert (root / BLOG).read_bytes().endswith(AGENT_LINE)
    assert files(root) == before  # refused as a whole: nothing applied


def test_a_line_appended_while_the_run_applies_is_not_overwritten(tmp_path, monkeypatch):
    root = bank_store(tmp_path)
    ops = bank_ops(root)
    original = files(root)
    real = journal._apply_op

    def agent_writes_first(root_, op, *args, **kwargs):
        # after the journal took its copies, just before the bank file is replaced
        if op.path == BLOG and not (root / BLOG).read_bytes().endswith(AGENT_LINE):
            with open(root / BLOG, "ab") as fh:
                fh.write(AGENT_LINE)
        return real(root_, op, *args, **kwargs)

    monkeypatch.setattr(journal, "_apply_op", agent_writes_first)
    with pytest.raises(RunFailed, match="changed"):
        execute(root, ops, run_id="run-t")
    assert (root / BLOG).read_bytes() == original[BLOG] + AGENT_LINE
    assert files(root) == {**original, BLOG: original[BLOG] + AGENT_LINE}


# ---------------------------------------------------------------------------------------------
# 2. Recovery restores only what the run itself wrote.


def test_recovery_keeps_what_an_agent_appended_after_the_crash(tmp_path, monkeypatch):
    root = bank_store(tmp_path)
    ops = bank_ops(root)
    crash_after(monkeypatch, 1)  # the bank file is rewritten, the run is not committed
    with pytest.raises(Crash):
        execute(root, ops, run_id="run-t")
    monkeypatch.undo()
    with open(root / BLOG, "ab") as fh:  # a day of the agent's work before the next memconsolidate
        fh.write(AGENT_LINE)
    messages = recover(root)
    assert AGENT_LINE in (root / BLOG).read_bytes()
    assert any(BLOG in m for m in messages), messages


def test_recovery_never_removes_a_file_the_run_did_not_create(tmp_path, monkeypatch):
    root = tmp_path / "s"
    root.mkdir()
    (root / "a.md").write_bytes(b"a\n")
    crash_after(monkeypatch, 1)
    with pytest.raises(Crash):
        execute(root, [Op("write", "a.md", data=b"a2\n"), Op("write", "new.md", data=b"ours\n")], run_id="r1")
    monkeypatch.undo()
    (root / "new.md").write_bytes(b"the user's own note\n")
    recover(root)
    assert (root / "a.md").read_bytes() == b"a\n"  # what the run wrote is rolled back
    assert (root / "new.md").read_bytes() == b"the user's own note\n"  # what it did not is kept


# ---------------------------------------------------------------------------------------------
# 3. Undo and rollback bring a moved file back with its permission bits.


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def private_store(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / "private.md").write_bytes(b"a private memory\n")
    os.chmod(root / "private.md", 0o600)
    (root / "other.md").write_bytes(b"x\n")
    return root


MOVE_OPS = [Op("move", "private.md", dest=".archive/r/private.md"), Op("write", "other.md", data=b"y\n")]


def test_undo_restores_the_permission_bits_of_a_moved_file(tmp_path, umask_022):
    root = private_store(tmp_path)
    execute(root, MOVE_OPS, run_id="r1")
    undo(root)
    assert (root / "private.md").read_bytes() == b"a private memory\n"
    assert oct((root / "private.md").stat().st_mode & 0o777) == oct(0o600)


def test_rollback_restores_the_permission_bits_of_a_moved_file(tmp_path, umask_022, monkeypatch):
    root = private_store(tmp_path)
    crash_after(monkeypatch, 1)
    with pytest.raises(Crash):
        execute(root, MOVE_OPS, run_id="r1")
    monkeypatch.undo()
    recover(root)
    assert oct((root / "private.md").stat().st_mode & 0o777) == oct(0o600)


# ---------------------------------------------------------------------------------------------
# 4. fsync ordering: every directory entry the journal and the moved files live in is durable.


def test_the_journal_folder_and_new_folders_are_fsynced_in_their_parents(tmp_path, monkeypatch):
    root = private_store(tmp_path).resolve()
    synced: list[Path] = []
    real_fsync_dir = journal._fsync_dir
    monkeypatch.setattr(journal, "_fsync_dir", lambda p: (synced.append(Path(p).resolve()), real_fsync_dir(p)))
    real_apply = journal._apply_op
    at_first_change: list[Path] = []

    def spy(root_, op, *args, **kwargs):
        if not at_first_change:
            at_first_change.extend(synced)
        return real_apply(root_, op, *args, **kwargs)

    monkeypatch.setattr(journal, "_apply_op", spy)
    record = execute(root, MOVE_OPS, run_id="r1")
    state = root / ".memconsolidate"
    # before the first change, the run's folder is durable in runs/, runs/ in the state folder, ...
    for folder in (state / "runs", state, root):
        assert folder in at_first_change, folder
    # ... and every folder the run created is durable in its parent
    assert record.dirs_created == [".archive", ".archive/r"]
    for d in record.dirs_created:
        assert (root / d).parent in synced, d


# ---------------------------------------------------------------------------------------------
# 5. A journal that cannot be read is not taken for "interrupted before any change".


def test_an_unreadable_journal_is_never_discarded_with_its_backups(tmp_path):
    root = private_store(tmp_path)
    execute(root, MOVE_OPS, run_id="r1")
    run = root / ".memconsolidate" / "runs" / "r1"
    (run / "journal.json").write_text('{"run_id": "r1", "status": "prepa')  # damaged on disk
    blobs = sorted(p.name for p in (run / "before").iterdir())
    assert blobs
    with pytest.raises(RunFailed, match="journal"):
        recover(root)
    assert sorted(p.name for p in (run / "before").iterdir()) == blobs
    # a journal of valid JSON but an unknown shape is no internal error either
    (run / "journal.json").write_text(json.dumps({"run_id": "r1", "status": "committed", "from_the_future": 1}))
    with pytest.raises(RunFailed, match="journal"):
        recover(root)
    assert (run / "before").is_dir()


# ---------------------------------------------------------------------------------------------
# 6. claude: the folder report never lands on an archived memory file.


def test_the_folder_report_never_overwrites_an_archived_file(tmp_path):
    root = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude", root, symlinks=True)
    for name in ("REPORT.md", "REPORT.memconsolidate.md"):
        (root / A / name).write_text(f"---\nname: {name}\ntype: project\n---\n\nThe {name} memory itself.\n")
    before = files(root)
    corpus = claude.load(root, S)
    actions = [Action(kind="prune_stale", targets=[A + "REPORT.md", A + "REPORT.memconsolidate.md"], reason="constructed")]
    cs = claude_write.changes(corpus, actions, S, "run-1", None, findings=[])
    execute(root, cs.ops, run_id="run-1")
    after = files(root)
    for name in ("REPORT.md", "REPORT.memconsolidate.md"):
        assert after[f"{A}.archive/run-1/{name}"] == before[A + name], name
    reports = [k for k in after if k.startswith(f"{A}.archive/run-1/") and "Dream Consolidation Report" in after[k].decode()]
    assert len(reports) == 1


# ---------------------------------------------------------------------------------------------
# 7. `undo` without --run undoes the latest run, even two runs started in the same second.


def test_undo_takes_the_latest_run_when_two_share_a_second(tmp_path, monkeypatch):
    root = tmp_path / "s"
    root.mkdir()
    (root / "a.md").write_bytes(b"a\n")
    (root / "b.md").write_bytes(b"b\n")
    ids = iter(["20261129T020000Z-ffff", "20261129T020000Z-0000"])  # same second, random suffixes
    monkeypatch.setattr(journal, "new_run_id", lambda root=None: next(ids))
    execute(root, [Op("write", "a.md", data=b"a2\n")])
    execute(root, [Op("write", "b.md", data=b"b2\n")])
    monkeypatch.undo()
    undo(root)
    assert (root / "b.md").read_bytes() == b"b\n"  # the later run is undone
    assert (root / "a.md").read_bytes() == b"a2\n"  # the earlier one stays


def test_a_committed_run_is_still_undoable_byte_for_byte_after_these_checks(tmp_path):
    """The guards above must not get in the way of the normal round trip."""
    root = bank_store(tmp_path)
    original = files(root)
    execute(root, bank_ops(root), run_id="run-t")
    assert files(root) != original
    undo(root)
    assert files(root) == original


# ---------------------------------------------------------------------------------------------
# 8. A file whose name is not UTF-8 never stops apply (it used to end every apply, and every nightly
#    run, in "internal error: UnicodeEncodeError" before anything was applied).


def test_a_memory_file_with_a_non_utf8_name_does_not_block_apply(tmp_path):
    from helpers import run_cli, snapshot

    root = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude", root, symlinks=True)
    odd = os.fsencode(root / A) + b"/caf\xe9 notes.md"
    with open(odd, "wb") as fh:
        fh.write(b"---\nname: cafe\ntype: project\n---\n\nNotes about the cafe.\n")
    before = snapshot(root)
    res = run_cli("apply", str(root), "--now", NOW, "--model", "none", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "prune_stale" in [a["kind"] for a in out["applied"]]
    with open(odd, "rb") as fh:
        assert fh.read() == b"---\nname: cafe\ntype: project\n---\n\nNotes about the cafe.\n"
    assert run_cli("undo", str(root)).returncode == 0
    assert snapshot(root) == before


def test_archiving_a_file_with_a_non_utf8_name_writes_its_reports(tmp_path):
    root = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude", root, symlinks=True)
    odd = os.fsencode(root / A) + b"/caf\xe9 notes.md"
    with open(odd, "wb") as fh:
        fh.write(b"---\nname: cafe\ntype: project\n---\n\nNotes about the cafe.\n")
    corpus = claude.load(root, S)
    key = A + os.fsdecode(b"caf\xe9 notes.md")
    assert key in corpus.by_key()
    cs = claude_write.changes(corpus, [Action(kind="prune_stale", targets=[key], reason="constructed")], S, "run-1", None, findings=[])
    execute(root, cs.ops, run_id="run-1")
    with open(os.fsencode(root / A) + b"/.archive/run-1/caf\xe9 notes.md", "rb") as fh:
        assert fh.read().endswith(b"Notes about the cafe.\n")
    assert "caf" in (root / A / ".archive" / "run-1" / "REPORT.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# 9. The lock file never follows a symlink (a store cloned with `.memconsolidate/lock -> ~/x` made
#    every command truncate ~/x and write a pid into it).


def test_the_lock_never_truncates_a_file_through_a_symlink(tmp_path):
    from pipeline.lock import store_lock

    root = tmp_path / "s"
    (root / ".memconsolidate").mkdir(parents=True)
    precious = tmp_path / "precious.txt"
    precious.write_bytes(b"a file outside the store\n")
    (root / ".memconsolidate" / "lock").symlink_to(precious)
    with pytest.raises(RunFailed, match="lock"):
        with store_lock(root):
            pass
    assert precious.read_bytes() == b"a file outside the store\n"


# ---------------------------------------------------------------------------------------------
# 10. `run --if-due` never stops for good on a recorded time it cannot compare.


def test_if_due_runs_when_the_last_run_is_in_the_future_or_has_no_zone():
    from pipeline.workflow import is_due

    wall = dt.datetime(2026, 11, 29, 2, 0, tzinfo=dt.timezone.utc)
    # a clock that jumped years ahead once must not silence the nightly run until then
    assert is_due({"last_success": "2030-01-01T02:00:00+00:00"}, S, wall)[0]
    # a hand-edited time without a zone is read as UTC, not an internal error on every tick
    assert not is_due({"last_success": "2026-11-29T01:00:00"}, S, wall)[0]
    assert is_due({"last_success": 20261129}, S, wall)[0]


# ---------------------------------------------------------------------------------------------
# 11. bank: a prune that changes nothing is not reported as applied.


def test_a_bank_prune_of_only_pinned_records_is_skipped_not_applied(tmp_path):
    root = bank_store(tmp_path)
    corpus, settings = open_store(root, S)
    prune = Action(kind="prune_stale", targets=["blog/m011"], reason="constructed")  # m011 is pinned
    cs = bank_write.changes(corpus, [prune], settings, "run-t", None)
    assert cs.ops == [] and cs.applied == []
    assert [a for a, _ in cs.skipped] == [prune]


def test_a_symlinked_folder_never_carries_a_write_outside_the_store(tmp_path):
    import os

    from pipeline.errors import RunFailed
    from pipeline.journal import Op, execute

    store = tmp_path / "store"
    outside = tmp_path / "outside"
    store.mkdir()
    outside.mkdir()
    os.symlink(outside, store / "sessions")
    with pytest.raises(RunFailed, match="leads outside the store"):
        execute(store, [Op("write", "sessions/current.md", data=b"hello\n")])
    assert list(outside.iterdir()) == []


def test_a_symlinked_state_folder_is_refused(tmp_path):
    import os

    from pipeline.errors import RunFailed
    from pipeline.lock import state_dir

    store = tmp_path / "store"
    store.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", store / ".memconsolidate")
    with pytest.raises(RunFailed, match="symlink"):
        state_dir(store)


@pytest.mark.parametrize("layout,path", [("zylos", "reference/preferences.md"), ("crux", ".crux/memory-index.yml")])
def test_crux_and_zylos_writes_refuse_a_file_changed_since_it_was_read(layout, path, tmp_path):
    """The writer read the file; an agent then appended to it; the run must not overwrite that."""
    from pipeline.apply import select_actions
    from pipeline.config import build_settings
    from pipeline.errors import RunFailed
    from pipeline.journal import execute
    from pipeline.plan import build_plan
    from pipeline.layouts.registry import get, open_store

    from helpers import FIXTURES, copy_store

    store = copy_store(FIXTURES / layout, tmp_path / layout)
    settings = build_settings({}, {"now": NOW, "llm.model": "none"})
    corpus, settings = open_store(store, settings)
    plan = build_plan(corpus, settings)
    changes = get(layout).changes(corpus, select_actions(plan, None, None), settings, "run-1", None, plan.findings)
    assert any(op.path == path for op in changes.ops), [op.path for op in changes.ops]
    with open(store / path, "a", encoding="utf-8") as fh:
        fh.write("\nwritten by the agent meanwhile\n")
    appended = (store / path).read_bytes()
    with pytest.raises(RunFailed):
        execute(store, changes.ops)
    assert (store / path).read_bytes() == appended
