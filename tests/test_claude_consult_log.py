"""The consult log is data on disk: it is read only inside the project (or repository) its path is
joined to, as a regular file, and nothing ever writes to it.

A known leftover (session 17): the default `.claude/logs/memory-consult.jsonl` was read through a
symlinked `.claude/` or `.claude/logs/` leading anywhere (only the file's own last link was checked,
against its own folder), so a file outside the store chose which stale memories the consult-gate
kept from a prune, and its words went into the plan's reasons.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import apply_json, fifo_watch, plan_json, run_cli, snapshot

from pipeline.evidence.context import MAX_LOG_BYTES

LOG = ".claude/logs/memory-consult.jsonl"
OLD = ".claude/agent-memory/a/old.md"
# names the stale memory, within the consult window before NOW (2026-11-29)
ENTRY = json.dumps({"ts": "2026-11-28T00:00:00Z", "query": "a query from outside", "names": ["old"]}) + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def project(tmp_path: Path) -> Path:
    """A project with code and one fully stale memory (every ref it names is gone)."""
    root = tmp_path / "proj"
    write(root / "src/main.py", "x = 1\n")
    write(root / ".claude/agent-memory/a/MEMORY.md", "- [old](old.md) — old\n")
    write(root / OLD, "---\nname: old\ntype: project\nmodified: 2020-01-01\n---\nSee src/gone.py\n")
    return root


def stale_of(plan: dict, key: str) -> dict:
    return next(f for f in plan["findings"] if f["kind"] == "stale" and f["targets"] == [key])


def prunes(plan: dict) -> list[list[str]]:
    return [a["targets"] for a in plan["actions"] if a["kind"] == "prune_stale"]


def logs_folder_linked_out(root: Path, outside: Path) -> None:
    write(outside / "logs/memory-consult.jsonl", ENTRY)
    os.symlink(outside / "logs", root / ".claude/logs")


def log_file_linked_out(root: Path, outside: Path) -> None:
    write(outside / "memory-consult.jsonl", ENTRY)
    (root / ".claude/logs").mkdir()
    os.symlink(outside / "memory-consult.jsonl", root / LOG)


def log_linked_into_the_state_folder(root: Path, outside: Path) -> None:
    write(root / ".memconsolidate/consult.jsonl", ENTRY)
    (root / ".claude/logs").mkdir()
    os.symlink("../../.memconsolidate/consult.jsonl", root / LOG)


def huge_log(root: Path, outside: Path) -> None:
    write(root / LOG, ENTRY)
    os.truncate(root / LOG, MAX_LOG_BYTES + 1)  # sparse: the cap is judged before anything is read


@pytest.mark.parametrize(
    "shape, reason",
    [
        (logs_folder_linked_out, "symlink points outside the store"),  # was read
        (log_file_linked_out, "symlink points outside the store"),
        (log_linked_into_the_state_folder, "points into .memconsolidate/"),
        (huge_log, "file too large"),
    ],
)
def test_a_consult_log_out_of_the_project_or_no_plain_file_is_not_read(tmp_path, shape, reason):
    root = project(tmp_path)
    shape(root, tmp_path / "outside")
    plan = plan_json(root, "--model", "none")
    assert stale_of(plan, OLD)["class"] == "FULLY_STALE"  # no consult-gate by what it says
    assert prunes(plan) == [[OLD]]
    refused = [f["reason"] for f in plan["findings"] if f["kind"] == "parse_error" and f["targets"] == [LOG]]
    assert len(refused) == 1 and refused[0].startswith("consult log not read: ") and reason in refused[0], refused
    assert "a query from outside" not in json.dumps(plan)


def test_a_dot_claude_folder_linked_out_of_the_repository_is_not_read_through(tmp_path):
    # A memory folder outside `.claude/` in a git work tree: its consult log is the work tree's
    # `.claude/logs/...`, and `.claude/` there a symlink to a folder of someone else's (was read).
    root = tmp_path / "proj"
    write(root / "src/main.py", "x = 1\n")
    (root / ".git").mkdir()
    write(root / "notes/MEMORY.md", "- [old](old.md) — old\n")
    write(root / "notes/old.md", "---\nname: old\ntype: project\nmodified: 2020-01-01\n---\nSee src/gone.py\n")
    write(tmp_path / "outside/claude/logs/memory-consult.jsonl", ENTRY)
    os.symlink(tmp_path / "outside/claude", root / ".claude")
    plan = plan_json(root, "--model", "none")
    assert stale_of(plan, "notes/old.md")["class"] == "FULLY_STALE"
    assert prunes(plan) == [["notes/old.md"]]
    assert any(f["kind"] == "parse_error" and f["targets"] == [LOG] for f in plan["findings"])


def test_a_consult_log_that_is_a_named_pipe_is_never_opened(tmp_path):
    root = project(tmp_path)
    (root / ".claude/logs").mkdir()
    os.mkfifo(root / LOG)
    with fifo_watch(root / LOG) as opened:
        plan = plan_json(root, "--model", "none")
    assert opened == []
    assert prunes(plan) == [[OLD]]
    assert any(f["kind"] == "parse_error" and "not a regular file" in f["reason"] for f in plan["findings"])


def test_a_consult_log_linked_within_the_project_is_read(tmp_path):
    # A link that stays inside the project is followed: the consult-gate keeps what it names.
    root = project(tmp_path)
    write(root / "shared-logs/memory-consult.jsonl", ENTRY)
    os.symlink("../shared-logs", root / ".claude/logs")
    plan = plan_json(root, "--model", "none")
    assert stale_of(plan, OLD)["kept_reason"].startswith("consult-gate: looked up as 'old'")
    assert prunes(plan) == []


def test_the_project_log_counts_when_the_store_is_the_memory_folder_itself(tmp_path):
    # The log is anchored at the project holding `.claude/`, not at the path planned: planning the
    # memory folder alone still honours its project's log.
    root = project(tmp_path)
    write(root / LOG, ENTRY)
    plan = plan_json(root / ".claude/agent-memory/a", "--model", "none")
    assert stale_of(plan, "old.md")["kept_reason"].startswith("consult-gate: looked up as 'old'")


def test_apply_and_undo_never_write_through_a_linked_logs_folder(tmp_path):
    root = project(tmp_path)
    outside = tmp_path / "outside"
    logs_folder_linked_out(root, outside)
    before_outside, before = snapshot(outside), snapshot(root)
    applied = apply_json(root, "--select", "prune_stale")
    assert [a["targets"] for a in applied["applied"] if a["kind"] == "prune_stale"] == [[OLD]]
    assert not (root / OLD).exists()  # archived inside the store
    assert snapshot(outside) == before_outside
    assert run_cli("undo", str(root)).returncode == 0
    assert snapshot(outside) == before_outside
    assert (root / OLD).exists() and snapshot(root) == before


def test_the_log_is_anchored_at_the_folder_its_configured_path_is_joined_to(tmp_path):
    from pipeline.config import ClaudeConfig, Settings
    from pipeline.rules.staleness_context import consult_log_base

    def base(configured: str, log: str) -> Path:
        return consult_log_base(log, Settings(claude=ClaudeConfig(consult_log=configured)))

    assert base(LOG, f"/p/{LOG}") == Path("/p")
    assert base("consult.jsonl", "/p/consult.jsonl") == Path("/p")
    assert base("logs/./c.jsonl", "/p/logs/c.jsonl") == Path("/p")
    # the user's own config naming the file outright: anchored at its own folder, as before
    assert base("/var/log/c.jsonl", "/var/log/c.jsonl") == Path("/var/log")
    assert base("../shared/c.jsonl", "/p/../shared/c.jsonl") == Path("/p/../shared")
