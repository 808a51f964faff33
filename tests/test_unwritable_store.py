"""A store that refuses to be written (an immutable MEMORY.md, a read-only folder, a read-only file
system): apply, run and undo exit 2 in one line, as the help says, with the run rolled back whole
and its journal saying so; a full disk stays a run that failed (exit 1, tests/test_disk_full.py).
Red-team 4: such a store exited 1, and `runs` listed the rolled-back run as applied, with an undo.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import run_cli, snapshot

from pipeline import journal

NOW = "2026-12-06"


def claude_store(where: Path) -> Path:
    """A merge and an index rebuild to apply automatically: MEMORY.md is rewritten, a file archived."""
    memory = where / ".claude" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- [A](project_a.md) — a\n- [Gone](project_gone.md) — gone\n")
    (memory / "project_a.md").write_text("---\nname: a\ndescription: a\ntype: project\n---\nThe deploy script.\n")
    for name in ("project_b.md", "project_c.md"):
        (memory / name).write_text("---\nname: b\ndescription: b\ntype: project\n---\nThe b thing.\n")
    return where


def refuse(patch: pytest.MonkeyPatch, code: int, name: str, what: str = "write_atomic") -> None:
    """Make the store refuse one change, as chattr +i, a read-only mount or permissions do."""

    def refused(real):
        def call(path, *args, **kwargs):
            if Path(path).name == name and "runs" not in Path(path).parts:
                raise OSError(code, os.strerror(code), str(path))
            return real(path, *args, **kwargs)

        return call

    if what == "write_atomic":
        patch.setattr(journal, "write_atomic", refused(journal.write_atomic))
    else:  # the journal makes its folders one part at a time, each by name in its parent (anchored.py)
        patch.setattr(os, "mkdir", refused(os.mkdir))


def one_line_exit_2(res) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    return res.stderr.strip()


@pytest.mark.parametrize("code, name, what", [
    (errno.EPERM, "MEMORY.md", "write_atomic"),  # an immutable MEMORY.md
    (errno.EROFS, "MEMORY.md", "write_atomic"),  # a read-only file system
    (errno.EACCES, ".archive", "mkdir"),  # a memory folder that cannot be written
])
@pytest.mark.parametrize("command", [("apply", "--yes"), ("run",)])
def test_a_store_that_cannot_be_written_exits_2_and_is_left_as_it_was(tmp_path, monkeypatch, code, name, what, command):
    store = claude_store(tmp_path / "s")
    before = snapshot(store)
    with monkeypatch.context() as patch:
        refuse(patch, code, name, what)
        line = one_line_exit_2(run_cli(command[0], str(store), "--model", "none", "--now", NOW, *command[1:]))
    assert line.startswith(f"memconsolidate: cannot write {store}: "), line
    assert snapshot(store) == before  # nothing half-applied
    runs = json.loads(run_cli("runs", str(store), "--json").stdout)
    assert [(r["status"], r["undoable"]) for r in runs] == [("rolled_back", False)]
    shown = run_cli("runs", str(store)).stdout
    assert "failed and rolled back (2 actions): nothing changed" in shown and "undo:" not in shown
    # the store writable again: the next command applies it all
    assert run_cli("apply", str(store), "--model", "none", "--now", NOW, "--yes").returncode == 0
    assert not (store / ".claude/memory/project_c.md").exists()


def test_an_undo_the_store_refuses_exits_2_and_is_not_listed_as_done(tmp_path, monkeypatch):
    store = claude_store(tmp_path / "s")
    assert run_cli("apply", str(store), "--model", "none", "--now", NOW, "--yes").returncode == 0
    applied = snapshot(store)
    with monkeypatch.context() as patch:
        refuse(patch, errno.EPERM, "MEMORY.md")
        line = one_line_exit_2(run_cli("undo", str(store)))
    assert line.startswith(f"memconsolidate: cannot write {store}: ")
    assert snapshot(store) == applied
    shown = run_cli("runs", str(store)).stdout
    assert "failed and rolled back (undo of run " in shown and "restored" not in shown
    assert run_cli("undo", str(store)).returncode == 0  # the run still undoable, and undone now
    assert (store / ".claude/memory/project_c.md").exists()


def test_a_full_disk_is_still_a_run_that_failed(tmp_path, monkeypatch):
    store = claude_store(tmp_path / "s")
    refuse(monkeypatch, errno.ENOSPC, "MEMORY.md")
    res = run_cli("apply", str(store), "--model", "none", "--now", NOW, "--yes")
    assert res.returncode == 1 and "no space left on device" in res.stderr, res.stderr


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None, reason="chattr +i needs root and chattr")
def test_an_immutable_memory_index_for_real(tmp_path):
    store = claude_store(tmp_path / "s")
    index = store / ".claude/memory/MEMORY.md"
    if subprocess.run(["chattr", "+i", str(index)], capture_output=True).returncode != 0:
        pytest.skip("this file system takes no immutable attribute")
    try:
        before = snapshot(store)
        line = one_line_exit_2(run_cli("apply", str(store), "--model", "none", "--now", NOW, "--yes"))
        assert line == f"memconsolidate: cannot write {store}: .claude/memory/MEMORY.md: operation not permitted"
        assert snapshot(store) == before
    finally:
        subprocess.run(["chattr", "-i", str(index)], check=True)
