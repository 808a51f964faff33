"""The repository index (one scan) and `--repo` on layouts other than claude."""

import hashlib
import json
import shutil
from pathlib import Path

from helpers import FIXTURES, NOW, plan_json, run_cli

from pipeline.config import Settings
from pipeline.storage.config_file import load_user_config
from pipeline.plan import run_rules
from pipeline.evidence import repo_scan
from pipeline.evidence.repo_scan import scan_repos
from pipeline.rules.repo_index import ScanCaps
from pipeline.layouts.registry import open_store


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def make_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    write(repo / "src" / "app.py", "def build_index():\n    return SearchIndex()\n")
    write(repo / "src" / "lib" / "util.ts", "export function formatDate() {}\n")
    write(repo / "node_modules" / "pkg" / "index.js", "function hiddenInNodeModules() {}\n")
    write(repo / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(repo / "assets" / "logo.png", b"\x89PNG\r\n\x1a\nbinaryIdentifierInPng")
    write(repo / "data" / "blob.dat", b"header\x00nulIdentifierInBlob")
    write(repo / "big.txt", "tooBigIdentifier " * 100)
    write(repo / "notes" / "memory.md", "mentionedOnlyInMemory()\n")
    return repo


def test_scan_lists_paths_and_harvests_identifiers_from_text_only(tmp_path):
    repo = make_repo(tmp_path)
    idx = scan_repos([repo], no_text=[repo / "notes"], caps=ScanCaps(max_file_bytes=1000))[str(repo)]
    assert idx.files == {"src/app.py", "src/lib/util.ts", "assets/logo.png", "data/blob.dat", "big.txt", "notes/memory.md"}
    assert idx.top_dirs == {"src", "assets", "data", "notes"}  # .git and node_modules are not indexed
    assert {"build_index", "SearchIndex", "formatDate"} <= idx.identifiers
    for absent in ("hiddenInNodeModules", "binaryIdentifierInPng", "nulIdentifierInBlob", "tooBigIdentifier", "mentionedOnlyInMemory"):
        assert absent not in idx.identifiers
    assert idx.complete


def test_memories_kept_in_the_repository_vouch_for_no_symbol(tmp_path):
    """An audit's case: a repository that commits its agents' memory (`.claude/agent-memory/`) was
    read for identifiers, so a copy of those memories checked against it (`--repo`) found every
    symbol it names in its own copy, and stale memories read FRESH."""
    repo = tmp_path / "repo"
    write(repo / "src/ledger.rs", "pub fn apply_block() {}\n")
    write(repo / ".claude/agent-memory/oracle/MEMORY.md", "- [kes](kes.md) — kes\n")
    write(repo / ".claude/agent-memory/oracle/kes.md", "Call query_current_kes_period after a rotation.\n")
    write(repo / ".claude/agents/oracle.md", "You know DvtMotionNoConfidence well.\n")
    write(repo / "notes/MEMORY.md", "- PallasAux is the aux data type.\n")  # any folder holding a MEMORY.md
    write(repo / "notes/sub/more.md", "NestedMemorySymbol\n")
    idx = scan_repos([repo])[str(repo.resolve())]
    assert "apply_block" in idx.identifiers and ".claude/agent-memory/oracle/kes.md" in idx.files
    for named_in_memory_only in ("query_current_kes_period", "DvtMotionNoConfidence", "PallasAux"):
        assert named_in_memory_only not in idx.identifiers
    assert "NestedMemorySymbol" not in idx.identifiers  # nor a folder inside one
    write(repo / "MEMORY.md", "notes on the project\n")  # at the top: the project's own page, not a memory folder
    assert "apply_block" in scan_repos([repo])[str(repo.resolve())].identifiers


def test_text_cap_marks_the_index_incomplete(tmp_path):
    repo = make_repo(tmp_path)
    idx = scan_repos([repo], caps=ScanCaps(max_text_bytes=10))[str(repo)]
    assert not idx.complete


def test_nested_roots_share_one_walk(tmp_path, monkeypatch):
    repo = make_repo(tmp_path)
    inner = repo / "src"
    calls = []
    real = repo_scan._walk
    monkeypatch.setattr(repo_scan, "_walk", lambda *a: calls.append(a[0]) or real(*a))
    got = scan_repos([inner, repo])
    assert calls == [repo.resolve()]
    assert got[str(inner.resolve())].files == {"app.py", "lib/util.ts"}
    assert got[str(inner.resolve())].identifiers >= {"build_index", "formatDate"}
    assert "app.py" not in got[str(repo.resolve())].files


def test_plan_scans_the_repository_once(tmp_path, monkeypatch):
    store = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude", store)
    calls = []
    real = repo_scan.scan_tree
    monkeypatch.setattr(repo_scan, "scan_tree", lambda *a: calls.append(a[0]) or real(*a))
    corpus, settings = open_store(store, Settings(now=NOW))
    out = run_rules(corpus, settings)
    stale = [f for f in out.findings if f.kind == "stale"]
    assert len(stale) == len(corpus.memories) > 20
    assert calls == [store.resolve()]


# --------------------------------------------------------------------------------------------
# --repo on a bank store


def make_bank(tmp: Path) -> Path:
    bank = tmp / "store"
    records = [
        {"id": "m1", "text": "The index is built by build_index() in src/app.py.", "created_at": "2026-01-01", "updated_at": "2026-01-01"},
        {"id": "m2", "text": "Exports go through src/export/csv.py and `ExportRunner`.", "created_at": "2026-01-01", "updated_at": "2026-01-02"},
        {"id": "m3", "text": "Dates are formatted in src/dates.ts with `formatDate()`.", "created_at": "2026-01-01", "updated_at": "2026-01-03"},
        {"id": "m4", "text": "The user likes short answers.", "created_at": "2026-01-01", "updated_at": "2026-01-04"},
        {"id": "m5", "text": "Old runner lived in src/old/run.py.", "created_at": "2026-11-20", "updated_at": "2026-11-20"},
    ]
    write(bank / "main" / "memories.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    return bank


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_repo_option_checks_another_layout(tmp_path):
    repo = make_repo(tmp_path)
    write(repo / ".claude" / "logs" / "memory-consult.jsonl", '{"ts": "2026-11-01T00:00:00Z", "names": ["m2"]}\n')
    bank = make_bank(tmp_path)
    before = tree_digest(bank), tree_digest(repo)
    plan = plan_json(bank, "--model", "none", "--repo", str(repo))
    assert (tree_digest(bank), tree_digest(repo)) == before
    stale = {f["targets"][0]: f for f in plan["findings"] if f["kind"] == "stale"}
    assert {k: f["class"] for k, f in stale.items()} == {
        "main/m1": "FRESH",
        "main/m2": "FULLY_STALE",  # its consult entry is older than 14 days
        "main/m3": "PARTIALLY_STALE",
        "main/m4": "EVERGREEN",
        "main/m5": "PARTIALLY_STALE",  # updated within 14 days
    }
    assert stale["main/m2"]["missing"] == ["src/export/csv.py", "ExportRunner"]
    assert stale["main/m5"]["kept_reason"] == "prune-guard: modified within 14d (2026-11-20)"
    prunes = [a for a in plan["actions"] if a["kind"] == "prune_stale"]
    assert [a["targets"] for a in prunes] == [["main/m2"]]
    assert "src/export/csv.py" in prunes[0]["reason"]


def test_repo_option_consult_log_of_the_repository_counts(tmp_path):
    repo = make_repo(tmp_path)
    write(repo / ".claude" / "logs" / "memory-consult.jsonl", '{"ts": "2026-11-28T00:00:00Z", "names": ["m2"]}\n')
    plan = plan_json(make_bank(tmp_path), "--model", "none", "--repo", str(repo))
    m2 = next(f for f in plan["findings"] if f["kind"] == "stale" and f["targets"] == ["main/m2"])
    assert m2["class"] == "PARTIALLY_STALE" and m2["kept_reason"].startswith("consult-gate:")
    assert not [a for a in plan["actions"] if a["kind"] == "prune_stale"]


def test_repo_option_consult_log_through_a_folder_linked_out_of_the_repository_is_not_read(tmp_path):
    # The repository's `.claude/` a symlink to a folder elsewhere: its log was read through it.
    repo = make_repo(tmp_path)
    write(tmp_path / "elsewhere" / "logs" / "memory-consult.jsonl", '{"ts": "2026-11-28T00:00:00Z", "names": ["m2"]}\n')
    (repo / ".claude").symlink_to(tmp_path / "elsewhere")
    plan = plan_json(make_bank(tmp_path), "--model", "none", "--repo", str(repo))
    m2 = next(f for f in plan["findings"] if f["kind"] == "stale" and f["targets"] == ["main/m2"])
    assert m2["class"] == "FULLY_STALE"
    assert [a["targets"] for a in plan["actions"] if a["kind"] == "prune_stale"] == [["main/m2"]]
    refused = [f["reason"] for f in plan["findings"] if f["kind"] == "parse_error"]
    assert refused == ["consult log not read: symlink points outside the store"]


def test_without_repo_other_layouts_get_no_staleness(tmp_path):
    plan = plan_json(make_bank(tmp_path), "--model", "none")
    assert not [f for f in plan["findings"] if f["kind"] == "stale"]


def test_a_store_config_may_not_choose_what_is_read_outside_the_store(tmp_path):
    # A store's own .memconsolidate.toml named any file as its consult log (read, then matched
    # against the memories) and any folder as its repository: a cloned store chose what of the
    # user's disk was read. It may set neither; a config of the user's may.
    repo = make_repo(tmp_path)
    log = write(tmp_path / "elsewhere" / "consult.jsonl", '{"ts": "2026-11-28T00:00:00Z", "names": ["m2"]}\n')
    bank = make_bank(tmp_path)
    for toml, key in ((f'[claude]\nconsult_log = "{log}"\n', "claude.consult_log"), (f'repo = "{repo}"\n', "repo")):
        (bank / ".memconsolidate.toml").write_text(toml)
        res = run_cli("plan", str(bank), "--model", "none", "--repo", str(repo))
        assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
        assert f"is inside the store and may not set {key} (" in res.stderr
    (bank / ".memconsolidate.toml").unlink()
    mine = write(tmp_path / "mine.toml", f'[claude]\nconsult_log = "{log}"\n')
    plan = plan_json(bank, "--model", "none", "--repo", str(repo), "--config", str(mine))
    m2 = next(f for f in plan["findings"] if f["kind"] == "stale" and f["targets"] == ["main/m2"])
    assert m2["kept_reason"].startswith("consult-gate:")


def test_a_store_config_may_name_paths_that_stay_in_the_store(tmp_path, monkeypatch):
    # review (session 16): `repo = "."` (a claude project store its own repository) and a relative
    # consult log were refused with the paths outside the store; they read nothing outside it. The
    # repository is the store's folder whatever folder the command runs in; `..` still leaves.
    bank = make_bank(tmp_path)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (bank / ".memconsolidate.toml").write_text('repo = "."\n[claude]\nconsult_log = "logs/consult.jsonl"\n')
    assert run_cli("plan", str(bank), "--model", "none").returncode == 0
    assert load_user_config(bank / ".memconsolidate.toml", bank)["repo"] == str(bank.resolve())
    for toml, key in (('repo = "../cwd"\n', "repo"), ('[claude]\nconsult_log = "../x.jsonl"\n', "claude.consult_log")):
        (bank / ".memconsolidate.toml").write_text(toml)
        res = run_cli("plan", str(bank), "--model", "none")
        assert res.returncode == 2 and f"is inside the store and may not set {key} (" in res.stderr, res.stderr
