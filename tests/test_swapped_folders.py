"""A folder of the store swapped for a symlink while a run is changing it (red-team 4, bug 5).

The paths a run changes are checked before its first change; a folder on the way replaced by a
symlink after that (another process, a sync tool) must not carry a move, a write or a removal out
of the store. Each test swaps a folder from a hook right before one step of the run, as the
red-team's wrapper did, and checks that nothing outside the store was created, changed or removed,
that the command stops with one line naming the path (exit 2), and that the store is exactly as it
was, the planted symlink aside (someone else's: left as found).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, copy_store, run_cli

from pipeline import journal
from pipeline.errors import RunFailed
from pipeline.journal import Op, committed_runs, execute, recover, unfinished_runs, write_atomic

STATE = ".memconsolidate"


def tree(root: Path) -> dict[str, tuple]:
    """Every entry under `root` (its state folder aside): a file's bytes and mode, a folder, a
    symlink's target (never followed)."""
    out: dict[str, tuple] = {}
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        if here == root:
            dirs[:] = [d for d in dirs if d != STATE]
        for name in dirs + names:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("folder",)
            else:
                out[rel] = ("file", path.read_bytes(), path.stat().st_mode & 0o7777)
    return out


def duplicate_store(where: Path) -> Path:
    """The red-team's store: a Claude memory folder whose two memories are one duplicate."""
    where.mkdir(parents=True)
    (where / "MEMORY.md").write_text("- [A](a.md) — a fact\n- [A copy](a_copy.md) — a fact\n")
    for name in ("a", "a_copy"):
        (where / f"{name}.md").write_text("---\nname: a\ndescription: a fact\ntype: project\n---\nThe fact.\n")
    return where


def before_op(monkeypatch: pytest.MonkeyPatch, when, swap) -> list[Op]:
    """Run `swap(op)` once, right before the first op of the run for which `when(op)` holds."""
    real = journal._apply_op
    swapped: list[Op] = []

    def hooked(root, op, *args, **kwargs):
        if not swapped and when(op):
            swapped.append(op)
            swap(op)
        return real(root, op, *args, **kwargs)

    monkeypatch.setattr(journal, "_apply_op", hooked)
    return swapped


def link_out(folder: Path, outside: Path) -> None:
    """What the red-team's wrapper did: the folder removed, a symlink out of the store in its place."""
    shutil.rmtree(folder)
    folder.symlink_to(outside, target_is_directory=True)


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_an_archive_folder_swapped_for_a_symlink_before_the_first_move_sends_nothing_out(tmp_path, monkeypatch):
    store, outside = duplicate_store(tmp_path / "store"), tmp_path / "outside"
    outside.mkdir()
    before = tree(store)
    hooked = before_op(monkeypatch, lambda op: op.kind == "move", lambda op: link_out((store / op.dest).parent, outside))

    res = run_cli("apply", str(store), "--model", "none", "--now", NOW, "--yes")

    assert hooked, "the run never moved a file"
    moved = hooked[0]
    archive = Path(moved.dest).parent.as_posix()  # .archive/<run-id>
    assert res.returncode == 2, res.stderr
    line = one_line(res.stderr)
    assert f"refusing to change {moved.dest}: {archive} is not a folder of the store" in line, line
    assert "rolled back" in line
    assert list(outside.iterdir()) == []  # no archived memory, no MEMORY.md copy, no REPORT.md
    # the store as before, but for the symlink someone else planted (and the folder holding it)
    assert tree(store) == {**before, ".archive": ("folder",), archive: ("link", str(outside))}
    assert committed_runs(store) == [] and unfinished_runs(store) == ([], [])


def test_an_archive_folder_swapped_before_undo_moves_nothing_in_and_removes_nothing_outside(tmp_path, monkeypatch):
    store, outside = duplicate_store(tmp_path / "store"), tmp_path / "outside"
    outside.mkdir()
    assert run_cli("apply", str(store), "--model", "none", "--now", NOW, "--yes").returncode == 0
    (run,) = committed_runs(store)
    archive = f".archive/{run.run_id}"
    at_swap: dict[str, dict[str, tuple]] = {}

    def swap(op: Op) -> None:
        # the archive moved out of the store (its files along), a symlink to it left in its place
        (store / archive).rename(outside / "archive")
        (store / archive).symlink_to(outside / "archive", target_is_directory=True)
        at_swap.update(store=tree(store), outside=tree(outside))

    hooked = before_op(monkeypatch, lambda op: True, swap)
    res = run_cli("undo", str(store))

    assert hooked and hooked[0].path.startswith(f"{archive}/"), hooked  # the undo's first step: a move back
    assert res.returncode == 2, res.stderr
    line = one_line(res.stderr)
    assert f"refusing to change {hooked[0].path}: {archive} is not a folder of the store" in line, line
    # nothing outside moved into the store, nothing there removed (the archived MEMORY.md, REPORT.md)
    assert tree(outside) == at_swap["outside"]
    assert sorted(tree(outside)) == ["archive", "archive/MEMORY.md", "archive/REPORT.md", "archive/a_copy.md"]
    assert tree(store) == at_swap["store"]  # the undo rolled back whole
    assert [r.run_id for r in committed_runs(store)] == [run.run_id]  # still applied, not undone
    assert unfinished_runs(store) == ([], [])


