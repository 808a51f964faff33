"""Consolidation in a claude memory folder: one new topic file, the members archived, MEMORY.md kept 1:1."""

import json

from helpers import NOW, plan_json, run_cli, snapshot

A = """---
name: Checkout retries
description: How the checkout service retries payment provider calls
type: project
---

The checkout service retries payment provider calls three times with exponential backoff.
Retries stop on a 4xx answer from the payment provider.
"""
B = """---
name: Checkout retries backoff
description: How the checkout service backs off payment provider retries
type: project
---

The checkout service retries payment provider calls with exponential backoff starting at 200 ms.
Retries of payment provider calls log the attempt number.
"""
C = """---
name: Team lunch
description: Fridays
type: project
---

The team has lunch together on Fridays.
"""


def store(tmp_path):
    folder = tmp_path / "repo" / ".claude" / "memory"
    folder.mkdir(parents=True)
    (folder / "checkout_retries.md").write_text(A)
    (folder / "checkout_backoff.md").write_text(B)
    (folder / "team_lunch.md").write_text(C)
    (folder / "MEMORY.md").write_text(
        "# Memory\n\nNotes I keep by hand.\n\n"
        "- [Checkout retries](checkout_retries.md) — retries\n"
        "- [Checkout retry backoff](checkout_backoff.md) — backoff\n"
        "- [Team lunch](team_lunch.md) — Fridays\n"
    )
    return tmp_path / "repo"


def test_consolidate_writes_one_file_archives_members_and_reindexes(tmp_path):
    root = store(tmp_path)
    plan = plan_json(root, "--model", "stub", "--max-retire", "1")
    cons = [a for a in plan["actions"] if a["kind"] == "consolidate"]
    assert len(cons) == 1 and cons[0]["source"] == "stub:metadata"
    members = sorted(cons[0]["targets"])
    assert members == [".claude/memory/checkout_backoff.md", ".claude/memory/checkout_retries.md"]
    new_path = cons[0]["outputs"][0]["path"]
    assert cons[0]["needs_user"]  # a claude folder's owner chooses it
    before = snapshot(root)
    res = run_cli("apply", str(root), "--now", NOW, "--model", "stub", "--yes", "--json", "--max-retire", "1")
    assert res.returncode == 0, res.stderr
    assert "consolidate" not in [a["kind"] for a in json.loads(res.stdout)["applied"]]
    assert snapshot(root) == before  # nothing else to do: a bare apply leaves the folder as it was
    res = run_cli("apply", str(root), "--now", NOW, "--model", "stub", "--yes", "--json", "--max-retire", "1", "--select", "consolidate")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "consolidate" in [a["kind"] for a in out["applied"]]
    folder = root / ".claude" / "memory"
    written = (root / new_path).read_text()
    # every fact of both members survives in the consolidated file
    for fact in ("three times", "200 ms", "4xx", "attempt number", "exponential backoff"):
        assert fact in written
    assert not (folder / "checkout_retries.md").exists() and not (folder / "checkout_backoff.md").exists()
    archived = {p.name for p in folder.glob(".archive/*/*.md")}
    assert {"checkout_retries.md", "checkout_backoff.md", "MEMORY.md"} <= archived
    index = (folder / "MEMORY.md").read_text()
    assert "Notes I keep by hand." in index
    assert f"]({new_path.rsplit('/', 1)[-1]})" in index and "checkout_retries.md" not in index
    assert "team_lunch.md" in index
    # nothing further to do, and undo puts every byte back
    again = plan_json(root, "--model", "stub", "--max-retire", "1")
    assert [a for a in again["actions"] if not a["needs_user"]] == []
    assert run_cli("undo", str(root)).returncode == 0
    assert snapshot(root) == before


def test_a_consolidation_whose_index_cannot_follow_says_so_in_the_run(tmp_path):
    """A red-team's case: the members were archived and the new file written while MEMORY.md could
    not be edited (here a symlink, left untouched); only the folder's REPORT.md said NOT REBUILT.
    The run's notes say it, where an apply's reader (and a nightly run's report) looks."""
    root = store(tmp_path)
    folder = root / ".claude" / "memory"
    (folder / "MEMORY.real.md").write_bytes((folder / "MEMORY.md").read_bytes())
    (folder / "MEMORY.md").unlink()
    (folder / "MEMORY.md").symlink_to("MEMORY.real.md")
    [cons] = [a for a in plan_json(root, "--model", "stub", "--max-retire", "1")["actions"] if a["kind"] == "consolidate"]
    res = run_cli("apply", str(root), "--now", NOW, "--model", "stub", "--yes", "--json", "--max-retire", "1", "--select", "consolidate")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert [a["kind"] for a in out["applied"]] == ["consolidate"]
    [note] = [n for n in out["notes"] if n.startswith(".claude/memory/MEMORY.md: not edited for this run's changes")]
    assert "MEMORY.md left untouched: it is a symlink" in note and note.endswith("the next plan proposes rebuild_index")
    # and the plan said so first, in the consolidation's reason
    assert cons["reason"].endswith("; applying it: " + note.removeprefix(".claude/memory/MEMORY.md: "))


def test_a_fallback_to_the_deterministic_merge_says_why_in_a_sentence(tmp_path):
    """Members longer than the model is shown (`MEMBER_CHARS`) make its merged body lose what it never
    saw: the deterministic merge is used, and the reason says which check the proposal failed, as a
    sentence ("the proposed merged body member 1 loses ..." read as one noun phrase)."""
    folder = store(tmp_path)
    tail_a = "".join(f"Step {i}: the checkout service retries payment provider calls, see `retry_{i}.py`.\n" for i in range(160))
    tail_b = "".join(f"Step {i}: the checkout service backs off payment provider retries, see `backoff_{i}.py`.\n" for i in range(160))
    (folder / ".claude" / "memory" / "checkout_retries.md").write_text(A + tail_a)
    (folder / ".claude" / "memory" / "checkout_backoff.md").write_text(B + tail_b)
    [action] = [a for a in plan_json(folder, "--model", "stub", "--now", NOW, "--max-retire", "1")["actions"] if a["kind"] == "consolidate"]
    assert "; deterministic merge used: the proposed merged body failed its check (member 1 loses " in action["reason"]
    assert "the proposed merged body member" not in action["reason"]
