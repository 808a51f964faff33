"""The real orchestkit agent-memory folders (../shared/real-stores/orchestkit, read in place; MIT, see
SOURCES.md there)."""

import hashlib
import shutil
from pathlib import Path

from helpers import NOW, REAL_STORES, plan_json, run_cli

from pipeline.config import Settings
from pipeline.layouts.registry import open_store
from pipeline.storage.files import split_frontmatter

REAL = REAL_STORES / "orchestkit"
QR = ".claude/agent-memory/ork-code-quality-reviewer/"
RE = ".claude/agent-memory/ork-release-engineer/"
TG = ".claude/agent-memory/ork-test-generator/"
UNINDEXED = [
    QR + "review-2041-dedup-migration.md",
    RE + "m117-pr-shape-recommendation.md",
    RE + "m117-release-shape-analysis.md",
    TG + "project_eval_framework.md",
]


def copy(tmp_path: Path) -> Path:
    store = tmp_path / "orchestkit"
    shutil.copytree(REAL, store)
    return store


def digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_real_store_plans_cleanly_without_writing(tmp_path):
    store = copy(tmp_path)
    before = digest(store)
    res = run_cli("plan", str(store), "--now", NOW, "--model", "none")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    plan = plan_json(store, "--model", "none")
    assert digest(store) == before
    assert plan["layout"] == "claude"
    assert not [f for f in plan["findings"] if f["kind"] == "parse_error"]
    assert plan["errors"] == []


def test_every_topic_file_loads_with_its_quirks():
    corpus, _ = open_store(REAL, Settings())
    topic_files = sorted(
        p.relative_to(REAL).as_posix() for p in REAL.rglob("*.md") if p.name not in ("MEMORY.md", "SOURCES.md")
    )
    assert len(topic_files) == 19
    assert [m.key for m in corpus.memories if "#" not in m.key] == topic_files
    # the 10 folders whose MEMORY.md holds the memories itself (no topic files): one memory per
    # bullet or paragraph of a section, keyed MEMORY.md#<heading-slug>/<n> (issue 11, item 3)
    inside = [m for m in corpus.memories if "#" in m.key]
    assert inside and all(m.extra["in_index"] == m.key.split("#")[0] and m.body.strip() for m in inside)
    assert len({m.extra["in_index"] for m in inside}) == 10
    with_fm = [k for k in topic_files if split_frontmatter((REAL / k).read_text(encoding="utf-8")).present]
    assert len(with_fm) == 16  # 20 of 36 files have none: 17 MEMORY.md + 3 topic files
    by = {m.key: m for m in corpus.memories}
    for key in with_fm:
        m = by[key]
        assert m.has_frontmatter and m.title and m.description and m.type in {"project", "reference"}, key
    # nested metadata.type and top-level type both load; Title Case and slug names both kept
    assert by[".claude/agent-memory/ork-genui-architect/reference_execution_primitive_tradeoffs.md"].type == "reference"
    assert by[RE + "m117-pr-shape-recommendation.md"].title == "M117 PR Shape Recommendation"
    assert by[RE + "release_notes_player_v2_design.md"].modified.isoformat() == "2026-06-18"
    assert by[QR + "hook-comparison.md"].type is None and not by[QR + "hook-comparison.md"].has_frontmatter
    # the nested docs/site/.claude folder is checked against docs/site, not the outer repository
    rtk = by["docs/site/.claude/agent-memory/ork-web-research-analyst/reference_rtk_tool.md"]
    # docs/site holds only its .claude/ in this copy (and no git history): nothing to check against
    assert rtk.extra["repo"] is None and "holds nothing but .claude/" in rtk.extra["staleness_skipped"]
    assert len(corpus.indexes) == 17


def test_unindexed_topic_files_are_index_drift(tmp_path):
    plan = plan_json(copy(tmp_path), "--model", "none")
    rebuilds = {a["targets"][0]: a["reason"] for a in plan["actions"] if a["kind"] == "rebuild_index"}
    assert sorted(rebuilds) == [QR + "MEMORY.md", RE + "MEMORY.md", TG + "MEMORY.md"]
    text = " ".join(rebuilds.values())
    for key in UNINDEXED:
        assert key in text, key
    # the index lines that do exist are read (prose around them is not an entry)
    corpus, _ = open_store(REAL, Settings())
    entries = {(e.index, e.target) for e in corpus.index_entries}
    assert (QR + "MEMORY.md", QR + "docs-site-review-gotchas.md") in entries
    # 11 links (one inside prose, reached too) and 4 files named in inline code (issue 11, item 5)
    assert len(corpus.index_entries) == 15
    assert (QR + "MEMORY.md", QR + "hook-comparison.md") in entries


def test_real_staleness_classes(tmp_path):
    store = copy(tmp_path)
    # as copied it holds nothing but its memories and notes: nothing to check them against
    skipped = [f for f in plan_json(store, "--model", "none")["findings"] if f["kind"] == "staleness_skipped"]
    assert skipped and all("holds nothing but .claude/ and notes" in f["reason"] for f in skipped)
    # with a file of code at its top it is a project, checked (docs/site still holds nothing else)
    (store / "package.json").write_text("{}\n")
    plan = plan_json(store, "--model", "none")
    stale = {f["targets"][0]: f for f in plan["findings"] if f["kind"] == "stale" and "#" not in f["targets"][0]}
    assert len(stale) == 18  # and not the one memory of docs/site, which holds nothing else here
    # refs into src/ (absent from this copy) are not "missing": src is no top-level folder here
    drift = stale[".claude/agent-memory/ork-backend-system-architect/project_ork_debt_extension_drift.md"]
    assert drift["class"] == "EVERGREEN" and drift["unverifiable"] == ["src/hooks/src/lib/debt-markers.ts"]
    assert stale[QR + "hook-comparison.md"]["class"] == "EVERGREEN"  # no front matter
    # docs/... refs are verifiable and gone; the directive guard keeps this one whatever its mtime
    player = stale[RE + "release_notes_player_v2_design.md"]
    assert player["class"] == "PARTIALLY_STALE"
    assert player["kept_reason"] == "prune-guard: carries a do-not/never directive"