def test_a_reports_folder_swapped_before_the_report_is_written_gets_no_report(tmp_path, monkeypatch):
    store, outside = copy_store(FIXTURES / "bank", tmp_path / "store"), tmp_path / "outside"
    outside.mkdir()
    before = tree(store)
    reports = store / STATE / "reports"
    hooked = before_op(monkeypatch, lambda op: op.path.startswith(f"{STATE}/reports/"), lambda op: link_out(reports, outside))

    res = run_cli("apply", str(store), "--model", "none", "--now", NOW, "--yes")

    assert hooked, "the run wrote no report"
    assert res.returncode == 2, res.stderr
    line = one_line(res.stderr)
    assert f"refusing to change {hooked[0].path}: {STATE}/reports is not a folder of the store" in line, line
    assert list(outside.iterdir()) == []
    assert tree(store) == before  # the memories rewritten before it are put back
    assert reports.is_symlink()  # what someone else put there is left as found
    assert committed_runs(store) == [] and unfinished_runs(store) == ([], [])


def test_write_atomic_in_a_store_never_writes_through_a_symlinked_folder(tmp_path):
    store, outside = tmp_path / "store", tmp_path / "outside"
    (store / STATE).mkdir(parents=True)
    outside.mkdir()
    (store / STATE / "reports").symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError) as exc:  # storage.anchored.Swapped: an OSError, as any failed write
        write_atomic(store / STATE / "reports" / "run.md", b"# report\n", root=store)
    assert (exc.value.folder, exc.value.path) == (f"{STATE}/reports", f"{STATE}/reports/run.md")  # type: ignore[attr-defined]
    assert list(outside.iterdir()) == []


def test_a_folder_swapped_while_a_crashed_run_is_rolled_back_is_not_followed(tmp_path, monkeypatch):
    store, outside = duplicate_store(tmp_path / "store"), tmp_path / "outside"
    outside.mkdir()
    before = tree(store)
    ops = [Op("move", "a_copy.md", dest=".archive/r1/a_copy.md"), Op("write", "MEMORY.md", data=b"- [A](a.md) \xe2\x80\x94 a fact\n")]

    class Crash(BaseException):
        """Stands for SIGKILL: nothing in the journal catches it."""

    before_op(monkeypatch, lambda op: op.kind == "write", lambda op: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        execute(store, ops, run_id="r1")
    monkeypatch.undo()
    # Past recovery's check of the journal's paths, the archive holding the moved memory is moved
    # out of the store and a symlink to it put in its place, with a second file beside it there.
    real_restore = journal._restore

    def swap_then_restore(root, *args, **kwargs):
        if not (store / ".archive/r1").is_symlink():
            (store / ".archive/r1").rename(outside / "r1")
            (store / ".archive/r1").symlink_to(outside / "r1", target_is_directory=True)
            (outside / "r1" / "other.md").write_bytes(b"someone else's\n")
        return real_restore(root, *args, **kwargs)

    monkeypatch.setattr(journal, "_restore", swap_then_restore)
    with pytest.raises(RunFailed) as exc:
        recover(store)
    assert exc.value.exit_code == 2 and ".archive/r1/a_copy.md" in str(exc.value), exc.value
    # Outside, the moved memory is neither linked into the store nor removed.
    assert sorted(tree(outside)) == ["r1", "r1/a_copy.md", "r1/other.md"]
    assert (outside / "r1" / "a_copy.md").read_bytes() == before["a_copy.md"][1]
    assert os.stat(outside / "r1" / "a_copy.md").st_nlink == 1
    # In the store, the memory is back from the run's copy; only the planted symlink is new.
    assert tree(store) == {**before, ".archive": ("folder",), ".archive/r1": ("link", str(outside / "r1"))}


def test_an_error_in_an_anchored_folder_names_the_file_with_its_folder(tmp_path):
    # review (session 16): write_atomic's temporary file failing in `reference/` was reported as
    # `.mc-tmp-…` at the store's root: only the target's own name was given its folder back
    from pipeline.storage import anchored

    (tmp_path / "reference").mkdir()
    target = tmp_path / "reference" / "prefs.md"
    for named, shown in (("prefs.md", target), (".mc-tmp-1", tmp_path / "reference" / ".mc-tmp-1")):
        with pytest.raises(PermissionError) as caught:
            with anchored.parent(tmp_path, target):
                raise PermissionError(1, "operation not permitted", named)
        assert caught.value.filename == str(shown)
