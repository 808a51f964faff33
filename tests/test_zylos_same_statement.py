"""Two zylos entries with one statement are one memory only when the rest of them is the same too.

An entry's `body` is its statement (for a preference, its title): the text rules group on it. A
later `### Concise responses preferred` that narrows the scope and adds an exception was retired
automatically as "normalized text identical" into archive/, which the agent never loads (red-team 4,
bug 2). Now a merge is automatic only when the entries' other fields and notes match too, their dates
and importance aside (the seed's sync agent notes a preference again on the day it sees it again);
otherwise it needs the user. And a code fence no later fence line closes hid every heading after it,
so the entry holding it ran to the end of the file and took the next entries with it into archive/,
unnamed by the plan: such a file is now a parse problem and none of its entries is read.
"""

from __future__ import annotations

from pathlib import Path

from helpers import NOW, apply_json, kinds, plan_json, run_cli, snapshot

from pipeline.layouts.zylos.reader import entry_memories, entry_parts, parse_entries
from pipeline.rules.duplicates import MERGE_PARTS, differing_parts, merge_action
from pipeline.model import Memory

PREF = "reference/preferences.md#"

FIRST = """# Shared Preferences

### Concise responses preferred
- **Date observed:** 2026-01-18
- **Applies to:** all
- **Importance:** 3
- **Type:** procedural

### Tag releases from main only
- **Date observed:** 2026-02-01
- **Applies to:** release process
- **Importance:** 3
- **Type:** procedural

"""
# The same preference again, with its own scope and an exception whose template is fenced code.
NARROWER = """### Concise responses preferred
- **Date observed:** 2026-03-12
- **Applies to:** chat replies only; NOT incident reports
- **Importance:** 3
- **Type:** procedural

Exception: incident reports must be exhaustive and follow this template:
```
## Incident
### Timeline
{close}
"""
NEXT = """### Never force-push to main
- **Date observed:** 2026-03-20
- **Applies to:** all repositories
- **Importance:** 3
- **Type:** procedural
"""
# The same preference noted again on another day, with another importance: all else as the first.
AGAIN = """
### Concise responses preferred
- **Date observed:** 2026-04-02
- **Applies to:** all
- **Importance:** 4
- **Type:** procedural
"""


def store(tmp_path: Path, preferences: str) -> Path:
    root = tmp_path / "memory"
    (root / "reference").mkdir(parents=True)
    (root / "sessions").mkdir()
    (root / "identity.md").write_text("# Identity\n\nI am the team assistant.\n")
    (root / "state.md").write_text("# State\n\nLast updated: 2026-04-30\n\n## Active focus\n- nothing\n")
    (root / "references.md").write_text("# References\n\n- reference/preferences.md\n")
    (root / "reference" / "preferences.md").write_text(preferences)
    return root


def merges(plan: dict) -> list[dict]:
    return [a for a in plan["actions"] if a["kind"] == "merge_duplicate"]


def test_the_same_title_with_another_scope_and_an_exception_is_never_merged_automatically(tmp_path):
    root = store(tmp_path, FIRST + NARROWER.format(close="```") + "\n" + NEXT)
    [merge] = merges(plan_json(root, "--model", "none"))
    assert merge["targets"] == [PREF + "concise-responses-preferred", PREF + "concise-responses-preferred-2"]
    assert merge["needs_user"] is True
    assert "but not the rest (applies to, notes)" in merge["reason"]
    before = snapshot(root)
    out = apply_json(root)
    assert out["applied"] == [] and out["run_id"] is None
    assert snapshot(root) == before  # both stay where the agent loads them


def test_a_copy_that_differs_only_in_its_date_and_importance_still_merges_alone(tmp_path):
    root = store(tmp_path, FIRST + NARROWER.format(close="```") + "\n" + NEXT + AGAIN)
    plan = plan_json(root, "--model", "none")
    by_retired = {tuple(a["targets"][1:]): a for a in merges(plan)}
    assert set(by_retired) == {(PREF + "concise-responses-preferred-2",), (PREF + "concise-responses-preferred-3",)}
    again = by_retired[(PREF + "concise-responses-preferred-3",)]
    assert (again["survivor"], again["needs_user"], again["reason"]) == (
        PREF + "concise-responses-preferred", False, "normalized text identical")
    narrower = by_retired[(PREF + "concise-responses-preferred-2",)]
    assert (narrower["survivor"], narrower["needs_user"]) == (PREF + "concise-responses-preferred", True)

    before = snapshot(root)
    out = apply_json(root)
    assert kinds(out["applied"]) == [("merge_duplicate", (PREF + "concise-responses-preferred", PREF + "concise-responses-preferred-3"))]
    live = (root / "reference" / "preferences.md").read_text()
    assert "2026-04-02" not in live and "NOT incident reports" in live and "### Never force-push to main" in live
    archived = (root / "archive" / "reference-preferences.md").read_text()
    assert "2026-04-02" in archived and "incident" not in archived and "force-push" not in archived
    res = run_cli("undo", str(root))
    assert res.returncode == 0, res.stderr
    assert snapshot(root) == before


def test_the_merge_that_needs_the_user_applies_when_selected_and_undoes(tmp_path):
    root = store(tmp_path, FIRST + NARROWER.format(close="```") + "\n" + NEXT)
    before = snapshot(root)
    [merge] = merges(plan_json(root, "--model", "none"))
    out = apply_json(root, "--select", f"1={merge['fingerprint']}")
    assert [a["kind"] for a in out["applied"]] == ["merge_duplicate"]
    live = (root / "reference" / "preferences.md").read_text()
    archived = (root / "archive" / "reference-preferences.md").read_text()
    # exactly the named entry moved, its fenced template whole; the next entry stayed
    assert "NOT incident reports" not in live and "### Never force-push to main" in live
    assert "### Timeline\n```\n" in archived and "force-push" not in archived
    assert run_cli("undo", str(root)).returncode == 0
    assert snapshot(root) == before


