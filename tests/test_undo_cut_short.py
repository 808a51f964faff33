"""An undo killed just past its commit: the store's files are back, but the folders the undone run
had created (its archive folder, the reports folder) were removed by the undo's last step, which the
kill cut off. They stayed, empty, until the next `undo`; the recovery every command that writes
starts with now removes them: only those the run's signed journal records creating, only empty
ones, never through a symlink.

Each kill is a real one (helpers.start_cli: a process of its own, ended by os._exit at a fault step).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from helpers import FAULT_ENV, NOW, copy_store, run_cli, snapshot, start_cli

from pipeline.history import run_history
from pipeline.journal import recover

FOLDER = ".claude/agent-memory/ops/"
APPLY = ("--now", NOW, "--model", "none", "--yes")


def _memory(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {name}\ntype: project\n---\n\n{body}\n"


def duplicates(root: Path, names: tuple[str, str] = ("cache_a", "cache_b")) -> Path:
    """A claude folder holding two memories of the same text: `apply` archives the second one into
    `.archive/<run-id>/`, a folder it creates."""
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.md").write_text(_memory(name, f"The CI key of {names[0]} includes the lockfile hash."))
    index = folder / "MEMORY.md"
    lines = index.read_text() if index.exists() else "# Memory\n\n"
    index.write_text(lines + "".join(f"- [{n}]({n}.md) — {n}\n" for n in names))
    return root


def one_run(root: Path) -> Path:
    """A store of `duplicates` with the run `apply` made on it."""
    applied(duplicates(root))
    return root


def applied(store: Path) -> str:
    """The id of the run `apply` makes on `store`."""
    res = run_cli("apply", str(store), *APPLY)
    assert res.returncode == 0, res.stderr
    return run_history(store)[-1].run_id


def undo_steps(twin: Path) -> int:
    """How many fault steps an undo of the last run of `twin` (a store made as the one to kill is)
    passes: the last comes right after its commit."""
    child = start_cli("undo", str(twin), report_steps=True)
    steps = 0
    while (seen := child.next_step()) is not None:
        steps = seen
    assert child.wait().returncode == 0
    return steps


def kill_undo_after_its_commit(store: Path, steps: int) -> None:
    killed = run_cli("undo", str(store), env={**os.environ, FAULT_ENV: str(steps)})
    assert killed.returncode == 99, killed.stderr
    undo = run_history(store)[-1]
    assert undo.undo_of and undo.status == "committed"  # the undo itself is done: only its last step is not


def made_again_after_the_kill(tmp_path: Path) -> tuple[Path, Path]:
    """A store whose undo was killed past its commit, and the run's archive folder, removed and made
    again since (an agent's mkdir just before its write, or the user's): someone else's now."""
    store = duplicates(tmp_path / "s")
    run = applied(store)
    kill_undo_after_its_commit(store, undo_steps(one_run(tmp_path / "twin")))
    left = store / FOLDER / ".archive" / run
    # "Since": later than the undo's commit by the file-time clock, which ticks every few ms (the
    # kernel's coarse clock); made in the same tick, the folder's change time equals the commit's and
    # is taken as the undo's own (the test failed 1 run in 6 so).
    time.sleep(0.05)
    left.rmdir()
    left.mkdir()
    return store, left


def test_the_next_command_removes_the_empty_folders_a_cut_short_undo_left(tmp_path):
    store = duplicates(tmp_path / "s")
    run = applied(store)
    kill_undo_after_its_commit(store, undo_steps(one_run(tmp_path / "twin")))
    left = store / FOLDER / ".archive" / run
    assert left.is_dir() and not any(left.iterdir())  # what the kill leaves: the run's folders, empty

    res = run_cli("apply", str(store), *APPLY)  # the next night's apply, or any command that writes
    assert res.returncode == 0, res.stderr
    assert not left.exists()
    assert f"the undo of run {run}, was interrupted after its commit: removed the empty folders" in res.stderr


