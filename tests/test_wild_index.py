"""Every real Claude Code store in ../shared/real-stores/wild/ (planned once for the session, aged as
a long-lived checkout sees it: conftest's `wild_plans`; copied to tmp_path to be applied): no file
is a parse_error, and the `rebuild_index` the plan proposes, applied, leaves every file MEMORY.md
reached before still reached within the 200 lines Claude Code loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import WILD, WILD_NOW as NOW, copy_store, run_cli

from pipeline.layouts.claude import memory_md

STORES = sorted(p.name for p in WILD.iterdir() if p.is_dir()) if WILD.is_dir() else []

pytestmark = pytest.mark.skipif(not STORES, reason="../shared/real-stores/wild is not beside the clone")


def reached(index: Path, max_lines: int | None = None) -> set[str]:
    folder = index.parent
    names = [p.name for p in folder.iterdir() if p.suffix == ".md" and p.name != "MEMORY.md"]

    def read(name: str) -> str | None:
        try:
            return (folder / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    return set(memory_md.reach(index.read_text(encoding="utf-8"), names, read, max_lines).reached)


def indexes(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("MEMORY.md") if ".archive" not in p.parts)


@pytest.mark.parametrize("name", STORES)
def test_wild_store_plans_without_parse_errors_and_its_rebuild_keeps_what_was_reached(tmp_path, name, wild_plans):
    aged, p = wild_plans[name]
    assert isinstance(p, dict), p  # planned, exit 0
    root = copy_store(aged, tmp_path / name)  # the aged copy, mtimes kept, to apply to
    assert [f for f in p["findings"] if f["kind"] == "parse_error"] == []
    assert p["errors"] == []
    assert p["memories"] > 0  # MEMORY.md-only stores hold memories too
    rebuilds = [a for a in p["actions"] if a["kind"] == "rebuild_index"]
    before = {index: reached(index) for index in indexes(root)}
    if not rebuilds:
        return
    res = run_cli("apply", str(root), "--select", "rebuild_index", "--yes", "--json", "--now", NOW, "--model", "stub")
    assert res.returncode == 0, res.stderr
    applied = json.loads(res.stdout)
    assert [a["kind"] for a in applied["applied"]] == ["rebuild_index"] * len(rebuilds), applied["skipped"]
    for index, was in before.items():
        now = reached(index, memory_md.MAX_LINES)
        assert was <= now, f"{index}: no longer reached within {memory_md.MAX_LINES} lines: {sorted(was - now)}"
        names = {p.name for p in index.parent.iterdir() if p.suffix == ".md" and p.name != "MEMORY.md"}
        assert reached(index) == names  # and every file is reached now
