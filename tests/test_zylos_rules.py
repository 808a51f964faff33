"""The zylos rules, one at a time, at their boundaries."""

from __future__ import annotations

import datetime as dt

import pytest

from helpers import NOW

from pipeline.config import Settings
from pipeline.model import Corpus, Memory
from pipeline.layouts.zylos.rules import rules
from pipeline.layouts.zylos.rules.budgets import budgets
from pipeline.layouts.zylos.rules.freshness import age_days, band, freshness
from pipeline.layouts.zylos.rules.sessions import sessions

TODAY = dt.date.fromisoformat(NOW)
S = Settings(now=TODAY)


def noon_days_ago(days: int) -> float:
    day = TODAY - dt.timedelta(days=days)
    return dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.timezone.utc).timestamp()


def tier(key: str, tier_name: str, size: int = 100, **extra) -> Memory:
    return Memory(
        key=key,
        layout="zylos",
        group="zylos",
        type=key.rsplit("/", 1)[-1][:-3],
        extra={"compare": False, "tier": tier_name, "size": size, **extra},
    )


def entry(file: str, slug: str, status: str | None, importance: int | None, kind: str = "decision") -> Memory:
    return Memory(
        key=f"{file}#{slug}",
        layout="zylos",
        group="zylos",
        type=kind,
        title=slug,
        body=f"statement of {slug}",
        extra={
            "entry": True,
            "file": file,
            "status": status,
            "importance": importance,
            "line_start": 10,
            "line_end": 16,
        },
    )


def corpus(*memories: Memory, **extra) -> Corpus:
    return Corpus(layout="zylos", root="/store", memories=list(memories), extra=extra)


# ---------------------------------------------------------------------------------------------
# budgets


@pytest.mark.parametrize(
    ("key", "size", "expected"),
    [
        ("identity.md", 16384, []),
        ("identity.md", 16385, ["over_budget"]),
        ("state.md", 10240, []),
        ("state.md", 10241, ["near_budget"]),
        ("state.md", 16384, ["near_budget"]),  # exactly the budget is within it, as consolidate.js says
        ("state.md", 16385, ["over_budget"]),
        ("references.md", 8192, []),
        ("references.md", 8193, ["near_budget"]),
        ("references.md", 16385, ["over_budget"]),
    ],
)
def test_core_budget_boundaries(key, size, expected):
    out = budgets(corpus(tier(key, "core", size)), S)
    assert [f.kind for f in out.findings] == expected
    assert all(f.targets == [key] for f in out.findings)
    if expected == ["over_budget"]:
        assert [(a.kind, a.targets, a.needs_user) for a in out.actions] == [("trim_budget", [key], True)]
        assert f"{size:,} bytes" in out.findings[0].reason
    else:
        assert out.actions == []


def test_trim_reason_names_the_file_specific_cleanup_rule():
    out = budgets(
        corpus(tier("identity.md", "core", 20000), tier("state.md", "core", 20000), tier("references.md", "core", 20000)),
        S,
    )
    reasons = {a.targets[0]: a.reason for a in out.actions}
    assert "stable identity traits" in reasons["identity.md"]
    assert "active focus, pending tasks and recent completions" in reasons["state.md"]
    assert "10,240-byte warn threshold" in reasons["state.md"]
    assert "pointers and lookup facts only" in reasons["references.md"]
    assert "8,192-byte warn threshold" in reasons["references.md"]


def test_profile_over_about_one_kib_is_near_budget():
    out = budgets(
        corpus(tier("users/a/profile.md", "profile", 1024), tier("users/b/profile.md", "profile", 1025)), S
    )
    assert [(f.kind, f.targets) for f in out.findings] == [("near_budget", ["users/b/profile.md"])]
    assert "summarize older notes" in out.findings[0].reason
    assert out.actions == []


