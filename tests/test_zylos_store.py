"""The zylos reader: tiers, reference entries (fields, repeated titles, sections, spans), sessions."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

from helpers import NOW, REPO, real_zylos_store, run_cli
from hypothesis import given, strategies as st

from pipeline.config import Settings
from pipeline.layouts.zylos import reader as zylos
from pipeline.layouts.zylos.reader import entry_memories, parse_entries, parse_importance, parse_status


DECISIONS = """# Decisions Log

Key decisions made during operation.

### ESM-only
- **Date:** 2026-01-15
- **Decided by:** Howard
- **Decision:** All JavaScript must use ESM.
- **Context:** Consistency across the codebase,
  and Node.js 20+ supports ESM natively.
- **Status:** superseded (by "Bun runtime")
- **Importance:** 2
- **Type:** procedural

### ESM-only
- **Date:** 2026-03-01
- **Decision:** All JavaScript must use ESM, again.
- **Status:** Active
- **Importance:** 4 (minor)

```markdown
### not an entry, inside a fence
```

### ESM-only
- **Date:** not a date
- **Importance:** high
"""

PROJECTS = """# Projects

## Active

### Memory v5
- **Status:** active
- **Started:** 2026-02-01
- **Updated:** 2026-02-08
- **Description:** Tiered memory.
- **Importance:** 1

## Completed

### Telegram Bot
- **Status:** completed
- **Started:** 2026-01-10
- **Description:** Bot with webhook.
- **Importance:** 2

# Appendix

