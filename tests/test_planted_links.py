"""Links planted in a store, or in a folder of stores, by whoever it was unpacked from (tar keeps
hard links and symlinks inside an archive).

What the tool writes for itself (the store's lock, a fleet's state file) is never written through
a hard link into a memory; what the tool keeps in its state folder (the journal-signing key) is
never read as a memory through a symlink, so it never reaches an index, a plan or a model.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import FIXTURES, NOW, copy_store, run_cli, start_cli

BLOG = "blog/memories.jsonl"


def test_a_lock_file_hard_linked_to_a_memory_is_refused_and_the_memory_kept(tmp_path: Path) -> None:
    store = copy_store(FIXTURES / "bank", tmp_path / "store")
    memory = (store / BLOG).read_bytes()
    (store / ".memconsolidate").mkdir()
    os.link(store / BLOG, store / ".memconsolidate" / "lock")
    for command in (["apply", "--yes"], ["run"], ["undo"]):
        res = run_cli(command[0], str(store), *command[1:], *(["--now", NOW, "--model", "none"] if command[0] != "undo" else []))
        assert res.returncode == 1, (command, res.stderr)
        assert "hard links" in res.stderr and "Traceback" not in res.stderr
        assert (store / BLOG).read_bytes() == memory
    # Removed, as the message says, the store applies again.
    (store / ".memconsolidate" / "lock").unlink()
    assert run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes").returncode == 0


def test_a_fleet_state_hard_linked_to_a_memory_is_refused_and_the_memory_kept(tmp_path: Path) -> None:
    folder = tmp_path / "stores"
    store = copy_store(FIXTURES / "bank", folder / "bank1")
    memory = (store / BLOG).read_bytes()
    os.link(store / BLOG, folder / ".memconsolidate-fleet.jsonl")
    res = run_cli("fleet", "run", "--if-due", "--discover", str(folder), "--now", NOW, "--model", "none")
    assert res.returncode == 2, res.stderr
    assert "other hard links" in res.stderr and res.stdout == ""
    assert (store / BLOG).read_bytes() == memory


def test_a_fifo_as_the_fleet_state_is_refused_without_hanging(tmp_path: Path) -> None:
    folder = tmp_path / "stores"
    copy_store(FIXTURES / "bank", folder / "bank1")
    os.mkfifo(folder / ".memconsolidate-fleet.jsonl")
    # In a process of its own: an open that blocks on the FIFO fails the test instead of hanging it.
    res = start_cli("fleet", "run", "--if-due", "--discover", str(folder), "--now", NOW, "--model", "none").wait(60)
    assert res.returncode == 2 and "not a regular file" in res.stderr, res.stderr


def _key(store: Path) -> str:
    return (store / ".memconsolidate" / "key").read_text().split()[0]


def test_a_memory_symlinked_to_the_signing_key_is_never_read(tmp_path: Path) -> None:
    store = copy_store(FIXTURES / "claude", tmp_path / "store")
    assert run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes").returncode == 0
    folder = store / ".claude" / "agent-memory" / "backend-architect"
    (folder / "project_notes.md").symlink_to("../../../.memconsolidate/key")
    # A whole memory folder leading into the state folder is not read either.
    (store / ".claude" / "agent-memory" / "state-tour").symlink_to("../../.memconsolidate")
    secret = _key(store)
    planned = run_cli("plan", str(store), "--now", NOW, "--model", "stub", "--no-cache", "--json")
    assert planned.returncode == 0, planned.stderr
    assert secret not in planned.stdout
    errors = {f["targets"][0]: f["reason"] for f in json.loads(planned.stdout)["findings"] if f["kind"] == "parse_error"}
    assert ".memconsolidate/" in errors[".claude/agent-memory/backend-architect/project_notes.md"]
    applied = run_cli("apply", str(store), "--now", NOW, "--model", "stub", "--no-cache", "--yes")
    assert applied.returncode == 0, applied.stderr
    assert _key(store) == secret  # the same key: nothing rewrote it
    leaked = [p for p in store.rglob("*") if ".memconsolidate" not in p.relative_to(store).parts
              and p.is_file() and not p.is_symlink() and secret.encode() in p.read_bytes()]
    assert leaked == []


def test_a_bank_rules_file_symlinked_into_the_state_folder_takes_no_rule(tmp_path: Path) -> None:
    store = copy_store(FIXTURES / "bank", tmp_path / "store")
    assert run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes").returncode == 0
    rules = store / "ops" / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    (rules / "learned.md").symlink_to("../../.memconsolidate/key")
    key_before = (store / ".memconsolidate" / "key").read_bytes()
    res = run_cli("apply", str(store), "--now", NOW, "--model", "stub", "--no-cache", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    assert (store / ".memconsolidate" / "key").read_bytes() == key_before
    assert (rules / "learned.md").is_symlink()


def test_a_memory_folder_symlinked_into_the_state_folder_takes_no_write(tmp_path: Path) -> None:
    # A promotion to core would have written the memory into .memconsolidate/ through the link.
    store = copy_store(FIXTURES / "crux", tmp_path / "store")
    planted = store / ".memconsolidate" / "planted"
    planted.mkdir(parents=True)
    core = store / "memories" / "core"
    for path in core.iterdir():
        path.rename(planted / path.name)
    core.rmdir()
    core.symlink_to("../.memconsolidate/planted")
    before = sorted(p.name for p in planted.iterdir())
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", "--json")
    assert res.returncode == 0, res.stderr  # that move is skipped with why; the rest of the run applies
    skipped = json.loads(res.stdout)["skipped"]
    assert skipped and all(s["why"].endswith("a folder on its path leads into .memconsolidate/") for s in skipped)
    assert sorted(p.name for p in planted.iterdir()) == before


def test_the_fleet_state_is_never_put_inside_a_store_it_runs(tmp_path: Path) -> None:
    # `--discover STORE` (a folder that is itself a store) put the default state file in the store's
    # root: a file no journal knows, so undo could not give the store back as it was.
    store = copy_store(FIXTURES / "zylos", tmp_path / "z")
    before = sorted(p.relative_to(store).as_posix() for p in store.rglob("*"))
    res = run_cli("fleet", "run", "--if-due", "--discover", str(store), "--now", NOW, "--model", "none")
    assert res.returncode == 2 and "would lie inside the store" in res.stderr, res.stderr
    res = run_cli("fleet", "run", "--if-due", str(store), "--state", str(store / "sub" / "s.jsonl"), "--now", NOW, "--model", "none")
    assert res.returncode == 2 and "would lie inside the store" in res.stderr, res.stderr
    assert sorted(p.relative_to(store).as_posix() for p in store.rglob("*")) == before
    # Outside the stores it runs, as before.
    res = run_cli("fleet", "run", "--if-due", "--discover", str(store), "--state", str(tmp_path / "s.jsonl"), "--now", NOW, "--model", "none")
    assert res.returncode == 0, res.stderr


def test_a_file_replaced_through_a_planted_symlink_takes_no_mode_from_its_target(tmp_path: Path) -> None:
    # `fleet plan --plans-dir DIR` with `DIR/<plan file> -> /tmp` made a world-writable, sticky plan
    # file; a link to a setuid program, a setuid one. The link is replaced, and its target lends nothing.
    from pipeline.journal import write_atomic

    target = tmp_path / "program"
    target.write_bytes(b"#!/bin/sh\n")
    target.chmod(0o4755)
    link = tmp_path / "x.plan.json"
    link.symlink_to(target)
    write_atomic(link, b"{}\n")
    assert not link.is_symlink() and link.read_bytes() == b"{}\n"
    assert link.stat().st_mode & 0o7777 == 0o644
    assert target.read_bytes() == b"#!/bin/sh\n" and target.stat().st_mode & 0o7777 == 0o4755
    # A regular file keeps its own mode when rewritten.
    own = tmp_path / "own.json"
    own.write_bytes(b"old")
    own.chmod(0o600)
    write_atomic(own, b"new")
    assert own.stat().st_mode & 0o7777 == 0o600


def test_an_archive_folder_linked_to_a_live_folder_takes_nothing_it_would_read_back(tmp_path: Path) -> None:
    """A red-team's case: a crux store whose `memories/archived` is a symlink to `memories/learning`
    (inside the store): every archive landed among the live learnings, read back as live next run.
    A write goes where its path says or nowhere: those moves are skipped with why."""
    from helpers import snapshot

    store = copy_store(FIXTURES / "crux", tmp_path / "store")
    archived = store / "memories" / "archived"
    if archived.exists():
        for path in archived.iterdir():
            path.rename(store / "memories" / "learning" / path.name)
        archived.rmdir()
    archived.symlink_to("learning")
    learning = snapshot(store / "memories" / "learning")
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    into_archive = [s for s in out["skipped"] if s["why"].endswith("a folder on its path is a symlink (to memories/learning)")]
    assert into_archive and not [a for a in out["applied"] if a["kind"] == "archive"]
    grown = {k for k in snapshot(store / "memories" / "learning") if k not in learning}
    demoted = {t.rsplit("/", 1)[-1] for a in out["applied"] if a.get("to_type") == "learning" for t in a["targets"]}
    assert grown <= demoted  # what came in was demoted to a learning, nothing archived into the live folder


def test_a_linked_reports_folder_refuses_the_run_in_one_line(tmp_path: Path) -> None:
    """Every run writes its report there: each action was skipped in turn, every night, exit 0."""
    store = copy_store(FIXTURES / "claude", tmp_path / "store")
    outside = tmp_path / "outside"
    outside.mkdir()
    (store / ".memconsolidate").mkdir(exist_ok=True)
    (store / ".memconsolidate" / "reports").symlink_to(outside)
    for command in ("apply", "run"):
        res = run_cli(command, str(store), "--now", NOW, "--model", "none", *(["--yes"] if command == "apply" else []))
        assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
        assert res.stderr.strip().endswith("reports is a symlink: refusing to write run reports outside the store")
    assert list(outside.iterdir()) == []
