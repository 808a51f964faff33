"""Issue 9, items 2, 5 and 6: what the writers read is what they write over.

- Every op a writer builds carries the state of the bytes it was computed from: an agent writing
  between the writer's read and the journal's copy makes the run refuse (nothing applied), its line
  never lost (item 2).
- Every retirement carries the content hashes the plan judged (`target_hashes`); a memory changed
  between the plan's read and the writer's (the interactive prompt, the LLM stages) is not retired:
  that action is skipped as "changed since the plan", the rest applies (item 5).
- crux apply reads within the readers' limits (size cap, no symlink leaving the store) and keeps no
  scratch copy of the store outside it (item 6).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, files, plan_json, with_git_history
from helpers import start_cli

from pipeline import apply as apply_mod
from pipeline.config import Settings
from pipeline.errors import RunFailed
from pipeline.storage.since_plan import listing_state
from pipeline.workflow import apply_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
CRUX_L = "memories/learning/"
CRUX_ARCH = ".ai-ignored/memories/sources/20261129/"
CLAUDE_A = ".claude/agent-memory/backend-architect/"
CLAUDE_P = ".claude/projects/-home-dev-acme-shop/memory/"


def store(tmp_path: Path, layout: str) -> Path:
    root = tmp_path / layout
    shutil.copytree(FIXTURES / layout, root, symlinks=True)
    return root


def marker(path: str, n: int) -> bytes:
    """A line an agent appends, in the file's own syntax (so the file still parses)."""
    if path.endswith(".jsonl"):
        return json.dumps({"id": f"agent-{n}", "text": f"agent marker {n}"}).encode() + b"\n"
    if path.endswith((".yml", ".yaml")):
        return f"# agent marker {n}\n".encode()
    return f"\n<!-- agent marker {n} -->\n".encode()


def say(_: str) -> None:
    pass


def yes(_plan, _n) -> bool:
    return True


def apply_in_process(root: Path, confirm=yes, resolve=None, select=None):
    return apply_store(str(root), S, say, select, resolve, confirm)


# ---------------------------------------------------------------------------------------------
# Item 2: an agent writes after the writer read, before the journal copies


def agent_appends_before_execute(monkeypatch: pytest.MonkeyPatch, root: Path, only: str = "") -> dict:
    """Hook `execute`: first append a marker to every existing file the writer built an op on (whose
    name ends with `only`)."""
    seen: dict = {"markers": [], "after_agent": None}
    real = apply_mod.execute

    def execute(root_, ops, *args, **kwargs):
        for op in ops:
            path = root / op.path
            if op.path.startswith(".memconsolidate/") or any(p == op.path for p, _ in seen["markers"]):
                continue
            if path.is_file() and not path.is_symlink() and op.path.endswith(only):
                line = marker(op.path, len(seen["markers"]))
                with open(path, "ab") as fh:
                    fh.write(line)
                seen["markers"].append((op.path, line))
        seen["after_agent"] = files(root)
        return real(root_, ops, *args, **kwargs)

    monkeypatch.setattr(apply_mod, "execute", execute)
    return seen


@pytest.mark.parametrize("layout", ["crux", "claude", "zylos", "bank"])
def test_a_write_between_the_writers_read_and_the_journal_is_never_lost(tmp_path, monkeypatch, layout):
    monkeypatch.setenv("MEMCONSOLIDATE_CLOCK", f"{NOW}T09:30")
    root = store(tmp_path, layout)
    seen = agent_appends_before_execute(monkeypatch, root)
    refused = None
    try:
        apply_in_process(root)
    except RunFailed as exc:
        refused = str(exc)
    assert seen["markers"], "the writer built no op on an existing file"
    everything = b"\n".join(files(root).values())
    lost = [p for p, line in seen["markers"] if line not in everything]
    assert not lost, f"agent lines lost (run {'refused' if refused else 'reported success'}): {lost}"
    if refused is not None:
        assert "changed since it was read" in refused and "nothing applied" in refused
        assert files(root) == seen["after_agent"]  # nothing of the run applied


def test_crux_moved_memories_keep_what_an_agent_appended_before_the_journal_copied_them(tmp_path, monkeypatch):
    # The case: only type moves, the agent writing only to the memory files being moved.
    root = store(tmp_path, "crux")
    seen = agent_appends_before_execute(monkeypatch, root, only=".memory.md")
    refused = None
    try:
        apply_in_process(root, select=["promote", "demote", "archive"])
    except RunFailed as exc:
        refused = str(exc)
    assert len(seen["markers"]) >= 5
    everything = b"\n".join(files(root).values())
    lost = [p for p, line in seen["markers"] if line not in everything]
    assert not lost, f"{len(lost)} of {len(seen['markers'])} agent lines lost (refused: {refused})"
    assert refused is not None and "changed since it was read" in refused
    assert files(root) == seen["after_agent"]


