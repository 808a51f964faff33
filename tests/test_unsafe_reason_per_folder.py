"""`journal.unsafe_reasons`, the per-folder `unsafe_reason` the claude plan asks of every memory,
says what `unsafe_reason` said path by path before the folders were judged once each (session 18):
the same verdict, word for word, for every shape of path and folder."""

from __future__ import annotations

import os
import random
from pathlib import Path, PurePosixPath

import pytest

from pipeline.config import STATE_DIR
from pipeline.journal import unsafe_reason, unsafe_reasons
from pipeline.journal_check import path_problem


def old_unsafe_reason(root: Path, p: str, folder: bool = False) -> str | None:
    """`journal.unsafe_reason` as of d93205c, verbatim (its `_astray` inlined): the oracle."""
    problem = path_problem(p, folder)
    if problem is not None:
        return f"path {p!r} {problem}"
    if (root / p).is_symlink():
        return "it is a symlink"
    folder_path = (root / p).parent
    while not folder_path.exists() and folder_path != root:
        folder_path = folder_path.parent
    try:
        below = folder_path.resolve().relative_to(root.resolve())
    except ValueError:
        return "a folder on its path leads outside the store"
    if STATE_DIR in below.parts and STATE_DIR not in PurePosixPath(p).parts:
        return f"a folder on its path leads into {STATE_DIR}/"
    if below != folder_path.relative_to(root):
        return f"a folder on its path is a symlink (to {below.as_posix() or '.'})"
    return None


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x\n")


def hostile_store(tmp_path: Path) -> tuple[Path, list[str]]:
    """A store whose memory folders are reached every way `unsafe_reason` tells apart, and the paths
    asked: each file there, and some that are not (yet)."""
    root, outside = tmp_path / "store", tmp_path / "outside"
    for p in ("top.md", "mem/a.md", "mem/b.md", "mem/deep/c.md", "mem/.archive/r1/old.md", "real/r.md",
              f"{STATE_DIR}/reports/run.md", f"{STATE_DIR}/key", "mem/zz\\notes.md", "mem/back\\slash/d.md"):
        touch(root / p)
    touch(outside / "o.md")
    touch(outside / "nested/n.md")
    links = {
        "mem/linked": "../real",  # a folder linked inside the store
        "mem/out": str(outside),  # ... out of it
        "mem/dangling": "../nowhere",  # ... to nothing
        "mem/state": f"../{STATE_DIR}",  # ... into the state folder
        "mem/loop": "loop",  # ... to itself
        "real/back": "..",  # ... to an ancestor
        "mem/link.md": "a.md",  # a file linked
        "mem/dangling.md": "gone.md",
        "mem/deep/.archive": "../../real",  # an archive folder linked to a memory folder
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    touch(root / "real/.archive/kept.md")
    asked = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()]
    asked += [  # through the links, and paths not there
        "mem/linked/r.md", "mem/linked/new.md", "mem/linked/sub/new.md", "mem/out/o.md", "mem/out/nested/n.md",
        "mem/out/missing/x.md", "mem/dangling/x.md", "mem/dangling/sub/x.md", "mem/state/key", "mem/state/reports/x.md",
        f"mem/state/{STATE_DIR}", f"mem/{STATE_DIR}", "mem/loop/x.md", "real/back/mem/a.md", "real/back/real/back/top.md",
        "missing/a/b.md", "mem/missing.md", "mem/deep/.archive/r.md", "mem/deep/.archive/RUN/c.md",
        "", ".", "mem/../top.md", "/etc/passwd", "mem//a.md", "mem/./a.md", f"{STATE_DIR}/journal.json",
        f"{STATE_DIR.upper()}/x.md", "a\x00b.md", "x" * 5000, "mem\\a.md",
    ]
    return root, asked


@pytest.mark.parametrize("via_link", [False, True])
def test_the_per_folder_verdicts_are_the_path_by_path_ones(tmp_path, via_link):
    root, asked = hostile_store(tmp_path)
    if via_link:  # the store named through a symlink to it
        os.symlink(root, tmp_path / "store-link")
        root = tmp_path / "store-link"
    old = {p: old_unsafe_reason(root, p) for p in asked}
    assert len(set(old.values())) >= 8, old  # every kind of verdict is met, not only None
    for seed in range(5):  # whatever order a pass asks in: a folder's first verdict serves the rest
        order = asked[:]
        random.Random(seed).shuffle(order)
        refused = unsafe_reasons(root)
        assert {p: refused(p) for p in order} == old
    assert {p: unsafe_reason(root, p) for p in asked} == old
    for p in (STATE_DIR, f"{STATE_DIR}/reports", "mem", "mem/.archive", "mem/out", "mem/state"):
        assert unsafe_reason(root, p, folder=True) == old_unsafe_reason(root, p, folder=True)


def test_a_new_pass_asks_the_disk_again(tmp_path):
    # The verdicts live as long as the checker: a folder linked away since is seen by the next one.
    root, outside = tmp_path / "store", tmp_path / "outside"
    touch(root / "mem/a.md")
    touch(outside / "a.md")
    first = unsafe_reasons(root)
    assert first("mem/a.md") is None
    os.rename(root / "mem", tmp_path / "mem-real")
    os.symlink(outside, root / "mem")
    assert unsafe_reasons(root)("mem/a.md") == old_unsafe_reason(root, "mem/a.md") == "a folder on its path leads outside the store"