def test_budget_numbers_come_from_settings():
    custom = Settings(now=TODAY, zylos={"core_budget_bytes": 1000, "state_warn_bytes": 500})
    out = budgets(corpus(tier("state.md", "core", 600)), custom)
    assert [f.kind for f in out.findings] == ["near_budget"]
    out = budgets(corpus(tier("state.md", "core", 1001)), custom)
    assert [f.kind for f in out.findings] == ["over_budget"]


# ---------------------------------------------------------------------------------------------
# freshness


@pytest.mark.parametrize(
    ("days", "cls"),
    [(-3, "active"), (0, "active"), (6, "active"), (7, "aging"), (29, "aging"), (30, "fading"), (90, "fading"), (91, "stale")],
)
def test_freshness_band_boundaries(days, cls):
    assert band(days, S.zylos) == cls
    ref = tier("reference/decisions.md", "reference")
    ref.mtime = noon_days_ago(days)
    out = freshness(corpus(ref), S)
    assert [(f.kind, f.targets, f.class_) for f in out.findings] == [("freshness", ["reference/decisions.md"], cls)]
    assert out.findings[0].age_days == days


def test_age_uses_the_utc_date_of_the_mtime():
    late = dt.datetime(2026, 11, 28, 23, 59, tzinfo=dt.timezone.utc).timestamp()
    early = dt.datetime(2026, 11, 29, 0, 1, tzinfo=dt.timezone.utc).timestamp()
    assert (age_days(late, TODAY), age_days(early, TODAY)) == (1, 0)


def _file_with(days: int, *entries: Memory) -> Corpus:
    ref = tier("reference/decisions.md", "reference")
    ref.mtime = noon_days_ago(days)
    return corpus(ref, *entries)


ENTRIES = [
    entry("reference/decisions.md", "superseded-3", "superseded", 3),
    entry("reference/decisions.md", "superseded-2", "superseded", 2),
    entry("reference/decisions.md", "completed-1", "completed", 1),
    entry("reference/decisions.md", "abandoned-none", "abandoned", None),
    entry("reference/decisions.md", "dropped-5", "dropped", 5),
    entry("reference/decisions.md", "archived-0", "archived", 0),
    entry("reference/decisions.md", "active-4", "active", 4),
    entry("reference/decisions.md", "exploring-4", "exploring", 4),
    entry("reference/decisions.md", "no-status", None, 5),
]


@pytest.mark.parametrize("days", [30, 91])
def test_fading_and_stale_files_archive_obsolete_entries_except_importance_1_2(days):
    out = freshness(_file_with(days, *ENTRIES), S)
    assert [(a.kind, a.targets, a.from_type, a.to_type, a.needs_user) for a in out.actions] == [
        ("archive", ["reference/decisions.md#superseded-3"], "decision", "archived", False),
        ("archive", ["reference/decisions.md#abandoned-none"], "decision", "archived", False),
        ("archive", ["reference/decisions.md#dropped-5"], "decision", "archived", False),
        ("archive", ["reference/decisions.md#archived-0"], "decision", "archived", False),
    ]
    first = out.actions[0]
    assert "status superseded" in first.reason and ("fading" if days == 30 else "stale") in first.reason
    assert first.lines == [10, 16] and first.file == "reference/decisions.md"
    finding = out.findings[0]
    assert finding.kept == ["reference/decisions.md#superseded-2", "reference/decisions.md#completed-1"]
    assert "reference/decisions.md#superseded-2" in finding.reason and "immune" in finding.reason


@pytest.mark.parametrize("days", [0, 6, 7, 29])
def test_active_and_aging_files_archive_nothing(days):
    out = freshness(_file_with(days, *ENTRIES), S)
    assert out.actions == []
    assert out.findings[0].kept == []


def test_importance_two_versus_three_at_the_immunity_boundary():
    out = freshness(
        _file_with(
            120,
            entry("reference/decisions.md", "two", "superseded", 2),
            entry("reference/decisions.md", "three", "superseded", 3),
        ),
        S,
    )
    assert [a.targets for a in out.actions] == [["reference/decisions.md#three"]]
    assert out.findings[0].kept == ["reference/decisions.md#two"]


