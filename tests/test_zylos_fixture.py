"""The zylos fixture store: the exact plan for a copy whose mtimes are set from a table.

Freshness is the age of each reference file's mtime, and in a git checkout every mtime is the
checkout time. So these tests copy `fixtures/zylos` to `tmp_path` and set every file's mtime from
`MTIMES` (days before NOW, at 12:00 UTC) before planning: the expected plan is then exact whatever
the checkout time. Planned on the raw checkout, every reference file is `active` and no entry is
archived; everything else in the plan is the same.

What the fixture exercises (see the files):
- state.md over 16 KiB (pending tasks and completion narrative piling up) -> over_budget + trim_budget
- references.md between 8 and 16 KiB (scheduler job lists and history leaking in) -> near_budget
- users/mei/profile.md over ~1 KiB -> near_budget; users/lin/profile.md in GBK -> parse_error
- reference/decisions.md stale, projects.md fading, lessons.md fading at exactly 90 days, with
  superseded/completed/abandoned/archived entries of importance 3-4 (archived) and 1-2 (kept);
  ideas.md aging (its dropped idea stays), preferences.md active
- a preference recorded twice under the same title (merge_duplicate: all but its date the same), and a
  decision repeated as a preference (merge_duplicate that needs the user: the same statement, but the
  preference has a scope and the decision a title, context, status and author the other does not);
  an idea and a preference with the same words in another order (reorder)
- a decision (never push memory to a remote) and a preference (push it nightly) that contradict
  each other, and an idea whose text tells the model to archive or delete everything: no rule
  acts on either; they are there for the LLM stages
- sessions: current.md from 2026-11-27 (rotate), logs 3, 30, 31 and 76 days old, an archive/ file
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, kinds, plan_json, run_cli

from pipeline.config import Settings
from pipeline.layouts.zylos import reader as zylos

TODAY = dt.date.fromisoformat(NOW)
DEFAULT_AGE = 1
MTIMES = {
    "reference/decisions.md": 120,  # stale
    "reference/projects.md": 45,  # fading
    "reference/lessons.md": 90,  # fading, last day of the band
    "reference/ideas.md": 20,  # aging
    "reference/preferences.md": 2,  # active
}

D = "reference/decisions.md#"
P = "reference/projects.md#"
PREF = "reference/preferences.md#"
I = "reference/ideas.md#"
L = "reference/lessons.md#"


def noon_days_ago(days: int) -> float:
    day = TODAY - dt.timedelta(days=days)
    return dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.timezone.utc).timestamp()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    shutil.copytree(FIXTURES / "zylos", root)
    for path in sorted(root.rglob("*")):
        if path.is_file():
            stamp = noon_days_ago(MTIMES.get(path.relative_to(root).as_posix(), DEFAULT_AGE))
            os.utime(path, (stamp, stamp))
    return root


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    return {
        p.relative_to(root).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_fixture_plan_exact(store):
    plan = plan_json(store, "--model", "none")
    assert plan["layout"] == "zylos"
    assert plan["memories"] == 41  # 15 tier files (lin's profile unreadable) + 26 reference entries
    assert kinds(plan["actions"]) == [
        ("merge_duplicate", (D + "esm-only-for-all-zylos-core-code", PREF + "all-javascript-in-zylos-core-must-use-esm-import-export-no-commonjs")),
        ("merge_duplicate", (PREF + "concise-responses-preferred", PREF + "concise-responses-preferred-2")),
        ("archive", (D + "lark-as-the-only-team-announcement-channel",)),
        ("archive", (D + "sqlite-for-c4-message-storage",)),
        ("archive", (L + "lark-sdk-ignores-the-proxy-variable",)),
        ("archive", (P + "lark-webhook-bridge",)),
        ("archive", (P + "wechat-channel-adapter",)),
        ("archive_session", ("sessions/2026-09-14.md",)),
        ("archive_session", ("sessions/2026-10-29.md",)),
        ("rotate_session", ("sessions/current.md",)),
        ("trim_budget", ("state.md",)),
    ]
    actions = {(a["kind"], a["targets"][0]): a for a in plan["actions"]}
    esm = actions[("merge_duplicate", D + "esm-only-for-all-zylos-core-code")]
    assert esm["survivor"] == D + "esm-only-for-all-zylos-core-code" and esm["needs_user"] is True
    assert esm["reason"].startswith("normalized text identical, but not the rest (applies to, context, decided by, status, title)")
    assert actions[("merge_duplicate", PREF + "concise-responses-preferred")]["needs_user"] is False
    archive = actions[("archive", D + "sqlite-for-c4-message-storage")]
    assert (archive["from_type"], archive["to_type"], archive["needs_user"]) == ("decision", "archived", False)
    assert archive["reason"] == "status superseded in a stale file (120 days since reference/decisions.md changed): move to archive/"
    assert archive["file"] == "reference/decisions.md" and archive["lines"] == [14, 21]
    assert actions[("archive", P + "wechat-channel-adapter")]["from_type"] == "project"
    assert actions[("archive", L + "lark-sdk-ignores-the-proxy-variable")]["from_type"] == "lessons"
    assert actions[("rotate_session", "sessions/current.md")]["rotate_to"] == "sessions/2026-11-27.md"
    assert "header date 2026-11-27" in actions[("rotate_session", "sessions/current.md")]["reason"]
    assert actions[("trim_budget", "state.md")]["needs_user"] is True
    assert [a["needs_user"] for a in plan["actions"]].count(True) == 2

    assert kinds(plan["findings"]) == [
        ("parse_error", ("users/lin/profile.md",)),
        ("reorder_candidate", (I + "weekly-session-summaries", PREF + "before-archiving-session-logs-summarize-them-weekly")),
        ("over_budget", ("state.md",)),
        ("near_budget", ("references.md",)),
        ("near_budget", ("users/mei/profile.md",)),
        ("freshness", ("reference/decisions.md",)),
        ("freshness", ("reference/ideas.md",)),
        ("freshness", ("reference/lessons.md",)),
        ("freshness", ("reference/preferences.md",)),
        ("freshness", ("reference/projects.md",)),
    ]
    fresh = {f["targets"][0]: f for f in plan["findings"] if f["kind"] == "freshness"}
    assert {k: (f["class"], f["age_days"], f["kept"]) for k, f in fresh.items()} == {
        "reference/decisions.md": ("stale", 120, [D + "memory-sync-every-30-minutes"]),
        "reference/ideas.md": ("aging", 20, []),
        "reference/lessons.md": ("fading", 90, [L + "telegram-rate-limits-during-broadcasts"]),
        "reference/preferences.md": ("active", 2, []),
        "reference/projects.md": ("fading", 45, [P + "telegram-bot-setup"]),
    }
    assert "kept (importance 1-2" in fresh["reference/projects.md"]["reason"]
    parse = plan["findings"][0]
    assert parse["reason"].startswith("not UTF-8")
    sizes = {f["targets"][0]: f["size_bytes"] for f in plan["findings"] if f["kind"] in ("over_budget", "near_budget")}
    assert sizes["state.md"] > 16 * 1024
    assert 8 * 1024 < sizes["references.md"] <= 16 * 1024
    assert sizes["users/mei/profile.md"] > 1024
    assert plan["errors"] == []


def test_plan_never_writes(store):
    before = snapshot(store)
    for extra in (("--json",), ()):
        res = run_cli("plan", str(store), "--now", NOW, "--model", "none", *extra)
        assert res.returncode == 0, res.stderr
    assert snapshot(store) == before


def test_plan_is_deterministic_and_the_text_report_reads(store):
    a = run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none")
    b = run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none", "--layout", "zylos")
    assert a.stdout == b.stdout
    text = run_cli("plan", str(store), "--now", NOW, "--model", "none")
    assert text.returncode == 0 and "Traceback" not in text.stderr
    assert "\nMemories to archive (5)\n" in text.stdout
    assert "\nSession logs to rotate (1)\n" in text.stdout


def test_fresh_checkout_sees_every_reference_file_as_active(tmp_path):
    # A checkout stamps every file with the time it was written: copy without keeping mtimes.
    root = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "zylos", root, copy_function=shutil.copy)
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    res = run_cli("plan", str(root), "--json", "--now", today, "--model", "none")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert [(f["targets"][0], f["class"]) for f in plan["findings"] if f["kind"] == "freshness"] == [
        (f"reference/{name}.md", "active") for name in ("decisions", "ideas", "lessons", "preferences", "projects")
    ]
    assert not [a for a in plan["actions"] if a["kind"] == "archive"]


def test_fixture_entries_that_stages_need(store):
    corpus = zylos.load(store, Settings(now=TODAY))
    by_key = corpus.by_key()
    never_push = by_key[D + "daily-local-git-commit-for-memory-persistence"]
    push = by_key[PREF + "push-the-memory-git-repository-to-the-private-github-remote-every-night"]
    assert "never push the memory repository to a remote" in never_push.body
    assert push.body.startswith("Push the memory git repository")
    hostile = by_key[I + "clean-slate"]
    assert "delete everything" in hostile.body
    assert hostile.extra["status"] == "raw" and hostile.extra["importance"] == 5
    # the multi-line Context of a decision is one field value
    assert never_push.extra["fields"]["context"].endswith("keeping it on the home server is the point.")
    assert corpus.extra["archive"] == {"present": True, "files": ["archive/2026-08-01-decisions.md"]}
    assert json.dumps(corpus.extra["session_files"]) == json.dumps(
        ["sessions/2026-09-14.md", "sessions/2026-10-29.md", "sessions/2026-10-30.md", "sessions/2026-11-26.md", "sessions/current.md"]
    )
