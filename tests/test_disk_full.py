"""A full disk, at every point of a run, and a file replaced by a folder: one clean line, exit 1,
the store unchanged; or, when the disk fills at the commit, the run applied whole and reported so.
Never "applied but failed, rolled back by the next command".

The disk is filled in-process: `os.write`, `os.fsync` or `write_atomic` raise ENOSPC from their
Nth call on (a disk stays full once it is), so no root or tmpfs is needed.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import FIXTURES, NOW, files

from pipeline import journal
from pipeline.apply import select_actions
from pipeline.config import Settings
from pipeline.errors import RunFailed
from pipeline.journal import execute, recover, unfinished_runs
from pipeline.plan import build_plan
from pipeline.layouts.registry import layout_of, open_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
RUN = "run-df"


def store_of(layout: str, where: Path) -> Path:
    shutil.copytree(FIXTURES / layout, where, symlinks=True)
    return where


def ops_of(root: Path):
    corpus, settings = open_store(root, S)
    actions = select_actions(build_plan(corpus, settings), None, None)
    return layout_of(corpus).changes(corpus, actions, settings, RUN, None).ops


class Full:
    """Makes one function raise ENOSPC from its `n`th call on; counts whether it ever did."""

    def __init__(self, n: int) -> None:
        self.n, self.calls, self.hit = n, 0, False

    def wrap(self, real):
        def full(*args, **kwargs):
            self.calls += 1
            if self.calls >= self.n:
                self.hit = True
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(*args, **kwargs)

        return full


def fill(monkeypatch, where: str, n: int) -> Full:
    full = Full(n)
    if where == "write_atomic":
        monkeypatch.setattr(journal, "write_atomic", full.wrap(journal.write_atomic))
    else:
        monkeypatch.setattr(os, where, full.wrap(getattr(os, where)))
    return full


@pytest.mark.parametrize("layout", ["bank", "claude", "zylos"])
@pytest.mark.parametrize("where", ["write", "fsync", "write_atomic"])
def test_a_disk_that_fills_at_any_point_leaves_the_store_before_or_after(layout, where, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMCONSOLIDATE_CLOCK", "2026-11-29T09:30:00+00:00")
    ref = store_of(layout, tmp_path / "ref")
    ref_ops = ops_of(ref)
    before = files(ref)
    execute(ref, ref_ops, run_id=RUN)
    after = files(ref)
    outcomes = set()
    for n in range(1, 200):
        root = store_of(layout, tmp_path / f"n{n}")
        # the reference's ops, planned once: a copy of the same store plans the same ops (paths are
        # relative to the store, `expect` hashes its bytes), and Op is frozen
        ops = list(ref_ops)
        with monkeypatch.context() as m:
            full = fill(m, where, n)
            try:
                record = execute(root, ops, run_id=RUN)
                failed = None
            except RunFailed as exc:
                failed = str(exc)
        if failed is None:
            # applied and reported applied: the whole run, committed
            assert record.status == "committed"
            assert files(root) == after, f"{where} {n}"
            assert unfinished_runs(root)[0] == []
            outcomes.add("applied")
            if not full.hit:
                break  # the disk never filled: every point of the run has been tried
            continue
        # refused: one line, the store as before, right now (not after the next command)
        assert failed == f"cannot write {root}: no space left on device", failed
        assert files(root) == before, f"{where} {n}"
        outcomes.add("refused")
        # whatever bookkeeping a full disk stopped, the next command changes nothing more
        recover(root)
        assert files(root) == before
        assert unfinished_runs(root)[0] == []
    else:
        pytest.fail("the run never completed")
    assert "refused" in outcomes


def test_a_disk_that_fills_right_at_the_commit_still_commits(tmp_path, monkeypatch):
    """The commit record is written over space set aside when the journal was: it needs none."""
    root = store_of("bank", tmp_path / "bank")
    ops = ops_of(root)
    real_apply, real_write = journal._apply_op, os.write
    done = []

    def count(*args, **kwargs):
        real_apply(*args, **kwargs)
        done.append(1)

    def write(fd, data):
        if len(done) == len(ops):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(journal, "_apply_op", count)
    monkeypatch.setattr(os, "write", write)
    record = execute(root, ops, run_id=RUN)
    monkeypatch.undo()
    assert record.status == "committed"
    assert unfinished_runs(root)[0] == []


def test_a_commit_that_cannot_be_recorded_is_rolled_back_before_returning(tmp_path, monkeypatch):
    root = store_of("claude", tmp_path / "claude")
    ops = ops_of(root)
    before = files(root)
    real = journal._save_record

    def save(run, record, key):
        if record.status == "committed":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(run, record, key)

    monkeypatch.setattr(journal, "_save_record", save)
    with pytest.raises(RunFailed, match="no space left on device"):
        execute(root, ops, run_id=RUN)
    assert files(root) == before
    assert unfinished_runs(root)[0] == []


def test_the_command_line_says_one_line_and_exits_1(tmp_path, monkeypatch):
    from pipeline.cli import app

    root = store_of("bank", tmp_path / "bank")
    before = files(root)
    fill(monkeypatch, "write_atomic", 2)  # a copy of the store fits, the journal does not
    res = CliRunner().invoke(app, ["apply", str(root), "--now", NOW, "--model", "none", "--yes"])
    assert res.exit_code == 1
    assert res.stderr == f"memconsolidate: cannot write {root}: no space left on device\n"
    assert files(root) == before
    assert not list((root / ".memconsolidate" / "runs").iterdir())  # no half-made run left


# ---------------------------------------------------------------------------------------------
# A file replaced by a folder


def test_a_target_replaced_by_a_folder_before_apply_is_one_clean_line(tmp_path):
    root = store_of("bank", tmp_path / "bank")
    ops = ops_of(root)
    (root / "blog" / "memories.jsonl").unlink()
    (root / "blog" / "memories.jsonl").mkdir()
    before = files(root)
    with pytest.raises(RunFailed) as exc:
        execute(root, ops, run_id=RUN)
    assert str(exc.value) == f"cannot write {root}: blog/memories.jsonl is a directory"
    assert files(root) == before


def test_a_target_replaced_by_a_folder_during_apply_is_rolled_back_and_kept(tmp_path, monkeypatch):
    root = store_of("claude", tmp_path / "claude")
    ops = ops_of(root)
    index = next(op.path for op in ops if op.kind == "write" and op.path.endswith("/MEMORY.md") and "/.archive/" not in op.path)
    before = files(root)
    real = journal._apply_op

    def folder_first(root_, op, *args, **kwargs):
        if op.path == index:
            (root / index).unlink()
            (root / index).mkdir()  # something else put a folder there, mid-run
        return real(root_, op, *args, **kwargs)

    monkeypatch.setattr(journal, "_apply_op", folder_first)
    with pytest.raises(RunFailed) as exc:
        execute(root, ops, run_id=RUN)
    message = str(exc.value)
    assert message.startswith(f"cannot write {root}: {index} is a directory") and "\n" not in message
    assert (root / index).is_dir()  # what someone else put there is left as found
    # and the run's archived copy of the old index stays: the only copy of it left in the store
    copy = index.replace("MEMORY.md", f".archive/{RUN}/MEMORY.md")
    assert files(root) == {**{k: v for k, v in before.items() if k != index}, copy: before[index]}
    assert copy in message
    assert unfinished_runs(root)[0] == []


def test_a_nightly_run_applied_but_not_recorded_exits_0_with_a_warning(tmp_path, monkeypatch):
    from pipeline import workflow
    from pipeline.cli import app

    root = store_of("bank", tmp_path / "bank")
    real = workflow.write_atomic

    def full_for_state(path, *args, **kwargs):
        if Path(path).name == workflow.STATE_FILE:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(workflow, "write_atomic", full_for_state)
    res = CliRunner().invoke(app, ["run", str(root), "--now", NOW, "--model", "none"])
    assert res.exit_code == 0, res.stderr
    assert "applied but could not be recorded" in res.stderr and "no space left on device" in res.stderr
    assert journal.committed_runs(root)  # applied whole, never rolled back
    assert not (root / ".memconsolidate" / workflow.STATE_FILE).exists()
