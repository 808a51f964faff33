"""Staleness that does not prune good memories (issue 11, items 8-10), on claude stores built the way
the wild ones are: a subagent folder under `.claude/agent-memory/<agent>/` inside a small repository,
with git history made here (commits, a rename, a move, a deletion)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from helpers import NOW, commit_all, git, plan_json, run_cli

from pipeline.rules.refs import extract_refs
from pipeline.evidence.git_history import read_history
from pipeline.evidence.repo_scan import scan_repos
from pipeline.rules.repo_index import RepoIndex
from pipeline.rules.staleness import FULLY_STALE, classify
from pipeline.rules.staleness_history import parse_log
from pipeline.rules.staleness_refs import MISSING, MOVED, NEVER, PRESENT, SAME_NAME, RefStatus, names_other_project, ref_status

AGENT = ".claude/agent-memory/dev/"
OLD = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc).timestamp()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def memory(root: Path, name: str, body: str, description: str = "notes") -> Path:
    path = write(root / AGENT / f"{name}.md", f"---\nname: {name}\ndescription: {description}\ntype: project\n---\n\n{body}\n")
    os.utime(path, (OLD, OLD))  # a long-lived checkout: past the 14-day prune guard
    return path


def index_file(root: Path, names: list[str]) -> None:
    lines = ["# Memory", ""] + [f"- [{n}]({n}.md) — about {n}" for n in names]
    write(root / AGENT / "MEMORY.md", "\n".join(lines) + "\n")


def repo_with_history(root: Path) -> Path:
    """src/ingest/loader.py renamed to src/ingest/reader.py, scripts/old_sync.sh moved to tools/sync/,
    src/legacy/exporter.py deleted; src/api/server.py still there."""
    write(root / "src" / "ingest" / "loader.py", "def load_rows():\n    return []\n" * 5)
    write(root / "scripts" / "old_sync.sh", "#!/bin/sh\necho syncing the mirror now\n" * 5)
    write(root / "src" / "legacy" / "exporter.py", "def export_csv():\n    pass\n")
    write(root / "src" / "api" / "server.py", "def serve_forever():\n    pass\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    git(root, "mv", "src/ingest/loader.py", "src/ingest/reader.py")
    (root / "tools").mkdir()
    git(root, "mv", "scripts/old_sync.sh", "tools/old_sync.sh")
    git(root, "rm", "-q", "src/legacy/exporter.py")
    git(root, "commit", "-q", "-m", "rename, move, delete")
    return root


def actions(plan: dict, kind: str) -> dict[str, dict]:
    return {a["targets"][0].removeprefix(AGENT): a for a in plan["actions"] if a["kind"] == kind}


def stale(plan: dict) -> dict[str, dict]:
    return {f["targets"][0].removeprefix(AGENT): f for f in plan["findings"] if f["kind"] == "stale"}


def judged(root: Path, name: str, text: str) -> tuple[dict, dict]:
    """A memory `name` saying `text`, indexed, planned with no model: the plan and its stale finding."""
    memory(root, name, text)
    index_file(root, [name])
    plan = plan_json(root, "--model", "none", "--now", NOW)
    return plan, stale(plan)[f"{name}.md"]


@pytest.fixture
def store(tmp_path) -> Path:
    root = repo_with_history(tmp_path / "proj")
    memory(root, "deleted_exporter", "CSV export lives in `src/legacy/exporter.py` and is run weekly.")
    memory(root, "renamed_loader", "Rows are read by `src/ingest/loader.py` before validation.",
           description="reading rows via src/ingest/loader.py")
    memory(root, "moved_script", "The mirror is refreshed by `scripts/old_sync.sh` every hour.")
    memory(root, "never_here", "The billing engine keeps invoices in `src/billing/invoice.py`.")
    memory(root, "fresh_server", "The API starts in `src/api/server.py`.")
    index_file(root, ["deleted_exporter", "renamed_loader", "moved_script", "never_here", "fresh_server"])
    return root


# --- item 9: git history decides --------------------------------------------------------------


def test_history_tells_deleted_moved_and_never_there(store):
    plan = plan_json(store, "--model", "none", "--now", NOW)
    classes = {k: f["class"] for k, f in stale(plan).items()}
    assert classes == {
        "deleted_exporter.md": "FULLY_STALE",
        "renamed_loader.md": "PARTIALLY_STALE",
        "moved_script.md": "PARTIALLY_STALE",
        "never_here.md": "EVERGREEN",  # never in this repository: unverifiable, not missing
        "fresh_server.md": "FRESH",
    }
    prunes = actions(plan, "prune_stale")
    assert list(prunes) == ["deleted_exporter.md"]
    assert prunes["deleted_exporter.md"]["needs_user"] is False  # history proves the file was deleted
    assert stale(plan)["never_here.md"]["unverifiable"] == ["src/billing/invoice.py"]


def test_a_renamed_or_moved_file_is_an_update_ref_with_replacements(store):
    plan = plan_json(store, "--model", "none", "--now", NOW)
    updates = actions(plan, "update_ref")
    assert set(updates) == {"renamed_loader.md", "moved_script.md"}
    renamed = updates["renamed_loader.md"]
    assert renamed["needs_user"] is True
    assert renamed["moved"] == [{"ref": "src/ingest/loader.py", "to": "src/ingest/reader.py"}]
    text = (store / AGENT / "renamed_loader.md").read_text()
    body = text.split("---\n", 2)[2]
    for r in renamed["replacements"]:
        source = {"body": body, "description": "reading rows via src/ingest/loader.py"}[r["field"]]
        assert source[r["start"]:r["end"]] == r["before"] == "src/ingest/loader.py"
        assert r["after"] == "src/ingest/reader.py"
    assert sorted(r["field"] for r in renamed["replacements"]) == ["body", "description"]
    assert updates["moved_script.md"]["moved"] == [{"ref": "scripts/old_sync.sh", "to": "tools/old_sync.sh"}]


def test_without_git_history_no_prune_is_automatic(tmp_path):
    root = tmp_path / "proj"
    write(root / "src" / "api" / "server.py", "def serve_forever():\n    pass\n")
    memory(root, "deleted_exporter", "CSV export lives in `src/legacy/exporter.py` and is run weekly.")
    index_file(root, ["deleted_exporter"])
    plan = plan_json(root, "--model", "none", "--now", NOW)
    prune = actions(plan, "prune_stale")["deleted_exporter.md"]
    assert prune["needs_user"] is True and "no git history" in prune["needs_user_reason"]


def test_a_folder_nested_in_another_work_tree_is_not_judged_by_its_history(tmp_path):
    outer = tmp_path / "outer"
    write(outer / "README.md", "outer project\n")
    git(outer, "init", "-q", "-b", "main")
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "outer")
    inner = outer / "vendored"
    write(inner / "src" / "a.py", "x = 1\n")
    assert read_history(outer) is not None
    assert read_history(inner) is None


def test_a_folder_outside_every_work_tree_asks_git_nothing(tmp_path, monkeypatch):
    from pipeline.evidence import git_history

    asked: list[tuple[str, ...]] = []
    real_git = git_history._git
    monkeypatch.setattr(git_history, "_git", lambda root, *args: asked.append(args) or real_git(root, *args))
    store = tmp_path / "store"
    write(store / "notes.md", "x\n")
    if any(os.path.lexists(p / ".git") for p in (store.resolve(), *store.resolve().parents)):
        pytest.skip("the temporary folder is inside a git work tree")
    assert read_history(store) is None and asked == []  # no `.git` here or above: no git process
    git(store, "init", "-q", "-b", "main")
    git(store, "add", "-A")
    git(store, "commit", "-q", "-m", "first")
    assert read_history(store) is not None and [a[0] for a in asked] == ["rev-parse", "log"]


def test_in_repo_symlinked_folders_resolve(tmp_path):
    root = tmp_path / "proj"
    write(root / "memory-src" / "notes" / "setup.md", "# setup\n")
    write(root / "src" / "main.py", "x = 1\n")
    (root / "docs").symlink_to("memory-src", target_is_directory=True)
    (root / "outside").symlink_to(tmp_path, target_is_directory=True)
    index = scan_repos([root])[str(root.resolve())]
    assert ("docs", "memory-src") in index.links and all(link != "outside" for link, _ in index.links)
    assert index.has_path("docs/notes/setup.md")
    assert index.has_path("docs/notes/")
    assert not index.has_path("docs/notes/gone.md")
    assert not index.has_path("outside/proj/src/main.py")


def test_parse_log_follows_a_chain_of_renames():
    raw = b"\x01c3\x00\nR090\x00b.py\x00c.py\x00\x01c2\x00\nR100\x00a.py\x00b.py\x00\x01c1\x00\nA\x00a.py\x00A\x00d/e.md\x00"
    history = parse_log(raw)
    assert history.renamed_to("a.py") == "c.py"
    assert history.existed("d") and history.existed("d/e.md") and not history.existed("z.py")


def test_a_name_elsewhere_is_a_hint_not_a_move():
    index = RepoIndex(root="/r", files=frozenset({"README.md", "lib/unique_parser.rs"}), dirs=frozenset({"lib"}))
    history = parse_log(b"\x01c\x00\nD\x00old/README.md\x00D\x00old/unique_parser.rs\x00D\x00old/query_plan.rs\x00"
                        b"R100\x00lib/plan.rs\x00lib/query_plan.rs\x00")
    assert ref_status("old/README.md", index, history) == RefStatus(MISSING)  # a generic name: not even a hint
    assert ref_status("old/unique_parser.rs", index, history) == RefStatus(SAME_NAME, "lib/unique_parser.rs")
    assert ref_status("lib/unique_parser.rs", index, history) == RefStatus(PRESENT)
    assert ref_status("old/never.rs", index, history) == RefStatus(NEVER)
    # git records the one file of that name as another file renamed: no hint
    index = RepoIndex(root="/r", files=frozenset({"lib/query_plan.rs"}), dirs=frozenset({"lib"}))
    assert ref_status("old/query_plan.rs", index, history) == RefStatus(MISSING)


def test_the_end_of_a_chain_of_renames_since_deleted_is_looked_for_by_the_name_it_last_had():
    # src/a_parser.py -> b/c_parser.py and util/x.py -> b/utils.py (git saw both), then both deleted;
    # tmpl/a_parser.py -> tmpl/c_parser.py too, and still there in the last tree below
    history = parse_log(
        b"\x01c2\x00\nD\x00b/c_parser.py\x00D\x00b/utils.py\x00"
        b"\x01c1\x00\nR100\x00src/a_parser.py\x00b/c_parser.py\x00R100\x00util/x.py\x00b/utils.py\x00"
        b"R100\x00tmpl/a_parser.py\x00tmpl/c_parser.py\x00"
    )

    def status(ref: str, *today: str) -> RefStatus:
        return ref_status(ref, RepoIndex(root="/r", files=frozenset(today), dirs=frozenset({"pkg", "lib", "src", "util"})), history)

    # that name, borne by one file today: a hint, saying where git last saw the file
    assert status("src/a_parser.py", "pkg/c_parser.py") == RefStatus(SAME_NAME, "pkg/c_parser.py", "b/c_parser.py")
    # the ref's own, older name is no lead: the file had given it up (specrails' developer.md)
    assert status("src/a_parser.py", "lib/a_parser.py") == RefStatus(MISSING, "b/c_parser.py")
    # two files of that name, or a name every project has: gone
    assert status("src/a_parser.py", "pkg/c_parser.py", "lib/c_parser.py") == RefStatus(MISSING, "b/c_parser.py")
    assert status("util/x.py", "pkg/utils.py") == RefStatus(MISSING, "b/utils.py")
    # the one file of that name is, by git's records, another file renamed (specrails' template)
    assert status("src/a_parser.py", "tmpl/c_parser.py") == RefStatus(MISSING, "b/c_parser.py")


# --- a rename git recorded decides; a file of the same name is only a hint ----------------------


def repo_renamed_then_deleted(root: Path) -> Path:
    """As in specrails-core: `.claude/agents/developer.md` renamed to `.claude/agents/sr-developer.md`
    (git records it), which a later commit deletes; an unrelated `plugin/agents/developer.md` is added
    on its own meanwhile, and the template it was generated from, `templates/agents/developer.md`,
    renamed to `templates/agents/sr-developer.md` beside it and still there.
    `templates/commands/implement.md` renamed into `templates/commands/specrails/` and still there. `src/tools/report_builder.py` deleted with no rename, and a rewritten
    `lib/report_builder.py` added later."""
    write(root / ".claude" / "agents" / "developer.md", "# Developer agent\n\nImplements the tasks it is given, step by step.\n" * 4)
    write(root / "templates" / "commands" / "implement.md", "# /implement\n\nRuns the whole pipeline for one change.\n" * 4)
    write(root / "templates" / "agents" / "developer.md", "# {{PROJECT}} developer\n\nThe template every project's agent is made from.\n" * 4)
    write(root / "src" / "tools" / "report_builder.py", "def build_report(rows):\n    return '\\n'.join(rows)\n" * 3)
    write(root / "src" / "main.py", "def main():\n    pass\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    git(root, "mv", ".claude/agents/developer.md", ".claude/agents/sr-developer.md")
    git(root, "mv", "templates/agents/developer.md", "templates/agents/sr-developer.md")
    (root / "templates" / "commands" / "specrails").mkdir()
    git(root, "mv", "templates/commands/implement.md", "templates/commands/specrails/implement.md")
    git(root, "rm", "-q", "src/tools/report_builder.py")
    git(root, "commit", "-q", "-m", "sr- prefix; namespaced commands; report builder dropped")
    write(root / "plugin" / "agents" / "developer.md", "---\nname: developer\n---\nA plugin's agent, written from scratch.\n")
    write(root / "lib" / "report_builder.py", "class ReportBuilder:\n    pass\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plugin agents; new report builder")
    git(root, "rm", "-q", ".claude/agents/sr-developer.md")
    git(root, "commit", "-q", "-m", "drop the dogfood agents")
    return root


@pytest.fixture
def renamed_store(tmp_path) -> Path:
    root = repo_renamed_then_deleted(tmp_path / "proj")
    memory(root, "agent_template", "The agent is `.claude/agents/developer.md`; it runs `templates/commands/implement.md`.")
    memory(root, "only_agent", "Change the agent's steps in `.claude/agents/developer.md`.")
    memory(root, "report_tool", "Reports are built by `src/tools/report_builder.py`.")
    index_file(root, ["agent_template", "only_agent", "report_tool"])
    return root


def test_ref_status_follows_git_not_the_file_name(renamed_store):
    history = read_history(renamed_store)
    index = scan_repos([renamed_store])[str(renamed_store.resolve())]
    assert history is not None and index.paths_named("developer.md") == ["plugin/agents/developer.md"]
    assert ref_status(".claude/agents/developer.md", index, history) == RefStatus(MISSING, ".claude/agents/sr-developer.md")
    assert ref_status("templates/commands/implement.md", index, history) == RefStatus(MOVED, "templates/commands/specrails/implement.md")
    assert ref_status("src/tools/report_builder.py", index, history) == RefStatus(SAME_NAME, "lib/report_builder.py")


def test_a_file_renamed_then_deleted_is_gone_not_moved_to_a_file_of_its_name(renamed_store):
    plan = plan_json(renamed_store, "--model", "none", "--now", NOW)
    findings, updates = stale(plan), actions(plan, "update_ref")
    agent = findings["agent_template.md"]
    assert agent["class"] == "PARTIALLY_STALE"
    assert agent["moved"] == [{"ref": "templates/commands/implement.md", "to": "templates/commands/specrails/implement.md"}]
    assert agent["missing"] == [".claude/agents/developer.md"] and "same_name" not in agent
    assert "renamed to .claude/agents/sr-developer.md, since deleted" in agent["reason"]
    # the recorded rename is proposed; nothing points at the unrelated plugin/agents/developer.md
    assert updates["agent_template.md"]["moved"] == agent["moved"]
    assert all("plugin/agents" not in r["after"] for a in plan["actions"] for r in a.get("replacements", []))
    # a memory whose only file was renamed to one since deleted is fully stale: history decides
    assert findings["only_agent.md"]["class"] == "FULLY_STALE"
    assert "only_agent.md" in actions(plan, "prune_stale") and "only_agent.md" not in updates


def test_a_file_of_the_same_name_is_a_hint_the_user_judges(renamed_store):
    plan = plan_json(renamed_store, "--model", "none", "--now", NOW)
    report = stale(plan)["report_tool.md"]
    assert report["class"] == "PARTIALLY_STALE"  # stale, never turned current; but not pruned on a guess
    assert report["missing"] == ["src/tools/report_builder.py"] and "moved" not in report
    assert report["same_name"] == [{"ref": "src/tools/report_builder.py", "at": "lib/report_builder.py"}]
    assert "a file of the same name exists at lib/report_builder.py" in report["reason"] and report["kept_reason"]
    assert "report_tool.md" not in actions(plan, "prune_stale")
    hint = actions(plan, "update_ref")["report_tool.md"]
    assert hint["needs_user"] is True and "moved" not in hint
    assert "moved in this repository's history" not in hint["reason"]
    assert "a file of the same name exists at lib/report_builder.py" in hint["reason"]
    assert hint["same_name"] == report["same_name"]
    assert [(r["before"], r["after"]) for r in hint["replacements"]] == [("src/tools/report_builder.py", "lib/report_builder.py")]
    # apply without choosing it leaves the memory as it was
    before = (renamed_store / AGENT / "report_tool.md").read_bytes()
    res = run_cli("apply", str(renamed_store), "--now", NOW, "--model", "none", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    assert (renamed_store / AGENT / "report_tool.md").read_bytes() == before


def test_a_file_renamed_then_moved_where_git_saw_no_rename_is_a_hint_not_a_prune(tmp_path):
    # src/render/widget_renderer.py is git-mv'd to src/ui/widget_renderer.py (git records the rename);
    # a later commit moves it again to packages/ui/widget_renderer.py while rewriting it (no rename
    # recorded: similarity under 50%). The file lives on under its name: a hint, as for a file
    # deleted without a rename, never an automatic prune.
    root = tmp_path / "proj"
    write(root / "src/render/widget_renderer.py", "def render_widget(w):\n    return w.draw()\n" * 6)
    write(root / "src/main.py", "def main():\n    pass\n")
    commit_all(root, "one")
    (root / "src/ui").mkdir()
    git(root, "mv", "src/render/widget_renderer.py", "src/ui/widget_renderer.py")
    git(root, "commit", "-q", "-m", "move")
    git(root, "rm", "-q", "src/ui/widget_renderer.py")
    write(root / "packages/ui/widget_renderer.py", "class WidgetRenderer:\n    def paint(self):\n        return 1\n")
    commit_all(root, "rewrite into packages/")
    plan, f = judged(root, "widgets", "Widgets are drawn by `src/render/widget_renderer.py`; keep it pure.")
    assert f["class"] == "PARTIALLY_STALE" and f["kept_reason"]
    assert f["missing"] == ["src/render/widget_renderer.py"] and "moved" not in f
    assert f["same_name"] == [{"ref": "src/render/widget_renderer.py", "at": "packages/ui/widget_renderer.py"}]
    assert ("src/render/widget_renderer.py (renamed to src/ui/widget_renderer.py, since deleted;"
            " a file of the same name exists at packages/ui/widget_renderer.py)") in f["reason"]
    assert "widgets.md" not in actions(plan, "prune_stale")
    hint = actions(plan, "update_ref")["widgets.md"]
    assert hint["needs_user"] is True and "moved" not in hint and hint["same_name"] == f["same_name"]
    assert "renamed to src/ui/widget_renderer.py, since deleted" in hint["reason"] and "no rename" not in hint["reason"]
    assert [(r["before"], r["after"]) for r in hint["replacements"]] == [
        ("src/render/widget_renderer.py", "packages/ui/widget_renderer.py")]


def test_a_rename_and_a_hint_in_one_memory_are_two_proposals(tmp_path):
    root = repo_renamed_then_deleted(tmp_path / "proj")
    memory(root, "both", "See `templates/commands/implement.md` and `src/tools/report_builder.py`.")
    index_file(root, ["both"])
    plan = plan_json(root, "--model", "none", "--now", NOW)
    updates = [a for a in plan["actions"] if a["kind"] == "update_ref"]
    assert sorted((bool(u.get("moved")), bool(u.get("same_name"))) for u in updates) == [(False, True), (True, False)]
    assert all(u["needs_user"] for u in updates)


# --- item 8: only refs anchored in this repository are checked ---------------------------------


def test_dotted_identifiers_are_not_files():
    refs = extract_refs("Read `process.env.API_KEY` via `process.env`, `os.environ`, call `foo.bar()` or `res.json()`.")
    assert refs.files == ()
    assert extract_refs("Settings live in `config.json` and `app.py`.").files == ("app.py", "config.json")


@pytest.mark.parametrize(
    "text",
    [
        "These notes describe the Haskell cardano-node codebase (another repository).",
        "Mirrors `/Users/someone/code/ledger/src/rules.rs` behaviour.",
        "Upstream: see ~/src/pallas/crates for the originals.",
    ],
)
def test_a_memory_about_another_project_has_no_verifiable_refs(text):
    index = RepoIndex(root="/work/proj", files=frozenset({"src/main.rs"}), dirs=frozenset({"src"}))
    assert names_other_project(text, "/work/proj")
    refs = extract_refs(text + " It names `rules.rs` and `src/ledger/rules.rs`.")
    a = classify(refs, index, None, names_other_project(text, "/work/proj"))
    assert a.cls == "EVERGREEN" and "rules.rs" in a.unverifiable and "src/ledger/rules.rs" in a.unverifiable


def test_own_absolute_paths_and_this_repository_do_not_count_as_another_project():
    assert names_other_project("Run `/work/proj/scripts/x.sh` in this repository.", "/work/proj") is None
    assert names_other_project("The whole repo is grepped; see https://example.com/other/repo", "/work/proj") is None


def test_urls_and_home_paths_are_unverifiable():
    index = RepoIndex(root="/r", files=frozenset(), dirs=frozenset({"src"}))
    a = classify(extract_refs("See https://example.com/src/a.py and `~/src/b.py`."), index)
    assert a.cls == "EVERGREEN" and a.cls != FULLY_STALE


# --- item 10: globs -----------------------------------------------------------------------------


def test_one_glob_pattern_is_matched_once(monkeypatch):
    from pipeline.rules import repo_index

    files = frozenset(f"src/pkg{i}/mod{i}.py" for i in range(200))
    index = RepoIndex(root="/r", files=files, dirs=frozenset({"src"} | {f"src/pkg{i}" for i in range(200)}))
    compiled = []
    real = repo_index.glob_regex
    monkeypatch.setattr(repo_index, "glob_regex", lambda p: compiled.append(p) or real(p))
    for _ in range(50):
        assert index.has_path("src/**/*.py")
        assert not index.has_path("src/**/*.rs")
    assert compiled == ["src/**/*.py", "src/**/*.rs"]



def test_a_memory_folder_copied_into_another_repository_is_not_judged_by_its_history(tmp_path):
    """A review's case: a backup of another project's .claude/ inside a workspace repository was
    pruned for a file the workspace once deleted; its folder holds no code, so nothing is checked."""
    outer = tmp_path / "workspace"   # some repository (a dotfiles/monorepo/workspace checkout)
    write(outer / "src/legacy/exporter.py", "def export_csv():\n    pass\n")
    write(outer / "src/api/server.py", "def serve():\n    pass\n")
    git(outer, "init", "-q", "-b", "main"); git(outer, "add", "-A"); git(outer, "commit", "-q", "-m", "one")
    git(outer, "rm", "-q", "src/legacy/exporter.py"); git(outer, "commit", "-q", "-m", "drop")
    backup = outer / "backups" / "old-proj"     # another project's .claude/ copied out, with a README
    write(backup / "README.md", "a copy of old-proj's memory\n")
    memory(backup, "exporter", "CSV export lives in `src/legacy/exporter.py` and is run weekly.")
    index_file(backup, ["exporter"])
    plan = plan_json(backup, "--model", "none", "--now", NOW)
    assert "exporter.md" not in actions(plan, "prune_stale") and "exporter.md" not in stale(plan)
    assert [f for f in plan["findings"] if f["kind"] == "staleness_skipped"]