def test_crux_moves_and_their_front_matter_edit_carry_the_state_they_were_built_on(tmp_path):
    from pipeline.apply import select_actions
    from pipeline.plan import build_plan
    from pipeline.layouts.crux import writer as crux_write
    from pipeline.layouts.registry import open_store

    root = store(tmp_path, "crux")
    corpus, settings = open_store(root, S)
    actions = select_actions(build_plan(corpus, settings), None, None)
    ops = crux_write.changes(corpus, actions, settings, "run-t", None).ops
    assert any(o.kind == "move" for o in ops)
    assert all(o.expect is not None for o in ops), [o for o in ops if o.expect is None]


# ---------------------------------------------------------------------------------------------
# Item 5: a memory changed after the plan is not retired


def edit_at_the_prompt(edits: dict[str, bytes]):
    """A confirm callback: while the user reads the plan, the agent writes (appends) these bytes."""

    def confirm(plan, n):
        for path, data in edits.items():
            with open(plan.root + "/" + path, "ab") as fh:
                fh.write(data)
        return True

    return confirm


def skipped_why(result, kind: str, target: str) -> str:
    whys = [why for a, why in result.changes.skipped if a.kind == kind and target in a.targets]
    assert whys, f"{kind} of {target} was not skipped"
    return whys[0]


def apply_with_edits(root: Path, judged: dict[str, str], edit: bytes, settings: Settings = S):
    """Apply while the agent appends `edit` to each target at the prompt: each action named in
    `judged` ({target: kind}) is skipped as changed since the plan, its target kept with the edit."""
    plan, result = apply_store(str(root), settings, say, None, None, edit_at_the_prompt({k: edit for k in judged}))
    for key, kind in judged.items():
        assert "changed since the plan" in skipped_why(result, kind, key)
        assert (root / key).read_bytes().endswith(edit)
    return result


def test_plan_json_carries_the_hashes_each_action_was_judged_on(tmp_path):
    import hashlib

    root = store(tmp_path, "claude")
    plan = plan_json(root, "--model", "none")
    by_kind = {a["kind"]: a for a in plan["actions"]}
    def sha(key: str) -> str:
        return hashlib.sha256((root / key).read_bytes()).hexdigest()

    merge = by_kind["merge_duplicate"]
    # its targets, and the MEMORY.md whose entry for the retired copy the run strikes
    assert sorted(merge["target_hashes"]) == sorted([*merge["targets"], CLAUDE_P + "MEMORY.md"])
    for key, digest in merge["target_hashes"].items():
        assert digest == sha(key)
    assert "target_hashes" in by_kind["prune_stale"]
    rebuild = by_kind["rebuild_index"]  # judged on the index as read: its fingerprint covers it
    # ... and on which files the folder holds, and the one file it gives an entry (made of its front matter)
    names = sorted(p.name for p in (root / CLAUDE_A).glob("*.md") if p.name != "MEMORY.md")
    assert rebuild["target_hashes"] == {CLAUDE_A + "MEMORY.md": sha(CLAUDE_A + "MEMORY.md"),
                                        CLAUDE_A: listing_state(names),
                                        CLAUDE_A + "project_cache_layer.md": sha(CLAUDE_A + "project_cache_layer.md")}


def test_crux_a_duplicate_or_archive_target_edited_after_the_plan_is_left_in_place(tmp_path):
    root = store(tmp_path, "crux")
    loser = CRUX_L + "migrations-run-before-the-rolling-deploy.memory.md"
    archived = CRUX_L + "jquery-datepicker-timezone-workaround.memory.md"
    result = apply_with_edits(root, {loser: "merge_duplicate", archived: "archive"}, b"\nAdded after the plan.\n")
    for key in (loser, archived):
        assert not (root / CRUX_ARCH / Path(key).name).exists()
    applied = [a.kind for a in result.changes.applied]
    assert applied.count("promote") == 3 and applied.count("archive") == 2  # the rest proceeds


def test_crux_a_consolidation_member_edited_after_the_plan_is_not_consolidated(tmp_path):
    # The model's stages run between the plan's read and the writer's: the same window, only longer.
    root = store(tmp_path, "crux")
    member = CRUX_L + "dedupe-webhook-events-by-event-id.memory.md"
    stub = S.model_copy(update={"llm": S.llm.model_copy(update={"model": "stub", "no_cache": True})})
    apply_with_edits(root, {member: "consolidate"}, b"\nAlso: something new about event ids.\n", stub)
    assert not (root / CRUX_ARCH / Path(member).name).exists()


def test_claude_a_duplicate_or_stale_file_edited_after_the_plan_is_not_archived(tmp_path):
    root = with_git_history(store(tmp_path, "claude"))  # history makes the prune automatic
    loser = CLAUDE_P + "project_ci_cache_copy.md"
    stale = CLAUDE_A + "project_export_jobs.md"
    apply_with_edits(root, {loser: "merge_duplicate", stale: "prune_stale"}, b"\nUpdated after the plan.\n")
    archived = [p for p in files(root) if "/.archive/" in p and p.endswith((Path(loser).name, Path(stale).name))]
    assert archived == []
    other = CLAUDE_A + "project_legacy_billing.md"
    assert not (root / other).exists()  # the other prune still applied
    index = (root / CLAUDE_A / "MEMORY.md").read_text()
    assert "project_export_jobs.md" in index and "project_legacy_billing.md" not in index