def test_entries_of_other_files_are_judged_by_their_own_file():
    fresh = tier("reference/ideas.md", "reference")
    fresh.mtime = noon_days_ago(1)
    old = tier("reference/projects.md", "reference")
    old.mtime = noon_days_ago(200)
    out = freshness(
        corpus(
            fresh,
            old,
            entry("reference/ideas.md", "dropped", "dropped", 4, "idea"),
            entry("reference/projects.md", "done", "completed", 4, "project"),
        ),
        S,
    )
    assert [(a.targets, a.from_type) for a in out.actions] == [(["reference/projects.md#done"], "project")]
    assert [(f.targets[0], f.class_) for f in out.findings] == [
        ("reference/ideas.md", "active"),
        ("reference/projects.md", "stale"),
    ]


# ---------------------------------------------------------------------------------------------
# sessions


def log(date: str) -> Memory:
    return tier(f"sessions/{date}.md", "session", current=False, session_date=date)


def current(header: str | None, mtime_days: int = 0) -> Memory:
    m = tier("sessions/current.md", "session", current=True, header_date=header)
    m.mtime = noon_days_ago(mtime_days)
    return m


def test_session_logs_older_than_30_days_are_archived():
    day = lambda n: (TODAY - dt.timedelta(days=n)).isoformat()  # noqa: E731
    out = sessions(corpus(log(day(0)), log(day(29)), log(day(30)), log(day(31)), log(day(400))), S)
    assert [(a.kind, a.targets) for a in out.actions] == [
        ("archive_session", [f"sessions/{day(400)}.md"]),
        ("archive_session", [f"sessions/{day(31)}.md"]),
    ]
    assert "31 days old" in out.actions[1].reason


def test_session_without_a_date_in_its_name_is_left_alone():
    out = sessions(corpus(tier("sessions/notes.md", "session", current=False, session_date=None)), S)
    assert out.actions == []


def test_current_from_today_is_not_rotated():
    assert sessions(corpus(current(NOW)), S).actions == []


def test_current_from_another_day_rotates_to_its_header_date():
    out = sessions(corpus(current("2026-11-27")), S)
    assert [(a.kind, a.targets) for a in out.actions] == [("rotate_session", ["sessions/current.md"])]
    assert "header date 2026-11-27" in out.actions[0].reason
    assert out.actions[0].rotate_to == "sessions/2026-11-27.md"


def test_rotation_name_avoids_taken_names_like_rotate_session_js():
    out = sessions(
        corpus(current("2026-11-27"), session_files=["sessions/2026-11-27.md", "sessions/2026-11-27-1.md"]), S
    )
    assert out.actions[0].rotate_to == "sessions/2026-11-27-2.md"


def test_current_without_header_rotates_by_its_mtime_and_says_why():
    out = sessions(corpus(current(None, mtime_days=3)), S)
    assert [a.kind for a in out.actions] == ["rotate_session"]
    assert "no '# Session Log: YYYY-MM-DD' header" in out.actions[0].reason
    assert out.actions[0].rotate_to == "sessions/2026-11-26.md"


def test_future_header_rotates_too():
    out = sessions(corpus(current("2026-12-01")), S)
    assert [a.kind for a in out.actions] == ["rotate_session"]


def test_layout_rule_set_combines_the_three():
    ref = tier("reference/decisions.md", "reference")
    ref.mtime = noon_days_ago(100)
    out = rules(
        corpus(
            tier("state.md", "core", 20000),
            ref,
            entry("reference/decisions.md", "old", "superseded", 4),
            log("2026-01-01"),
            current("2026-11-28"),
        ),
        S,
    )
    assert sorted(a.kind for a in out.actions) == ["archive", "archive_session", "rotate_session", "trim_budget"]
    assert sorted(f.kind for f in out.findings) == ["freshness", "over_budget"]
