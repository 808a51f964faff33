"""Memories whose file names are near NAME_MAX (255 bytes): 82 CJK characters are 246 bytes.

Every write goes through a temp file in the same folder; its name must fit wherever the file's own
name does, or a run that rewrites such a file fails whole and an undo that puts one back fails half
way (red-team bug 8: the archived copy removed first, the write back refused, the memory left in
neither place and the undo's rollback refused the same way).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from helpers import NOW, files, kill_undo_at_every_step, run_cli, snapshot

from pipeline import journal
from pipeline.config import Settings
from pipeline.journal import Op, execute, recover, sha, undo, undo_ops
from pipeline.layouts.claude import reader as claude, writer as claude_write
from pipeline.model import Action

P = ".claude/projects/-home-dev-acme-shop/memory/"
LONG = "移行" * 41 + ".md"  # 246 bytes + 3: a temp name of `.NAME.mc-tmp-XXXXXX` would be 264
S = Settings(now=dt.date.fromisoformat(NOW))
APPLY = ("--now", NOW, "--model", "none", "--yes")


def test_the_name_is_near_name_max():
    assert 240 < len(LONG.encode()) <= 255
    assert len(journal.tmp_name().encode()) < 32 and journal.TMP_NAME.fullmatch(journal.tmp_name())


@pytest.fixture
def long_dup(fixture_store) -> Path:
    """The claude fixture with an exact duplicate of a memory under a long name: the run archives it."""
    store = fixture_store("claude")
    (store / P / LONG).write_bytes((store / P / "project_migrations.md").read_bytes())
    os.utime(store / P / "project_migrations.md", (1_577_836_800, 1_577_836_800))  # 2020: the older survives, the copy goes
    return store


def test_a_long_named_memory_archived_by_a_run_is_back_byte_for_byte_after_undo(long_dup):
    before = snapshot(long_dup)
    res = run_cli("apply", str(long_dup), *APPLY)
    assert res.returncode == 0, res.stderr
    archived = [k for k in files(long_dup) if k.endswith(LONG)]
    assert len(archived) == 1 and "/.archive/" in archived[0]
    res = run_cli("undo", str(long_dup))
    assert res.returncode == 0, res.stderr
    assert snapshot(long_dup) == before
    again = run_cli("plan", str(long_dup), "--now", NOW, "--model", "none")
    assert again.returncode == 0 and "could not be fully rolled back" not in again.stderr


def test_undo_moves_a_moved_file_back_and_removes_nothing_before_every_file_is_back(tmp_path):
    root = tmp_path / "s"
    (root / "m").mkdir(parents=True)
    (root / "m" / LONG).write_bytes(b"the memory\n")
    (root / "m" / "index.md").write_bytes(b"- one\n")
    record = execute(root, [
        Op("move", f"m/{LONG}", dest=f"m/.archive/r/{LONG}", expect=sha(b"the memory\n")),
        Op("write", "m/index.md", data=b"- none\n"),
        Op("write", "m/.archive/r/REPORT.md", data=b"report\n"),
    ], run_id="r")
    ops, _ = undo_ops(root, record)
    # the archived file goes back by a rename (no copy, no temp file), the report goes last
    assert [(o.kind, o.path, o.dest) for o in ops] == [
        ("move", f"m/.archive/r/{LONG}", f"m/{LONG}"),
        ("write", "m/index.md", None),
        ("remove", "m/.archive/r/REPORT.md", None),
    ]
    inode = (root / "m" / ".archive" / "r" / LONG).stat().st_ino
    undo(root)
    assert (root / "m" / LONG).read_bytes() == b"the memory\n" and (root / "m" / LONG).stat().st_ino == inode
    assert sorted(p.name for p in (root / "m").iterdir()) == sorted([LONG, "index.md"])


def test_a_long_named_memory_noted_by_keep_both_is_applied_and_undone(fixture_store):
    store = fixture_store("claude")
    os.rename(store / P / "feedback_pnpm.md", store / P / LONG)
    before = files(store)
    corpus = claude.load(store, S)
    act = Action(kind="conflict", targets=[P + "feedback_npm.md", P + LONG], reason="pnpm or npm", needs_user=True)
    cs = claude_write.changes(corpus, [act], S, "run-1", "keep-both")
    assert [a.kind for a in cs.applied] == ["conflict"]
    execute(store, cs.ops, run_id="run-1")  # a rewrite of the long-named file, through a temp file
    assert files(store)[P + LONG].startswith(before[P + LONG]) and b"Note (memconsolidate" in files(store)[P + LONG]
    undo(store)
    assert files(store) == before


def test_an_undo_left_half_done_by_an_earlier_version_is_rolled_back_then_undone(long_dup):
    """Earlier versions undid a move by removing the archived copy, then writing the file back, which
    failed for a long name. Recovery of such a run (its archived copy gone, the file not yet back)
    writes the copy back from the undo's own journal; the undo then runs whole."""
    before = snapshot(long_dup)
    assert run_cli("apply", str(long_dup), *APPLY).returncode == 0
    after = snapshot(long_dup)
    [archived] = [k for k in files(long_dup) if k.endswith(LONG)]
    data = (long_dup / archived).read_bytes()

    class Crash(BaseException):
        pass

    done: list[str] = []
    real = journal._apply_op

    def crash_after_the_first(root, op, *args, **kwargs):
        if done:
            raise Crash()
        done.append(op.path)
        return real(root, op, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(journal, "_apply_op", crash_after_the_first)
        with pytest.raises(Crash):  # the order of earlier versions: remove, then write
            execute(long_dup, [Op("remove", archived, expect=sha(data)), Op("write", P + LONG, data=data, expect="absent")],
                    info={"undo_of": "x"})
    assert done == [archived] and not any(k.endswith(LONG) for k in files(long_dup))
    messages = recover(long_dup)
    assert len(messages) == 1 and messages[0].startswith("rolled back run"), messages
    assert snapshot(long_dup) == after
    res = run_cli("undo", str(long_dup))
    assert res.returncode == 0, res.stderr
    assert snapshot(long_dup) == before


def test_undo_of_a_long_named_memory_killed_at_every_step_is_undone_by_the_next_undo(fixture_store):
    def prepare(step):
        store = fixture_store("claude", f"k{step}")
        (store / P / LONG).write_bytes((store / P / "project_migrations.md").read_bytes())
        os.utime(store / P / "project_migrations.md", (1_577_836_800, 1_577_836_800))
        before = snapshot(store)
        assert run_cli("apply", str(store), *APPLY).returncode == 0
        return store, before

    assert kill_undo_at_every_step(prepare) >= 3
