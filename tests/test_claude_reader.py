"""The claude adapter: discovery, front matter quirks, MEMORY.md parsing, bad input."""

import datetime as dt
import os
from pathlib import Path

import pytest
from helpers import plan_json, run_cli

from pipeline.config import Settings
from pipeline.layouts.claude import reader as claude
from pipeline.layouts.registry import detect_layout


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def topic(name: str, type_line: str = "type: project", extra: str = "", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: about {name}\n{type_line}\n{extra}---\n\n{body}"


def load(root: Path, **kw):
    return claude.load(root.resolve(), Settings(now=dt.date(2026, 11, 29), **kw))


def test_folders_are_found_at_any_depth_and_skipped_folders_are_not(tmp_path):
    write(tmp_path / ".claude/agent-memory/alpha/MEMORY.md", "# Alpha\n")
    write(tmp_path / ".claude/agent-memory/alpha/a.md", topic("a"))
    write(tmp_path / "docs/site/.claude/agent-memory/beta/b.md", topic("b"))  # no MEMORY.md
    write(tmp_path / "docs/site/app.ts", "")  # a project of its own, with code to check its memories against
    write(tmp_path / "pkg/.claude/projects/-home-x/memory/MEMORY.md", "")
    write(tmp_path / "pkg/.claude/projects/-home-x/memory/c.md", topic("c"))
    write(tmp_path / ".claude/memory/MEMORY.md", "- [d](d.md)\n")
    write(tmp_path / ".claude/memory/d.md", topic("d"))
    write(tmp_path / ".claude/other/e.md", topic("e"))  # not a memory folder pattern
    write(tmp_path / "node_modules/lib/.claude/agent-memory/z/z.md", topic("z"))
    write(tmp_path / ".git/.claude/agent-memory/z/z.md", topic("z"))
    write(tmp_path / ".claude/agent-memory/alpha/.archive/run1/old.md", topic("old"))
    write(tmp_path / ".claude/agent-memory/empty/notes.txt", "not markdown")
    corpus = load(tmp_path)
    assert [m.key for m in corpus.memories] == [
        ".claude/agent-memory/alpha/a.md",
        ".claude/memory/d.md",
        "docs/site/.claude/agent-memory/beta/b.md",
        "pkg/.claude/projects/-home-x/memory/c.md",
    ]
    assert [m.group for m in corpus.memories] == [
        ".claude/agent-memory/alpha",
        ".claude/memory",
        "docs/site/.claude/agent-memory/beta",
        "pkg/.claude/projects/-home-x/memory",
    ]
    assert corpus.extra["index_present"] == {
        ".claude/agent-memory/alpha/MEMORY.md": True,
        ".claude/memory/MEMORY.md": True,
        "docs/site/.claude/agent-memory/beta/MEMORY.md": False,
        "pkg/.claude/projects/-home-x/memory/MEMORY.md": True,
    }
    # each folder is checked against the repository holding its .claude/
    repos = {m.key: m.extra["repo"] for m in corpus.memories}
    assert repos["docs/site/.claude/agent-memory/beta/b.md"] == str(tmp_path.resolve() / "docs/site")
    assert repos[".claude/memory/d.md"] == str(tmp_path.resolve())
    assert corpus.memories[0].extra["consult_log"] == str(tmp_path.resolve() / ".claude/logs/memory-consult.jsonl")


def test_detect(tmp_path):
    assert not claude.detect(tmp_path)
    write(tmp_path / "node_modules/x/.claude/memory/MEMORY.md", "")
    assert not claude.detect(tmp_path)
    write(tmp_path / "a/b/.claude/agent-memory/x/MEMORY.md", "")
    assert claude.detect(tmp_path)
    assert detect_layout(tmp_path) == "claude"


def test_path_may_be_the_memory_folder_or_the_dot_claude_folder(tmp_path):
    folder = tmp_path / "proj/.claude/agent-memory/alpha"
    write(folder / "MEMORY.md", "- [a](a.md) — hook\n")
    write(folder / "a.md", topic("a"))
    write(tmp_path / "proj/src/app.py", "")
    direct = load(folder)
    assert [m.key for m in direct.memories] == ["a.md"]
    assert [m.group for m in direct.memories] == ["."]
    assert direct.indexes == {"MEMORY.md": ["a.md"]}
    assert [(e.index, e.target) for e in direct.index_entries] == [("MEMORY.md", "a.md")]
    assert direct.memories[0].extra["repo"] == str((tmp_path / "proj").resolve())
    via_dot_claude = load(tmp_path / "proj/.claude")
    assert [m.key for m in via_dot_claude.memories] == ["agent-memory/alpha/a.md"]


def test_repo_option_overrides_the_default(tmp_path):
    write(tmp_path / ".claude/memory/a.md", topic("a"))
    corpus = load(tmp_path, repo="/somewhere/else")
    assert corpus.memories[0].extra["repo"] == "/somewhere/else"


def test_a_bare_folder_with_no_dot_claude_has_no_repository(tmp_path):
    write(tmp_path / "MEMORY.md", "")
    write(tmp_path / "a.md", topic("a"))
    corpus = load(tmp_path)
    assert corpus.memories[0].extra["repo"] is None
    assert "consult_log" not in corpus.memories[0].extra


def test_front_matter_quirks(tmp_path):
    f = tmp_path / ".claude/agent-memory/x"
    write(f / "top.md", topic("top-level", "type: Feedback", "modified: 2026-03-04\ncreated: 2026-01-02\ntags: [a, b]\n"))
    write(f / "nested.md", "---\nname: Nested Title Case\ndescription: d\nmetadata:\n  type: reference\n  date: 2026-06-18\n  status: DONE\n---\n\nBody\n")
    write(f / "updated.md", topic("u", "type: project", "updated: '2026-05-06T10:00:00Z'\n"))
    write(f / "bare.md", "# No front matter\n\nJust text.\n")
    write(f / "notype.md", "---\nname: no-type\n---\nText\n")
    write(f / "bom.md", "\ufeff" + topic("bom", "type: user"))
    by = {m.key.rsplit("/", 1)[-1]: m for m in load(tmp_path).memories}
    assert (by["top.md"].type, by["top.md"].title, by["top.md"].description) == ("feedback", "top-level", "about top-level")
    assert by["top.md"].modified == dt.date(2026, 3, 4) and by["top.md"].created == dt.date(2026, 1, 2)
    assert by["top.md"].tags == ["a", "b"]
    assert (by["nested.md"].type, by["nested.md"].title, by["nested.md"].modified) == ("reference", "Nested Title Case", dt.date(2026, 6, 18))
    assert list(by["nested.md"].meta) == ["name", "description", "metadata"]
    assert by["updated.md"].modified == dt.date(2026, 5, 6)
    assert (by["bare.md"].type, by["bare.md"].has_frontmatter, by["bare.md"].body) == (None, False, "# No front matter\n\nJust text.\n")
    assert by["notype.md"].type is None and by["notype.md"].has_frontmatter
    assert by["bom.md"].type == "user"
    assert all(m.mtime is not None for m in by.values())


def test_index_lines_prose_urls_and_code_blocks(tmp_path):
    text = "\n".join(
        [
            "# Agent Memory",
            "",
            "Free prose naming `a.md` and [a link in prose](a.md) is not an entry.",
            "- [A](a.md) — em dash hook",
            "- [B](b.md) -- double dash hook",
            "* [C](./c.md) - single dash hook",
            "- [D with [brackets] (#12)](d.md)",
            "1. [E](sub/../e.md#section): colon hook",
            "- [Site](https://example.com/x.md) — a URL",
            "- [Image](diagram.png) — not markdown",
            "- [Abs](/etc/x.md) — absolute",
            "- Details archived in [F](f.md) — prose inside a list item",
            "```",
            "- [G](g.md) — inside a code block",
            "```",
            "- [Gone](gone.md) — deleted file",
        ]
    )
    entries = claude.parse_index(text, "f/MEMORY.md", "f")
    assert [(e.target, e.title, e.hook) for e in entries] == [
        ("f/a.md", "A", "em dash hook"),
        ("f/b.md", "B", "double dash hook"),
        ("f/c.md", "C", "single dash hook"),
        ("f/d.md", "D with [brackets] (#12)", ""),
        ("f/e.md", "E", "colon hook"),
        ("f/gone.md", "Gone", "deleted file"),
        ("f/f.md", "", ""),  # linked inside prose: reached, so listed (issue 11, item 5)
    ]
    assert [e.target for e in claude.parse_index("- [A](a.md)\n", "MEMORY.md", ".")] == ["a.md"]


def test_index_drift_and_missing_index_become_rebuild_index(tmp_path):
    f = tmp_path / ".claude/agent-memory/x"
    write(f / "MEMORY.md", "- [A](a.md) — listed\n- [Gone](gone.md) — deleted\n- [A](a.md) — listed\n")
    write(f / "a.md", topic("a"))
    # b.md says something of its own: a duplicate of a.md would be merged away, and need no entry
    write(f / "b.md", topic("b", body="Body of b.\n"))
    write(tmp_path / ".claude/agent-memory/y/c.md", topic("c"))
    plan = plan_json(tmp_path, "--model", "none")
    rebuilds = {a["targets"][0]: a["reason"] for a in plan["actions"] if a["kind"] == "rebuild_index"}
    assert rebuilds == {
        ".claude/agent-memory/x/MEMORY.md": "1 file not indexed: .claude/agent-memory/x/b.md; "
        "1 entry without a file: .claude/agent-memory/x/gone.md (\u201cdeleted\u201d); "
        "1 file indexed twice: .claude/agent-memory/x/a.md; applying it: 1 repeated entry line removed, saying nothing "
        "its file's earlier listings do not: a.md at line 3",
        ".claude/agent-memory/y/MEMORY.md": "index file missing; 1 file not indexed: .claude/agent-memory/y/c.md",
    }


def test_bad_files_are_parse_errors_and_the_run_goes_on(tmp_path):
    f = tmp_path / ".claude/agent-memory/x"
    write(f / "MEMORY.md", "- [ok](ok.md)\n- [yaml](yaml.md)\n- [latin](latin.md)\n- [bin](bin.md)\n- [link](link.md)\n- [scalar](scalar.md)\n")
    write(f / "ok.md", topic("ok"))
    write(f / "yaml.md", "---\nname: [unclosed\n---\nbody\n")
    write(f / "latin.md", "---\nname: caf\xe9\n---\n".encode("latin-1"))
    write(f / "bin.md", b"\x00\x01\x02binary")
    write(f / "scalar.md", "---\n- a list\n---\nbody\n")
    outside = write(tmp_path.parent / f"{tmp_path.name}-outside.md", topic("outside"))
    os.symlink(outside, f / "link.md")
    plan = plan_json(tmp_path, "--model", "none")
    errors = {x["targets"][0].rsplit("/", 1)[-1]: x["reason"] for x in plan["findings"] if x["kind"] == "parse_error"}
    assert errors == {
        "bin.md": "binary file (NUL byte)",
        "latin.md": "not UTF-8 (byte 13)",
        "link.md": "symlink points outside the store",
        "scalar.md": "front matter is a list, not a mapping",
        "yaml.md": "malformed YAML front matter at line 3",
    }
    assert plan["memories"] == 1
    # unreadable files are still files on disk: the index listing them is not drift
    assert not [a for a in plan["actions"] if a["kind"] == "rebuild_index"]


def test_an_unreadable_index_is_reported_and_never_rebuilt(tmp_path):
    f = tmp_path / ".claude/agent-memory/x"
    write(f / "MEMORY.md", b"\xff\xfe not utf-8")
    write(f / "a.md", topic("a"))
    plan = plan_json(tmp_path, "--model", "none")
    assert [(x["kind"], x["targets"]) for x in plan["findings"] if x["kind"] == "parse_error"] == [
        ("parse_error", [".claude/agent-memory/x/MEMORY.md"])
    ]
    assert not [a for a in plan["actions"] if a["kind"] == "rebuild_index"]


def test_oversized_index_is_reported(tmp_path):
    f = tmp_path / ".claude/agent-memory/x"
    lines = [f"- [t{i}](t{i}.md) — " + "a long hook that says a great deal about nothing " * 3 for i in range(120)]
    write(f / "MEMORY.md", "\n".join(lines) + "\n")
    for i in range(120):
        write(f / f"t{i}.md", topic(f"t{i}", body=f"Topic number {i}.\n"))
    plan = plan_json(tmp_path, "--model", "none")
    # over the 17 KB target, within the 24 KB Claude Code loads: reported, nothing to trim
    budget = [x for x in plan["findings"] if x["kind"] in ("over_budget", "near_budget")]
    assert [(x["kind"], x["targets"]) for x in budget] == [("near_budget", [".claude/agent-memory/x/MEMORY.md"])]
    assert 24 * 1024 > budget[0]["size"] > 17 * 1024 == budget[0]["budget"]
    assert not [a for a in plan["actions"] if a["kind"] == "trim_budget"]
    # past what Claude Code loads: over budget, and a trim
    write(f / "MEMORY.md", "\n".join(line + " and then some more" * 5 for line in lines) + "\n")
    plan = plan_json(tmp_path, "--model", "none")
    budget = [x for x in plan["findings"] if x["kind"] in ("over_budget", "near_budget")]
    assert [x["kind"] for x in budget] == ["over_budget"] and budget[0]["size"] > 24 * 1024 == budget[0]["budget"]
    assert [a["kind"] for a in plan["actions"]] == ["trim_budget"]


@pytest.mark.parametrize("layout_flag", [[], ["--layout", "claude"]])
def test_no_memory_folder_is_a_usage_error(tmp_path, layout_flag):
    write(tmp_path / "README.md", "nothing here\n")
    res = run_cli("plan", str(tmp_path), "--json", *layout_flag)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_project_holding_nothing_but_its_memory_is_no_repository_to_check_against(tmp_path):
    """A memory folder copied out of its project (a backup, a share) has every ref of every memory
    missing there: staleness is said to be unchecked, not reported stale memory by memory."""
    project = tmp_path / "copy"
    write(project / ".claude/memory/MEMORY.md", "- [a](a.md) — hook\n")
    write(project / ".claude/memory/a.md", topic("a"))
    write(project / "README.md", "what this was\n")
    corpus = load(project)
    assert corpus.memories[0].extra["repo"] is None
    [skipped] = [f for f in corpus.findings if f.kind == "staleness_skipped"]
    assert skipped.reason == "staleness not checked: no --repo, and copy holds nothing but .claude/ and notes (no code, no git history)"
    write(project / "docs/site/.claude/memory/b.md", topic("b"))  # folders holding only notes and memories: no code
    write(project / "docs/notes.md", "notes\n")
    assert load(project).memories[0].extra["repo"] is None
    for code in ("src/x", "main.go", ".git/HEAD", "docs/site/app.ts"):  # a code file anywhere, or its history: a project
        write(project / code, "")
        assert load(project).memories[0].extra["repo"] == str(project.resolve()), code
        (project / code).unlink()
        if "/" in code and not any((project / code).parent.iterdir()):
            (project / code).parent.rmdir()
    # nor is the repository around it: a copy kept in a workspace is not judged by the workspace's
    # history (a review's case: its memory was pruned for a file the workspace once deleted)
    write(tmp_path / "repo/.git/HEAD", "")
    write(tmp_path / "repo/backups/site/.claude/memory/a.md", topic("a"))
    assert load(tmp_path / "repo/backups/site").memories[0].extra["repo"] is None