def last_revisions(bank: Path) -> dict[str, dict]:
    """Each id's record with the highest revision (the fixture holds a torn line: skipped)."""
    out: dict[str, dict] = {}
    for raw in bank.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict) and "id" in rec:
            if (rec.get("revision") or 0) >= (out.get(rec["id"], {}).get("revision") or 0):
                out[rec["id"]] = rec
    return out


def test_bank_a_duplicate_given_a_newer_revision_after_the_plan_is_not_superseded(tmp_path):
    root = store(tmp_path, "bank")
    bank = root / "blog/memories.jsonl"
    latest = last_revisions(bank)["m002"]
    newer = {**latest, "text": latest["text"] + " (confirmed again by the agent)", "revision": (latest.get("revision") or 0) + 1}
    line = json.dumps(newer).encode() + b"\n"
    prefix = b"" if bank.read_bytes().endswith(b"\n") else b"\n"
    plan, result = apply_in_process(root, edit_at_the_prompt({"blog/memories.jsonl": prefix + line}))
    assert "changed since the plan" in skipped_why(result, "merge_duplicate", "blog/m002")
    assert line in bank.read_bytes()
    after = last_revisions(bank)
    assert not after["m002"].get("superseded_by") and not after["m003"].get("superseded_by")
    assert after["m002"]["text"] == newer["text"]
    assert after["m010"].get("superseded_by") == "m011"  # the other merges proceed


def test_zylos_a_session_log_edited_after_the_plan_is_not_archived(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMCONSOLIDATE_CLOCK", f"{NOW}T09:30")
    root = store(tmp_path, "zylos")
    log = "sessions/2026-09-14.md"
    apply_with_edits(root, {log: "archive_session"}, b"\n- a late note from the agent\n")
    assert not (root / "archive/sessions/2026-09-14.md").exists()
    assert (root / "archive/sessions/2026-10-29.md").exists()  # the other one moved


# ---------------------------------------------------------------------------------------------
# Item 6: crux apply within the readers' limits, no scratch space outside the store


def apply_with_little_memory(root: Path) -> dict:
    """`apply --json` under a 3 GB ceiling on the address space: reading a 6 GB file whole would
    raise MemoryError instead of passing quietly."""
    res = start_cli("apply", str(root), "--now", NOW, "--model", "none", "--yes", "--json", address_space=3 * 1024**3).wait(300)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


def huge_sparse(path: Path, head: bytes = b"") -> None:
    path.write_bytes(head)
    os.truncate(path, 6 * 1024**3)  # 6 GB that cost no disk


def test_crux_apply_never_reads_a_huge_sparse_memory_file(tmp_path):
    root = store(tmp_path, "crux")
    huge = root / CRUX_L / "huge-sparse.memory.md"
    huge_sparse(huge, b"---\ntitle: huge\n---\n")
    out = apply_with_little_memory(root)
    assert out["applied"]
    assert huge.stat().st_size == 6 * 1024**3  # left untouched
    index = (root / ".crux/memory-index.yml").read_text()
    assert index.count("file: memories/learning/huge-sparse.memory.md\n") == 1  # listed from its path


def test_crux_apply_leaves_a_huge_index_as_it_is(tmp_path):
    root = store(tmp_path, "crux")
    index = root / ".crux/memory-index.yml"
    huge_sparse(index)  # archiving it would mean reading it whole
    out = apply_with_little_memory(root)
    assert out["applied"]
    assert index.stat().st_size == 6 * 1024**3
    assert any(".crux/memory-index.yml cannot be read" in n and "not rebuilt" in n for n in out["notes"])


def test_crux_apply_never_reads_through_a_symlink_leaving_the_store(tmp_path, monkeypatch):
    root = store(tmp_path, "crux")
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.memory.md"
    secret.write_text("---\ntitle: secret outside\n---\nthe password is hunter2\n")
    (root / CRUX_L / "linked-away.memory.md").symlink_to(secret)
    (root / ".crux/reference-tracking/linked-away.refs.yml").symlink_to(secret)
    plan_json(root, "--model", "none")  # the reader reports them; now watch apply
    opened: list[str] = []
    real_open = io.open

    def spy(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)):
            opened.append(os.path.realpath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", spy)
    plan, result = apply_in_process(root)
    monkeypatch.undo()
    assert result is not None and result.changes.applied
    assert str(secret.resolve()) not in opened
    assert "hunter2" not in b"\n".join(files(root).values()).decode("utf-8", "replace")


def test_crux_apply_keeps_no_scratch_copy_of_the_store_outside_it(tmp_path, monkeypatch):
    root = store(tmp_path, "crux")

    def refuse(*args, **kwargs):
        raise AssertionError("a temporary folder outside the store")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    monkeypatch.setattr(tempfile, "TemporaryDirectory", refuse)
    plan, result = apply_in_process(root)
    assert result is not None and result.changes.applied
    state = root / ".memconsolidate"
    leftovers = [p.name for p in state.iterdir() if p.name not in ("lock", "runs", "key", ".gitignore")]
    assert leftovers == []