### Loose note
A paragraph that is not a field.
- **Importance**: 3
"""


def settings() -> Settings:
    return Settings(now=dt.date.fromisoformat(NOW))


def test_entry_fields_dates_importance_status_and_span():
    ms = entry_memories("reference/decisions.md", "decision", DECISIONS, 1.0)
    assert [m.key for m in ms] == [
        "reference/decisions.md#esm-only",
        "reference/decisions.md#esm-only-2",
        "reference/decisions.md#esm-only-3",
    ]
    first, second, third = ms
    assert first.title == "ESM-only"
    assert first.body == "All JavaScript must use ESM."
    assert first.type == "decision"
    assert first.created == dt.date(2026, 1, 15)
    assert first.modified is None
    assert first.source == "Howard"
    assert first.group == "zylos"
    assert first.extra["importance"] == 2
    assert first.extra["status"] == "superseded"
    assert first.extra["status_text"] == 'superseded (by "Bun runtime")'
    assert first.extra["entry_type"] == "procedural"
    assert first.extra["fields"]["context"] == (
        "Consistency across the codebase, and Node.js 20+ supports ESM natively."
    )
    assert (first.extra["line_start"], first.extra["line_end"]) == (5, 13)
    assert first.extra["text"].splitlines()[0] == "- **Date:** 2026-01-15"
    assert first.extra["text"].splitlines()[-1] == "- **Type:** procedural"
    assert first.extra["section"] is None and first.extra["file"] == "reference/decisions.md"
    # the fenced pseudo-heading belongs to the second entry and does not start a new one
    assert second.extra["status"] == "active"
    assert second.extra["importance"] == 4
    assert (second.extra["line_start"], second.extra["line_end"]) == (15, 23)
    assert third.created is None
    assert third.extra["importance"] is None and third.extra["status"] is None
    assert third.body == "ESM-only"  # no statement field: the title is the statement


def test_entry_sections_and_level_one_heading_ends_a_section():
    ms = entry_memories("reference/projects.md", "project", PROJECTS, None)
    got = [(m.key, m.extra["section"], m.extra["status"], m.extra["importance"]) for m in ms]
    assert got == [
        ("reference/projects.md#memory-v5", "Active", "active", 1),
        ("reference/projects.md#telegram-bot", "Completed", "completed", 2),
        ("reference/projects.md#loose-note", None, None, 3),
    ]
    assert ms[0].created == dt.date(2026, 2, 1) and ms[0].modified == dt.date(2026, 2, 8)
    assert ms[0].body == "Tiered memory."
    assert ms[2].body == "Loose note"


def test_parse_entries_ignores_text_before_the_first_entry():
    assert parse_entries("# Ideas\n\n- **Status:** raw\n") == []


def test_parse_importance_and_status_shapes():
    assert parse_importance("2") == 2
    assert parse_importance(" 1 (critical)") == 1
    assert parse_importance("high") is None
    assert parse_importance(None) is None
    assert parse_status("Superseded by X") == "superseded"
    assert parse_status("ready-to-commit") == "ready-to-commit"
    assert parse_status("**dropped**") == "dropped"
    assert parse_status("") is None


def _store(tmp: Path) -> Path:
    root = tmp / "memory"
    real_zylos_store(root)
    return root


def test_real_store_loads_every_tier_and_entry(tmp_path):
    root = _store(tmp_path)
    corpus = zylos.load(root, settings())
    assert corpus.findings == []
    tiers = {m.key: (m.type, m.extra["tier"]) for m in corpus.memories if not m.extra.get("entry")}
    assert tiers == {
        "identity.md": ("identity", "core"),
        "state.md": ("state", "core"),
        "references.md": ("references", "core"),
        "users/howard/profile.md": ("profile", "profile"),
        "reference/decisions.md": ("decisions", "reference"),
        "reference/projects.md": ("projects", "reference"),
        "reference/preferences.md": ("preferences", "reference"),
        "reference/ideas.md": ("ideas", "reference"),
        "sessions/current.md": ("session", "session"),
    }
    for m in corpus.memories:
        if not m.extra.get("entry"):
            assert m.extra["compare"] is False
            assert m.extra["size"] == (root / m.key).stat().st_size
            assert m.mtime == (root / m.key).stat().st_mtime
    entries = [
        (m.key, m.type, m.extra["importance"], m.extra["status"], m.extra["section"])
        for m in corpus.memories
        if m.extra.get("entry")
    ]
    assert entries == [
        ("reference/decisions.md#daily-local-git-commit-for-memory-persistence", "decision", 2, "active", None),
        ("reference/decisions.md#esm-only-for-all-zylos-core-code", "decision", 2, "active", None),
        ("reference/ideas.md#browser-based-memory-dashboard", "idea", 5, "raw", None),
        ("reference/ideas.md#vector-search-for-memory-retrieval", "idea", 3, "exploring", None),
        # preferences have no Status field in the format
        ("reference/preferences.md#concise-responses-preferred", "preference", 3, None, None),
        ("reference/preferences.md#no-emojis-in-code-output", "preference", 3, None, None),
        ("reference/projects.md#memory-architecture-v5", "project", 1, "active", "Active"),
        ("reference/projects.md#telegram-bot-setup", "project", 2, "completed", "Completed"),
    ]
    by_key = corpus.by_key()
    esm = by_key["reference/decisions.md#esm-only-for-all-zylos-core-code"]
    assert esm.body == "All JavaScript in zylos-core must use ESM (import/export). No CommonJS."
    assert esm.created == dt.date(2026, 1, 15)
    assert by_key["reference/projects.md#telegram-bot-setup"].modified == dt.date(2026, 1, 25)
    assert by_key["reference/preferences.md#no-emojis-in-code-output"].created == dt.date(2026, 1, 15)
    assert by_key["sessions/current.md"].extra["header_date"] == "2026-02-08"
    assert by_key["state.md"].modified == dt.date(2026, 2, 8)
    assert by_key["reference/decisions.md"].extra["entries"] == [
        "reference/decisions.md#esm-only-for-all-zylos-core-code",
        "reference/decisions.md#daily-local-git-commit-for-memory-persistence",
    ]
    assert corpus.extra["archive"] == {"present": False, "files": []}


def test_real_store_plan_runs_clean(tmp_path):
    root = _store(tmp_path)
    res = run_cli("plan", str(root), "--json", "--now", NOW, "--model", "none")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    plan = json.loads(res.stdout)
    assert plan["layout"] == "zylos"
    assert plan["memories"] == 17
    assert not [f for f in plan["findings"] if f["kind"] == "parse_error"]
    assert [a["kind"] for a in plan["actions"]] == ["rotate_session"]
    text = run_cli("plan", str(root), "--now", NOW, "--model", "none")
    assert text.returncode == 0 and "Traceback" not in text.stderr


def test_sessions_dates_archive_and_unknown_files(tmp_path):
    root = _store(tmp_path)
    (root / "sessions" / "2026-10-01.md").write_text("# Session Log: 2026-10-01\n")
    (root / "sessions" / "2026-10-01-1.md").write_text("# Session Log: 2026-10-01\n")
    (root / "sessions" / "notes.md").write_text("scratch\n")
    (root / "archive" / "old").mkdir(parents=True)
    (root / "archive" / "old" / "2026-01-01.md").write_text("# Session Log: 2026-01-01\n")
    (root / "archive" / "decisions-2026.md").write_text("### Old\n- **Status:** archived\n")
    (root / "README.md").write_text("not a tier\n")
    corpus = zylos.load(root, settings())
    by_key = corpus.by_key()
    assert by_key["sessions/2026-10-01.md"].extra["session_date"] == "2026-10-01"
    assert by_key["sessions/2026-10-01-1.md"].extra["session_date"] == "2026-10-01"
    assert by_key["sessions/2026-10-01.md"].created == dt.date(2026, 10, 1)
    assert by_key["sessions/notes.md"].extra["session_date"] is None
    assert corpus.extra["archive"] == {
        "present": True,
        "files": ["archive/decisions-2026.md", "archive/old/2026-01-01.md"],
    }
    assert not any(k.startswith("archive/") or k == "README.md" for k in by_key)
    assert corpus.extra["session_files"] == [
        "sessions/2026-10-01-1.md",
        "sessions/2026-10-01.md",
        "sessions/current.md",
        "sessions/notes.md",
    ]


def test_other_reference_files_keep_their_stem_as_kind(tmp_path):
    root = _store(tmp_path)
    (root / "reference" / "lessons.md").write_text(
        "# Lessons\n\n### Drain queues first\n- **Date:** 2026-04-10\n- **Status:** archived\n- **Importance:** 4\n"
        "- **Description:** Drain the C4 queue before a restart.\n"
    )
    corpus = zylos.load(root, settings())
    by_key = corpus.by_key()
    assert by_key["reference/lessons.md"].type == "lessons"
    entry = by_key["reference/lessons.md#drain-queues-first"]
    assert (entry.type, entry.body, entry.extra["status"]) == ("lessons", "Drain the C4 queue before a restart.", "archived")


def test_unreadable_files_are_parse_errors_and_the_rest_loads(tmp_path):
    root = _store(tmp_path)
    (root / "reference" / "legacy.md").write_bytes("### Caf\u00e9 rules\n".encode("latin-1"))
    (root / "users" / "bin").mkdir()
    (root / "users" / "bin" / "profile.md").write_bytes(b"\x00\x01binary")
    outside = tmp_path / "outside.md"
    outside.write_text("### Secret\n- **Decision:** leak\n")
    os.symlink(outside, root / "reference" / "linked.md")
    corpus = zylos.load(root, settings())
    assert [(f.kind, f.targets, f.reason) for f in corpus.findings] == [
        ("parse_error", ["reference/legacy.md"], "not UTF-8 (byte 7)"),
        ("parse_error", ["reference/linked.md"], "symlink points outside the store"),
        ("parse_error", ["users/bin/profile.md"], "binary file (NUL byte)"),
    ]
    keys = {m.key for m in corpus.memories}
    assert "reference/decisions.md#esm-only-for-all-zylos-core-code" in keys
    assert not any(k.startswith(("reference/legacy.md", "reference/linked.md", "users/bin")) for k in keys)


def test_detect_needs_identity_and_state(tmp_path):
    (tmp_path / "identity.md").write_text("# Identity\n")
    assert not zylos.detect(tmp_path)
    (tmp_path / "state.md").write_text("# Active State\n")
    assert zylos.detect(tmp_path)
    corpus = zylos.load(tmp_path, settings())
    assert corpus.extra["missing"] == ["references.md"]
    assert [m.key for m in corpus.memories] == ["identity.md", "state.md"]


def test_heading_titles_keep_inner_hashes_and_drop_closing_runs():
    text = "### Use C#\n- **Importance:** 3\n\n### Issue #12 ##\n- **Importance:** 4\n"
    assert [(m.title, m.key) for m in entry_memories("reference/ideas.md", "idea", text, None)] == [
        ("Use C#", "reference/ideas.md#use-c"),
        ("Issue #12", "reference/ideas.md#issue-12"),
    ]


def test_repeated_title_suffix_never_collides_with_another_title():
    text = "### Deploy\n- **Importance:** 3\n\n### Deploy 2\n- **Importance:** 3\n\n### Deploy\n- **Importance:** 3\n"
    keys = [m.key for m in entry_memories("reference/ideas.md", "idea", text, None)]
    assert keys == ["reference/ideas.md#deploy", "reference/ideas.md#deploy-2", "reference/ideas.md#deploy-3"]


_LINES = st.sampled_from(
    ["# H", "## Active", "### Title", "### Title", "#### deep", "- **Status:** completed", "- **Importance:** 2",
     "  continued", "plain", "", "```", "- **Date:** 2026-01-01", "###", "- item"]
)


@given(st.lists(_LINES, max_size=40))
def test_entry_spans_are_ordered_and_inside_the_file(lines):
    text = "\n".join(lines)
    entries = parse_entries(text)
    total = len(text.splitlines())
    previous_end = 0
    for e in entries:
        assert previous_end < e.line_start <= e.line_end <= total
        assert text.splitlines()[e.line_start - 1].startswith("### ")
        previous_end = e.line_end
    ms = entry_memories("reference/x.md", "x", text, None)
    assert len({m.key for m in ms}) == len(ms) == len(entries)


def test_markdown_files_beside_the_core_tiers_are_said_to_be_unread(tmp_path):
    """A reference file kept at the top (as the seed's examples folder has them) is never loaded by
    the agent nor read here: the plan says so instead of "all current" over a third of the store."""
    from helpers import REAL_STORES, plan_json

    examples = REAL_STORES / "zylos" / "skills" / "zylos-memory" / "examples"
    [finding] = [f for f in plan_json(examples, "--model", "none")["findings"] if f["kind"] == "not_read"]
    assert finding["targets"] == ["decisions.md", "ideas.md", "preferences.md", "projects.md", "session-log.md", "user-profile.md"]
    assert "decisions.md (its place: reference/decisions.md)" in finding["reason"]
    assert "user-profile.md (its place: users/<id>/profile.md)" in finding["reason"]
    # a store laid out as the seed says has no such finding, and a stray note is named as it is
    store = real_zylos_store(tmp_path / "store")
    assert [f for f in plan_json(store, "--model", "none")["findings"] if f["kind"] == "not_read"] == []
    (store / "notes.md").write_text("scratch\n")
    [finding] = [f for f in plan_json(store, "--model", "none")["findings"] if f["kind"] == "not_read"]
    assert finding["targets"] == ["notes.md"] and finding["reason"].endswith("not read as memory: notes.md")
