"""A folder at one of Claude Code's own places (`.claude/agent-memory/<agent>/`, `.claude/memory/`,
`.claude/projects/<path>/memory/`) is a memory folder before it has a MEMORY.md only when it holds a
memory: a file whose front matter says what a memory's does (`name`, `description`, `type`, or a
nested `metadata: {type}`). Projects keep other records beside their agents' memory folders (a
`failures/` folder with a README on its record format, an `explanations/` folder of decision records
with front matter of their own): no MEMORY.md is created there, and nothing there is pruned or
merged as a memory."""

from __future__ import annotations

from pathlib import Path

from helpers import plan_json, run_cli

MEMORY = "---\nname: {name}\ndescription: about {name}\ntype: feedback\n---\n\nUse the staging database for {name}.\n"


def _agent(tmp_path: Path, agent: str, files: dict[str, str], index: bool = False) -> Path:
    folder = tmp_path / ".claude" / "agent-memory" / agent
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    if index:
        (folder / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"- [{n}]({n}) — x\n" for n in files))
    return folder


def _plan(root: Path) -> dict:
    return plan_json(root, "--model", "none", "--now", "2026-12-06")


def test_a_folder_of_other_records_beside_the_agents_is_no_memory_folder(tmp_path: Path):
    _agent(tmp_path, "reviewer", {"checks.md": MEMORY.format(name="checks")}, index=True)
    _agent(tmp_path, "failures", {"README.md": "# Failure Record Store\n\nEach record is a JSON file.\n"})
    _agent(tmp_path, "explanations", {
        "2026-03-17-developer-routes.md": "---\nagent: developer\nfeature: modal\ntags: [tests]\ndate: 2026-03-17\n---\n\n"
                                          "## Decision\n\nInjected a fake context.\n",
        "2026-03-18-architect-resolver.md": "---\nagent: architect\nfeature: resolver\ndate: 2026-03-18\n---\n\nExtracted it.\n",
    })
    plan = _plan(tmp_path)
    touched = [t for item in plan["actions"] + plan["findings"] for t in item["targets"]]
    assert not [t for t in touched if "/failures/" in t or "/explanations/" in t]
    assert plan["memories"] == 1


def test_an_agent_folder_before_its_first_index_is_still_one(tmp_path: Path):
    _agent(tmp_path, "writer", {"style.md": MEMORY.format(name="style")})
    _agent(tmp_path, "tester", {"e2e.md": "---\nname: e2e\nmetadata:\n  type: project\n---\n\nRun the suite twice.\n",
                                "notes.md": "Plain notes without front matter.\n"})
    _agent(tmp_path, "planner", {"plans.md": "---\ndescription: how plans are cut\n---\n\nSmall steps.\n"})
    plan = _plan(tmp_path)
    rebuilt = sorted(a["targets"][0] for a in plan["actions"] if a["kind"] == "rebuild_index")
    assert rebuilt == [".claude/agent-memory/planner/MEMORY.md", ".claude/agent-memory/tester/MEMORY.md",
                       ".claude/agent-memory/writer/MEMORY.md"]
    assert plan["memories"] == 4


def test_a_folder_with_an_index_is_one_whatever_its_files_say(tmp_path: Path):
    _agent(tmp_path, "ops", {"runbook.md": "Restart the workers first.\n"}, index=True)
    assert _plan(tmp_path)["memories"] == 1


def test_a_store_holding_only_other_records_is_no_store(tmp_path: Path):
    _agent(tmp_path, "failures", {"README.md": "# Failure Record Store\n"})
    res = run_cli("plan", str(tmp_path), "--model", "none")
    assert res.returncode == 2 and "no recognisable memory store" in res.stderr