def test_an_unclosed_fence_is_a_parse_problem_and_nothing_of_its_file_moves(tmp_path):
    root = store(tmp_path, FIRST + NARROWER.format(close="") + "\n" + NEXT)
    plan = plan_json(root, "--model", "none")
    assert plan["actions"] == []
    [problem] = [f for f in plan["findings"] if f["kind"] == "parse_error"]
    assert problem["targets"] == ["reference/preferences.md"]
    assert problem["reason"].startswith("the code fence at line 22 is never closed")
    before = snapshot(root)
    out = apply_json(root)
    assert out["applied"] == [] and out["run_id"] is None
    assert snapshot(root) == before
    live = (root / "reference" / "preferences.md").read_text()
    assert "### Never force-push to main" in live and "NOT incident reports" in live


def test_an_unclosed_fence_leaves_even_the_entries_before_it_unread(tmp_path):
    # Identical entries before the fence would merge in a file without it: none is read here.
    root = store(tmp_path, FIRST + AGAIN.lstrip("\n") + "\n" + NARROWER.format(close="") + "\n" + NEXT)
    plan = plan_json(root, "--model", "none")
    assert merges(plan) == [] and plan["memories"] == 4  # the tier files only
    closed = store(tmp_path / "closed", FIRST + AGAIN.lstrip("\n") + "\n" + NARROWER.format(close="```") + "\n" + NEXT)
    assert [m["needs_user"] for m in merges(plan_json(closed, "--model", "none"))] == [False, True]


def test_a_file_read_as_no_entries_is_not_edited_as_a_whole(tmp_path):
    # Before, a reference file without entries was scanned for relative dates like a tier file, and
    # proposed edits the writer refuses (a reference file is edited through its entries).
    root = store(tmp_path, "# Shared Preferences\n\nLast updated: 2026-04-30\n\nWe moved the release yesterday.\n")
    plan = plan_json(root, "--model", "none")
    assert [a for a in plan["actions"] if a["targets"] == ["reference/preferences.md"]] == []
    assert [f for f in plan["findings"] if f["kind"] == "relative_date"] == []


def test_the_reorder_judge_too_merges_entries_that_differ_only_with_the_user(tmp_path):
    text = ("# Shared Preferences\n\n"
            "### Review every release before tagging\n- **Date observed:** 2026-01-18\n- **Applies to:** all\n\n"
            "### Before tagging, review every release\n- **Date observed:** 2026-02-18\n- **Applies to:** hotfixes excepted\n")
    root = store(tmp_path, text)
    [merge] = merges(plan_json(root, "--model", "stub"))
    assert merge["source"] != "deterministic" and merge["needs_user"] is True
    assert "but not the rest (applies to)" in merge["reason"]
    same_scope = store(tmp_path / "same", text.replace("hotfixes excepted", "all"))
    [merge] = merges(plan_json(same_scope, "--model", "stub"))
    assert merge["needs_user"] is False


# ---------------------------------------------------------------------------------------------
# The parts, one by one


DECISIONS = """# Decisions

### ESM only
- **Date:** 2026-01-15
- **Decided by:** Howard
- **Decision:** All JavaScript must use ESM.
- **Context:** Node 20 supports it.
- **Status:** active
- **Importance:** 2
- **Type:** procedural

Notes on the migration.
"""


def test_parts_are_all_but_the_statement_and_the_bookkeeping():
    [entry] = parse_entries(DECISIONS)
    assert entry_parts(entry) == {
        "title": "ESM only", "decided by": "Howard", "context": "Node 20 supports it.", "status": "active",
        "type": "procedural", "notes": "Notes on the migration.",
    }
    [pref] = parse_entries(FIRST)[:1]
    assert entry_parts(pref) == {"applies to": "all", "type": "procedural"}  # its title is its statement
    [m] = entry_memories("reference/decisions.md", "decision", DECISIONS, None)
    assert m.extra[MERGE_PARTS] == entry_parts(entry)


def _mem(key: str, **parts: str) -> Memory:
    return Memory(key=key, layout="zylos", body="same statement", extra={MERGE_PARTS: parts})


def test_parts_differ_by_words_and_punctuation_not_by_case_or_spacing():
    a = _mem("a", notes="Use  `x > 0`", scope="All")
    assert differing_parts([a, _mem("b", notes="use `x > 0`", scope="all")]) == []
    assert differing_parts([a, _mem("b", notes="Use `x < 0`", scope="All")]) == ["notes"]
    assert differing_parts([a, _mem("b", notes="Use `x > 0`")]) == ["scope"]  # a part one lacks
    assert differing_parts([_mem("a"), _mem("b")]) == []
    assert differing_parts([Memory(key="c", layout="bank", body="x"), Memory(key="d", layout="bank", body="x")]) == []


def test_merge_action_never_makes_a_merge_of_differing_members_automatic():
    merge = merge_action([_mem("a", scope="all"), _mem("b", scope="chat")], "same meaning", source="reorder")
    assert merge.needs_user is True and merge.reason.startswith("same meaning, but not the rest (scope)")
    assert merge_action([_mem("a", scope="all"), _mem("b", scope="all")], "x").needs_user is False
