"""storage/walk.walk_down: os.walk's triples, in its order, without recursion (Python 3.11's os.walk
calls itself once per level: a store nested about a thousand folders deep ended `plan` with an
internal error, RecursionError)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings, strategies as st
from helpers import NOW, run_cli

from pipeline.storage.walk import walk_down

# A tree as a list of (kind, parent index, name): folders, files and symlinks to earlier folders.
_NAMES = st.sampled_from(["a", "b", "c", "d.md", ".hidden", "z"])
_NODES = st.lists(st.tuples(st.sampled_from(["dir", "file", "link"]), st.integers(0, 50), _NAMES), max_size=30)


def _build(root: Path, nodes: list[tuple[str, int, str]]) -> None:
    folders = [root]
    for kind, parent, name in nodes:
        where = folders[parent % len(folders)] / name
        if os.path.lexists(where):
            continue
        if kind == "dir":
            where.mkdir()
            folders.append(where)
        elif kind == "file":
            where.write_text("x")
        else:
            where.symlink_to(folders[parent % len(folders)])  # a link to a folder on its own way: a loop if followed


@settings(max_examples=60)
@given(nodes=_NODES)
def test_the_same_triples_in_the_same_order_as_os_walk(tmp_path_factory, nodes):
    root = tmp_path_factory.mktemp("tree")
    _build(root, nodes)
    assert list(walk_down(root)) == list(os.walk(root))


def test_pruning_dirnames_in_place_prunes_the_walk(tmp_path):
    for folder in ("keep/x", "skip/y"):
        (tmp_path / folder).mkdir(parents=True)
    seen = []
    for dirpath, dirnames, _ in walk_down(tmp_path):
        dirnames[:] = sorted(d for d in dirnames if d != "skip")
        seen.append(os.path.relpath(dirpath, tmp_path))
    assert seen == [".", "keep", "keep/x"]


def test_a_store_nested_deeper_than_the_recursion_limit_is_planned(tmp_path):
    folder = tmp_path / ".claude/agent-memory/ops"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Memory\n")
    deep = folder
    for _ in range(1200):  # one mkdir per level (os.makedirs recurses too): fine for the OS, not for recursion
        deep = deep / "d"
        deep.mkdir()
    try:
        res = run_cli("plan", str(tmp_path), "--now", NOW, "--model", "none")
        assert res.returncode == 0, res.stderr
    finally:  # taken down level by level: pytest's own clean-up of old temp folders (shutil.rmtree) recurses
        while deep != folder:
            for leftover in deep.iterdir():
                leftover.unlink()
            deep.rmdir()
            deep = deep.parent
