"""Apply on zylos stores: entry blocks move to archive/, session logs move and rotate, the run is
logged in sessions/current.md, and nothing is ever deleted or rewritten beyond what an action means.

The fixture run is compared with the tree committed under tests/data/expected/zylos. After a
deliberate change, regenerate it with `UPDATE_EXPECTED=1 pytest tests/test_zylos_apply.py` and read
the diff: it must be what a careful person would have done by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, REPO, files, kill_apply_then_recover, plan_json, run_cli, snapshot
from test_zylos_fixture import DEFAULT_AGE, MTIMES, noon_days_ago

from pipeline.config import Settings
from pipeline.errors import ConfigError
from pipeline.journal import execute
from pipeline.model import Action
from pipeline.layouts.zylos import reader as zylos, writer as zylos_write

EXPECTED = REPO / "tests" / "data" / "expected" / "zylos"
CLOCK = "2026-11-29T09:30:00+00:00"
ENV = {**os.environ, "MEMCONSOLIDATE_CLOCK": CLOCK}
TODAY = dt.date.fromisoformat(NOW)
S = Settings(now=TODAY)
D = "reference/decisions.md#"
PREF = "reference/preferences.md#"


def nine_thirty() -> dt.datetime:
    return dt.datetime(2026, 11, 29, 9, 30, tzinfo=dt.timezone.utc)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    shutil.copytree(FIXTURES / "zylos", root)
    for path in sorted(root.rglob("*")):
        if path.is_file():
            stamp = noon_days_ago(MTIMES.get(path.relative_to(root).as_posix(), DEFAULT_AGE))
            os.utime(path, (stamp, stamp))
    return root


def apply(root: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli("apply", str(root), "--now", NOW, "--model", "none", "--yes", *extra, env=env or ENV)


def apply_json(root: Path, *extra: str) -> dict:
    res = apply(root, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def with_run_id_masked(tree: dict[str, bytes], run_id: str) -> dict[str, bytes]:
    return {k: v.replace(run_id.encode(), b"<run-id>") for k, v in tree.items()}


def expected_tree() -> dict[str, bytes]:
    return files(EXPECTED) if EXPECTED.is_dir() else {}


def write_expected(tree: dict[str, bytes]) -> None:
    shutil.rmtree(EXPECTED, ignore_errors=True)
    for key, data in tree.items():
        path = EXPECTED / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def small_store(tmp_path: Path, **contents: bytes | str) -> Path:
    """identity.md and state.md plus the given files (keyword `reference__decisions` means
    `reference/decisions.md`), written byte for byte."""
    root = tmp_path / "small"
    (root / "sessions").mkdir(parents=True)
    (root / "identity.md").write_text("# Identity\n")
    (root / "state.md").write_text("# Active State\n")
    for name, data in contents.items():
        path = root / (name.replace("__", "/") + ".md")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return root


def run_changes(root: Path, actions: list[Action], resolve: str | None = None):
    corpus = zylos.load(root, S)
    return zylos_write.changes(corpus, actions, S, "run-1", resolve, clock=nine_thirty)


# ---------------------------------------------------------------------------------------------
# The fixture, end to end through the command line


def test_fixture_apply_matches_the_expected_tree(store):
    before = files(store)
    out = apply_json(store)
    run_id = out["run_id"]
    assert [a["kind"] for a in out["applied"]] == (
        ["merge_duplicate"] + ["archive"] * 5 + ["archive_session"] * 2 + ["rotate_session"]
    )
    assert out["skipped"] == []
    after = with_run_id_masked(files(store), run_id)
    if os.environ.get("UPDATE_EXPECTED") == "1":
        write_expected(after)
    expected = expected_tree()
    assert sorted(after) == sorted(expected)
    for key in sorted(expected):
        assert after[key] == expected[key], f"{key} differs from tests/data/expected/zylos/{key}"
    # files no action touches are byte-identical to the fixture
    for key in ("identity.md", "state.md", "references.md", "reference/ideas.md", "users/lin/profile.md",
                "users/mei/profile.md", "sessions/2026-10-30.md", "archive/2026-08-01-decisions.md"):
        assert after[key] == before[key]
    # moved, not rewritten
    assert after["archive/sessions/2026-09-14.md"] == before["sessions/2026-09-14.md"]
    assert after["sessions/2026-11-27.md"] == before["sessions/current.md"]
    report = (store / ".memconsolidate" / "reports" / f"{run_id}.md").read_text()
    assert report.startswith(f"# memconsolidate run {run_id}") and "## Applied (9)" in report


def test_every_removed_line_is_in_the_archive(store):
    before = files(store)
    apply_json(store)
    after = files(store)
    for stem in ("decisions", "lessons", "preferences", "projects"):
        old = before[f"reference/{stem}.md"].decode().splitlines()
        new = after[f"reference/{stem}.md"].decode().splitlines()
        archived = after[f"archive/reference-{stem}.md"].decode().splitlines()
        remaining = list(new)
        for line in old:
            if remaining and line == remaining[0]:
                remaining.pop(0)
            else:
                assert not line.strip() or line in archived, f"{stem}: {line!r} was lost"
        assert remaining == [], f"{stem}: lines appeared that were not there"


def test_the_consolidation_is_logged_in_the_fresh_session_log(store):
    run_id = apply_json(store)["run_id"]
    log = (store / "sessions" / "current.md").read_text()
    lines = log.splitlines()
    assert lines[:3] == ["# Session Log: 2026-11-29", "", "## 09:30 - Memory consolidation"]
    bullets = [l for l in lines if l.startswith("- ")]
    assert len(bullets) == 9 + 1  # one per applied action, then the run
    assert bullets[-1].startswith(f"- Run {run_id}: report in .memconsolidate/reports/{run_id}.md")
    assert '- Archived "SQLite for C4 message storage" (status superseded) from reference/decisions.md to archive/reference-decisions.md' in lines


def test_undo_restores_byte_for_byte(store):
    before = snapshot(store)
    apply_json(store)
    assert snapshot(store) != before
    res = run_cli("undo", str(store))
    assert res.returncode == 0, res.stderr
    assert snapshot(store) == before  # contents and the file set, archive/sessions/ included


def test_apply_twice_changes_nothing_automatic(store):
    apply_json(store)
    once = snapshot(store)
    res = apply(store)
    assert res.returncode == 0 and "Nothing to apply" in res.stdout, res.stdout + res.stderr
    assert snapshot(store) == once  # not even a new log entry
    plan = plan_json(store, "--model", "none")
    assert [a["kind"] for a in plan["actions"] if not a["needs_user"]] == []
    # what needs the user stays proposed: the decision repeated as a preference with a scope of its own
    assert [a["kind"] for a in plan["actions"]] == ["merge_duplicate", "trim_budget"]


def test_malformed_profile_is_untouched(store):
    path = store / "users" / "lin" / "profile.md"
    data, mtime = path.read_bytes(), path.stat().st_mtime_ns
    apply_json(store)
    assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime


def test_importance_one_and_two_entries_stay_where_they_are(store):
    apply_json(store)
    decisions = (store / "reference" / "decisions.md").read_text()
    lessons = (store / "reference" / "lessons.md").read_text()
    projects = (store / "reference" / "projects.md").read_text()
    # obsolete but importance 1-2: kept
    assert "### Memory Sync every 30 minutes" in decisions
    assert "### Telegram rate limits during broadcasts" in lessons
    assert "### Telegram Bot Setup" in projects


def test_trim_budget_is_skipped_even_when_selected(store):
    before = snapshot(store)
    out = apply_json(store, "--select", "trim_budget")
    assert out["run_id"] is None and out["applied"] == []
    assert [(s["kind"], s["targets"]) for s in out["skipped"]] == [("trim_budget", ["state.md"])]
    assert "needs judgement" in out["skipped"][0]["why"]
    assert snapshot(store) == before


def test_session_already_in_the_archive_is_not_overwritten(store):
    taken = store / "archive" / "sessions" / "2026-09-14.md"
    taken.parent.mkdir()
    taken.write_text("# an older copy\n")
    out = apply_json(store)
    assert [(s["kind"], s["targets"]) for s in out["skipped"]] == [("archive_session", ["sessions/2026-09-14.md"])]
    assert "already exists: never overwritten" in out["skipped"][0]["why"]
    assert taken.read_text() == "# an older copy\n"
    assert (store / "sessions" / "2026-09-14.md").is_file()
    assert (store / "archive" / "sessions" / "2026-10-29.md").is_file()
    assert "- Skipped archive_session of sessions/2026-09-14.md" in (store / "sessions" / "current.md").read_text()


@pytest.mark.parametrize("step", [3, 11])
def test_a_killed_apply_is_rolled_back_by_the_next_plan(store, step):
    before, killed = kill_apply_then_recover(store, step, env=ENV)
    if step == 11:
        # killed after the journal and three file writes: the store really was half changed
        assert killed != before
    assert apply(store).returncode == 0  # and it applies cleanly afterwards


# ---------------------------------------------------------------------------------------------
# Entry moves, byte for byte

CRLF_DECISIONS = (
    "\ufeff# Decisions\r\n\r\n"
    "### A\r\n- **Date:** 2026-01-01\r\n- **Status:** active\r\n- **Importance:** 3\r\n\r\n"
    "### B\r\n- **Date:** 2026-02-01\r\n- **Status:** superseded\r\n- **Importance:** 3\r\n"
    "```\r\n### not a heading inside a fence\r\n```\r\n\r\n\r\n"
    "### C\r\n- **Date:** 2026-03-01\r\n- **Status:** dropped\r\n- **Importance:** 4"
)


def test_entry_moves_keep_line_endings_bom_and_the_missing_final_newline(tmp_path):
    root = small_store(tmp_path, reference__decisions=CRLF_DECISIONS, sessions__current="# Session Log: 2026-11-29\n")
    acts = [Action(kind="archive", targets=[D + key], reason="obsolete: move to archive/") for key in ("c", "b")]
    cs = run_changes(root, acts)
    assert [a.targets for a in cs.applied] == [[D + "c"], [D + "b"]] and cs.skipped == []
    execute(root, cs.ops)
    new = (root / "reference" / "decisions.md").read_bytes()
    assert new == "\ufeff# Decisions\r\n\r\n### A\r\n- **Date:** 2026-01-01\r\n- **Status:** active\r\n- **Importance:** 3\r\n".encode()
    archived = (root / "archive" / "reference-decisions.md").read_bytes().decode()
    assert archived == (
        "# Archive: reference/decisions.md\r\n\r\n"
        "Entries moved out of reference/decisions.md by memory consolidation. Nothing here is loaded into "
        "context; to restore an entry, move its block back.\r\n\r\n"
        "### B\r\n- **Date:** 2026-02-01\r\n- **Status:** superseded\r\n- **Importance:** 3\r\n"
        "```\r\n### not a heading inside a fence\r\n```\r\n"
        "- **Archived:** 2026-11-29 (obsolete)\r\n\r\n"
        "### C\r\n- **Date:** 2026-03-01\r\n- **Status:** dropped\r\n- **Importance:** 4\r\n"
        "- **Archived:** 2026-11-29 (obsolete)\r\n"
    )


def test_a_middle_entry_leaves_its_neighbours_and_their_separators_alone(tmp_path):
    text = (
        "# Projects\n\n## Active\n\n### One\n- **Status:** active\n- **Importance:** 3\n\n"
        "### Two\n- **Status:** completed\n- **Importance:** 3\n\n## Completed\n\n### Three\n- **Status:** completed\n"
    )
    root = small_store(tmp_path, reference__projects=text)
    cs = run_changes(root, [Action(kind="archive", targets=["reference/projects.md#two"], reason="done")])
    execute(root, cs.ops)
    assert (root / "reference" / "projects.md").read_text() == (
        "# Projects\n\n## Active\n\n### One\n- **Status:** active\n- **Importance:** 3\n\n"
        "## Completed\n\n### Three\n- **Status:** completed\n"
    )


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\x0c"])
def test_a_separator_inside_a_line_starts_no_entry_and_no_cut(tmp_path, separator):
    # U+2028 (from JSON or JS text), U+0085 (mis-decoded cp1252) and a form feed sit inside a Markdown
    # line: "### Deploy policy" after one is no heading, so no duplicate entry is seen and no line is cut.
    line = f"- **Decision:** keep the previous image, tag it{separator}### Deploy policy{separator}- **Decision:** Deploy on Tuesdays only"
    text = (
        "# Notes\n\n### Deploy policy\n- **Date:** 2026-01-01\n- **Decision:** Deploy on Tuesdays only\n- **Importance:** 3\n\n"
        f"### Rollback plan\n- **Date:** 2026-01-04\n{line}\n"
    )
    root = small_store(tmp_path, reference__notes=text)
    plan = plan_json(root)
    assert [m for a in plan["actions"] for m in a["targets"] if "notes" in m] == []
    corpus = zylos.load(root, S)
    assert sorted(m.key for m in corpus.memories if m.key.startswith("reference/notes.md#")) == [
        "reference/notes.md#deploy-policy", "reference/notes.md#rollback-plan"]
    # Archiving the second entry takes its whole line, separators and all.
    cs = run_changes(root, [Action(kind="archive", targets=["reference/notes.md#rollback-plan"], reason="obsolete")])
    execute(root, cs.ops)
    assert line in (root / "archive" / "reference-notes.md").read_text(encoding="utf-8")
    assert separator not in (root / "reference" / "notes.md").read_text(encoding="utf-8")


def test_appending_to_an_existing_archive_file(tmp_path):
    existing = "# Archive: reference/ideas.md\n\n### Old idea\n- **Archived:** 2026-01-01 (dropped)"
    root = small_store(
        tmp_path,
        reference__ideas="# Ideas\n\n### Dropped one\n- **Status:** dropped\n- **Importance:** 4\n",
    )
    (root / "archive").mkdir()
    (root / "archive" / "reference-ideas.md").write_text(existing)
    cs = run_changes(root, [Action(kind="archive", targets=["reference/ideas.md#dropped-one"], reason="dropped")])
    execute(root, cs.ops)
    assert (root / "archive" / "reference-ideas.md").read_text() == existing + (
        "\n\n### Dropped one\n- **Status:** dropped\n- **Importance:** 4\n- **Archived:** 2026-11-29 (dropped)\n"
    )
    assert (root / "reference" / "ideas.md").read_text() == "# Ideas\n"


def test_several_actions_on_one_file_make_one_write(store):
    corpus = zylos.load(store, S)
    from pipeline.plan import build_plan

    plan = build_plan(corpus, S)
    cs = zylos_write.changes(corpus, [a for a in plan.actions if not a.needs_user], S, "run-1", None, clock=nine_thirty)
    writes = [op.path for op in cs.ops if op.kind == "write"]
    assert len(writes) == len(set(writes))
    assert not [op for op in cs.ops if op.kind == "remove"]
    assert writes.count("reference/decisions.md") == 1 and writes.count("reference/preferences.md") == 1


def test_a_file_changed_since_it_was_read_is_left_alone(tmp_path):
    text = "# Decisions\n\n### Old\n- **Status:** superseded\n- **Importance:** 3\n"
    root = small_store(tmp_path, reference__decisions=text)
    corpus = zylos.load(root, S)
    (root / "reference" / "decisions.md").write_text("# Decisions\n\nA line added by hand.\n\n### Old\n- **Status:** superseded\n")
    cs = zylos_write.changes(corpus, [Action(kind="archive", targets=[D + "old"], reason="x")], S, "run-1", None, clock=nine_thirty)
    assert cs.ops == [] and cs.applied == []
    assert "changed on disk since it was read" in cs.skipped[0][1]


def test_unreadable_files_are_never_touched(tmp_path):
    root = small_store(
        tmp_path,
        reference__broken="# Ideas\n\n### Lost\n- **Status:** dropped\n".encode("utf-16"),
        reference__decisions="# Decisions\n\n### Old\n- **Status:** superseded\n- **Importance:** 3\n",
        sessions__current=b"# Session Log: 2026-11-29\n\xff\xfe binary\x00\n",
    )
    before = snapshot(root)
    cs = run_changes(
        root,
        [
            Action(kind="archive", targets=["reference/broken.md#lost"], reason="x"),
            Action(kind="archive", targets=[D + "old"], reason="superseded"),
        ],
    )
    assert cs.skipped[0][1] == "reference/broken.md#lost is not a reference entry of this store as read"
    assert [a.targets for a in cs.applied] == [[D + "old"]]
    assert "sessions/current.md is unreadable: this consolidation is not logged there (see the run report)" in cs.notes
    execute(root, cs.ops)
    after = snapshot(root)
    for key in ("reference/broken.md", "sessions/current.md"):
        assert after[key] == before[key]


# ---------------------------------------------------------------------------------------------
# Guards

# One decision recorded twice (the second time on another day, with another importance): the same
# entry but for its bookkeeping, so the merge is automatic.
TWINS = (
    "# Decisions\n\n"
    "### Keep memory local\n- **Date:** 2026-01-01\n- **Decision:** Never push the memory repository to a remote.\n"
    "- **Status:** active\n- **Importance:** {first}\n\n"
    "### Keep memory local\n- **Date:** 2026-05-01\n- **Decision:** Never push the memory repository to a remote.\n"
    "- **Status:** active\n- **Importance:** {second}\n"
)


def test_archive_never_takes_importance_one_or_two_even_if_the_plan_says_so(store):
    key = D + "memory-sync-every-30-minutes"
    cs = run_changes(store, [Action(kind="archive", targets=[key], reason="status superseded: move to archive/")])
    assert cs.ops == [] and cs.applied == []
    assert cs.skipped[0][1] == f"{key} has importance 2: importance 1-2 entries are never archived automatically"


def test_merge_swaps_roles_so_an_importance_one_entry_survives(tmp_path):
    root = small_store(tmp_path, reference__decisions=TWINS.format(first=3, second=1), sessions__current="# Session Log: 2026-11-29\n")
    plan = plan_json(root, "--model", "none")
    merge = [a for a in plan["actions"] if a["kind"] == "merge_duplicate"][0]
    # decided at plan time: the importance 1 entry survives in place of the oldest (importance 3)
    assert merge["survivor"] == D + "keep-memory-local-2" and merge["needs_user"] is False
    assert merge["survivor_instead_of"] == D + "keep-memory-local" and "kept" not in merge
    out = apply_json(root)
    assert [a["kind"] for a in out["applied"]] == ["merge_duplicate"]
    assert out["notes"] == [
        f"{D}keep-memory-local-2 (importance 1) kept as the survivor instead of {D}keep-memory-local: "
        "importance 1-2 entries are never retired by a merge"
    ]
    decisions = (root / "reference" / "decisions.md").read_text()
    assert decisions.count("### Keep memory local\n") == 1 and "2026-05-01" in decisions and "2026-01-01" not in decisions
    archived = (root / "archive" / "reference-decisions.md").read_text()
    assert '- **Archived:** 2026-11-29 (duplicate; merged into "Keep memory local" (reference/decisions.md, 2026-05-01))' in archived
    assert [a for a in plan_json(root, "--model", "none")["actions"] if not a["needs_user"]] == []


def test_merge_of_two_importance_two_entries_retires_neither(tmp_path):
    root = small_store(tmp_path, reference__decisions=TWINS.format(first=2, second=2))
    before = snapshot(root)
    out = apply_json(root)
    assert out["run_id"] is None
    assert "has importance 1-2: none is retired" in out["skipped"][0]["why"]
    assert snapshot(root) == before


def test_the_plan_says_which_importance_one_or_two_duplicates_are_kept(tmp_path):
    root = small_store(tmp_path, reference__decisions=TWINS.format(first=2, second=2))
    [merge] = [a for a in plan_json(root, "--model", "none")["actions"] if a["kind"] == "merge_duplicate"]
    assert merge["survivor"] == D + "keep-memory-local" and merge["kept"] == [D + "keep-memory-local-2"]
    assert "survivor_instead_of" not in merge


def test_a_merge_the_plan_did_not_decide_never_retires_an_importance_one_entry(tmp_path):
    root = small_store(tmp_path, reference__decisions=TWINS.format(first=3, second=1), sessions__current="# Session Log: 2026-11-29\n")
    by_hand = Action(kind="merge_duplicate", targets=[D + "keep-memory-local", D + "keep-memory-local-2"],
                     survivor=D + "keep-memory-local", reason="crafted")
    cs = run_changes(root, [by_hand])
    assert cs.ops == [] and cs.applied == []
    assert cs.skipped[0][1] == f"{D}keep-memory-local-2 has importance 1-2: a merge never retires it, and the plan did not keep it"


# ---------------------------------------------------------------------------------------------
# Conflicts

CONFLICT_DECISIONS = (
    "# Decisions\n\n"
    "### Daily local git commit\n- **Date:** 2026-02-01\n- **Decision:** Never push the memory repository to a remote.\n"
    "- **Status:** active\n- **Importance:** {importance}\n- **Type:** strategic\n"
)
CONFLICT_PREFERENCES = (
    "# Shared Preferences\n\n"
    "### Push the memory repository every night\n- **Date observed:** {date}\n- **Applies to:** memory maintenance\n"
    "- **Importance:** 3\n\n"
    "### Concise responses\n- **Date observed:** 2026-01-18\n- **Importance:** 3\n"
)
A = D + "daily-local-git-commit"
B = PREF + "push-the-memory-repository-every-night"


def conflict_store(tmp_path: Path, importance: int = 3, date: str = "2026-10-02") -> Path:
    return small_store(
        tmp_path,
        reference__decisions=CONFLICT_DECISIONS.format(importance=importance),
        reference__preferences=CONFLICT_PREFERENCES.format(date=date),
        sessions__current="# Session Log: 2026-11-29\n\n## 08:00 - Memory Sync\n- Nothing new",
    )


def conflict(*targets: str) -> Action:
    return Action(kind="conflict", targets=list(targets), reason="opposing advice", needs_user=True, source="stub:conflicts")


def test_conflict_resolved_newer_archives_the_older_entry(tmp_path):
    root = conflict_store(tmp_path)
    before = snapshot(root)
    cs = run_changes(root, [conflict(A, B)], resolve="newer")
    assert [a.kind for a in cs.applied] == ["conflict"]
    assert {op.kind for op in cs.ops} <= {"write", "append"}  # a resolution never deletes
    execute(root, cs.ops)
    assert (root / "reference" / "decisions.md").read_text() == "# Decisions\n"
    assert snapshot(root)["reference/preferences.md"] == before["reference/preferences.md"]
    archived = (root / "archive" / "reference-decisions.md").read_text()
    assert "### Daily local git commit\n" in archived and "Never push the memory repository to a remote." in archived
    assert archived.endswith(
        '- **Archived:** 2026-11-29 (conflicts with the newer "Push the memory repository every night" '
        "(reference/preferences.md, 2026-10-02); kept the newer)\n"
    )
    log = (root / "sessions" / "current.md").read_bytes()
    assert log.startswith(before["sessions/current.md"])  # append-only
    assert log[len(before["sessions/current.md"]):].decode().startswith(
        "\n\n## 09:30 - Memory consolidation\n- Resolved a conflict by keeping the newer "
    )


def test_conflict_resolved_keep_both_notes_both_entries_and_changes_nothing_else(tmp_path):
    root = conflict_store(tmp_path)
    before = snapshot(root)
    cs = run_changes(root, [conflict(A, B)], resolve="keep-both")
    execute(root, cs.ops)
    after = snapshot(root)
    note_a = '- **Note:** conflicts with "Push the memory repository every night" (kept both, 2026-11-29)\n'
    note_b = '- **Note:** conflicts with "Daily local git commit" (kept both, 2026-11-29)\n'
    assert after["reference/decisions.md"].decode() == before["reference/decisions.md"].decode() + note_a
    assert after["reference/preferences.md"].decode() == before["reference/preferences.md"].decode().replace(
        "- **Importance:** 3\n\n### Concise", "- **Importance:** 3\n" + note_b + "\n### Concise"
    )
    assert not (root / "archive").exists()
    # a second resolution of the same pair adds nothing
    again = run_changes(root, [conflict(A, B)], resolve="keep-both")
    assert again.ops == [] and again.skipped[0][1] == "both entries already note this conflict"


def test_conflict_guards(tmp_path):
    root = conflict_store(tmp_path, importance=2)
    assert "never archived automatically" in run_changes(root, [conflict(A, B)], resolve="newer").skipped[0][1]
    assert "only with --resolve" in run_changes(root, [conflict(A, B)], resolve=None).skipped[0][1]
    same_day = conflict_store(tmp_path / "same", date="2026-02-01")
    cs = run_changes(same_day, [conflict(A, B)], resolve="newer")
    assert cs.ops == [] and "cannot tell which is newer" in cs.skipped[0][1]


# ---------------------------------------------------------------------------------------------
# Sessions and the log


def test_a_month_old_current_log_rotates_straight_into_the_archive(tmp_path):
    old = "# Session Log: 2026-09-01\n\n## 10:00 - Memory Sync\n- Processed conversations #1-#9\n"
    root = small_store(tmp_path, sessions__current=old)
    out = apply_json(root)
    assert [a["kind"] for a in out["applied"]] == ["rotate_session"]
    assert (root / "archive" / "sessions" / "2026-09-01.md").read_text() == old
    assert not (root / "sessions" / "2026-09-01.md").exists()
    current = (root / "sessions" / "current.md").read_text()
    assert current.startswith("# Session Log: 2026-11-29\n\n## 09:30 - Memory consolidation\n")
    assert "- Rotated the 2026-09-01 session log to archive/sessions/2026-09-01.md (older than 30 days: straight to archive/)\n" in current
    assert [a for a in plan_json(root, "--model", "none")["actions"] if not a["needs_user"]] == []


def test_without_a_session_log_a_fresh_one_is_started(tmp_path):
    root = small_store(tmp_path, reference__decisions="# Decisions\n\n### Old\n- **Status:** superseded\n- **Importance:** 3\n")
    cs = run_changes(root, [Action(kind="archive", targets=[D + "old"], reason="superseded")])
    execute(root, cs.ops)
    log = (root / "sessions" / "current.md").read_text().splitlines()
    assert log[:4] == [
        "# Session Log: 2026-11-29",
        "",
        "## 09:30 - Memory consolidation",
        '- Archived "Old" (status superseded) from reference/decisions.md to archive/reference-decisions.md',
    ]
    assert log[4].startswith("- Run run-1: report in .memconsolidate/reports/run-1.md")
    assert (root / ".memconsolidate" / "reports" / "run-1.md").is_file()


def test_the_default_clock_is_utc_wall_time_unless_pinned(monkeypatch):
    monkeypatch.delenv(zylos_write.CLOCK_ENV, raising=False)
    now = zylos_write.default_clock()
    assert now.utcoffset() == dt.timedelta(0)
    assert abs(now - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(minutes=1)
    monkeypatch.setenv(zylos_write.CLOCK_ENV, "2026-11-29T23:05:00+00:00")
    assert zylos_write.default_clock().strftime("%H:%M") == "23:05"
    monkeypatch.setenv(zylos_write.CLOCK_ENV, "teatime")
    with pytest.raises(ConfigError):
        zylos_write.default_clock()


def test_actions_that_do_not_apply_to_zylos_are_skipped(store):
    cs = run_changes(store, [Action(kind="promote", targets=["state.md"], reason="x"),
                             Action(kind="archive", targets=["state.md"], reason="x")])
    assert cs.ops == []
    assert [why for _, why in cs.skipped] == [
        "promote does not apply to zylos stores",
        "state.md is not a reference entry of this store as read",
    ]