def test_recovery_leaves_the_store_exactly_as_before_the_undone_run(tmp_path):
    store = duplicates(tmp_path / "s")
    before = snapshot(store)  # folders included
    applied(store)
    kill_undo_after_its_commit(store, undo_steps(one_run(tmp_path / "twin")))
    assert snapshot(store) != before
    said = recover(store)
    assert snapshot(store) == before
    assert len(said) == 1 and "was interrupted after its commit" in said[0]
    assert not (store / ".memconsolidate" / "reports").exists()  # the run made it for its report
    assert recover(store) == []  # done once: nothing more to say


def test_a_second_undo_after_the_kill_finishes_that_undo_and_undoes_nothing_more(tmp_path):
    store = duplicates(tmp_path / "s")
    first = applied(store)
    duplicates(store, ("deploy_a", "deploy_b"))
    before = snapshot(store)
    second = applied(store)
    twin = duplicates(one_run(tmp_path / "twin"), ("deploy_a", "deploy_b"))
    applied(twin)
    kill_undo_after_its_commit(store, undo_steps(twin))

    again = run_cli("undo", str(store))
    assert again.returncode == 0, again.stderr
    assert snapshot(store) == before  # the second run undone, the first one still applied
    status = {e.run_id: e.status for e in run_history(store)}
    assert (status[first], status[second]) == ("committed", "undone")


def test_only_empty_folders_the_signed_journal_records_are_removed_and_never_through_a_symlink(tmp_path):
    store = duplicates(tmp_path / "s")
    run = applied(store)
    kill_undo_after_its_commit(store, undo_steps(one_run(tmp_path / "twin")))
    archive = store / FOLDER / ".archive"
    outside = tmp_path / "outside"
    outside.mkdir()
    (archive / run).rmdir()
    (archive / run).symlink_to(outside)  # a recorded folder swapped for a symlink to an empty folder
    (store / "notes").mkdir()  # an empty folder the journal does not record

    # A copy of the store: its key is not a key there (another inode), its journals are no one's.
    copy = copy_store(store, tmp_path / "copy")
    assert recover(copy, strict=False) == []
    assert (copy / ".memconsolidate" / "reports").is_dir()

    recover(store)
    assert (archive / run).is_symlink() and outside.is_dir()  # neither followed nor removed
    assert archive.is_dir()  # recorded, but not empty: kept
    assert (store / "notes").is_dir()
    assert not (store / ".memconsolidate" / "reports").exists()  # recorded and empty: removed


def test_a_folder_made_again_since_the_undo_is_not_ours_to_remove(tmp_path):
    """The undone run stays recorded as committed after the kill, so every later command that writes
    looked again: an empty folder of the same name made since (an agent's mkdir just before its
    write, or the user's) was removed each time, with the "interrupted" message each time."""
    store, left = made_again_after_the_kill(tmp_path)
    said = recover(store)  # what every command that writes starts with
    assert left.is_dir() and not any(".archive" in m for m in said)  # only the folders untouched since went
    assert recover(store) == [] and left.is_dir()  # and the next says nothing


def test_a_kill_between_the_undos_own_removals_leaves_no_empty_parent(tmp_path):
    """The undo's last step removes the run's folders deepest first: killed after it removed
    `.archive/<run>`, the parent `.archive/` had changed since the commit (a removal changes its
    folder), and recovery, taking it for someone else's, left it empty."""
    store = duplicates(tmp_path / "s")
    before = snapshot(store)
    run = applied(store)
    kill_undo_after_its_commit(store, undo_steps(one_run(tmp_path / "twin")))
    (store / FOLDER / ".archive" / run).rmdir()  # what the undo's first removal did before the kill
    recover(store)
    assert snapshot(store) == before and not (store / FOLDER / ".archive").exists()


def test_a_second_undo_leaves_a_folder_made_again_since_the_kill(tmp_path):
    """The second `undo` finishing the first removed the run's recorded folders with no such check:
    an empty folder of the same name made since the kill went, the one recovery had just kept."""
    store, left = made_again_after_the_kill(tmp_path)
    again = run_cli("undo", str(store))
    assert again.returncode == 0, again.stderr
    assert left.is_dir()
    assert recover(store) == [] and left.is_dir()  # settled: nothing looks again
