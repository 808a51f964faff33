"""Classification, prune guards and the consult-gate: the pure half of staleness."""

import datetime as dt

import pytest

from pipeline.config import Settings
from pipeline.model import Memory
from pipeline.rules.consult_gate import ConsultEntry, consult_match, consulted_terms, parse_consult_log
from pipeline.rules.prune_guards import guard_reason
from pipeline.rules.refs import Refs
from pipeline.layouts.registry import get as get_layout
from pipeline.rules.repo_index import RepoIndex
from pipeline.rules.staleness import (
    EVERGREEN,
    FRESH,
    FULLY_STALE,
    PARTIALLY_STALE,
    classify,
    stale_outcome,
)
from pipeline.rules.staleness_context import StalenessContext

NOW = dt.date(2026, 11, 29)
INDEX = RepoIndex(
    root="/repo",
    files=frozenset({"src/a.ts", "src/b.ts", "package.json"}),
    dirs=frozenset({"src"}),
    identifiers=frozenset({"aliveFn", "AliveClass"}),
)


def refs(files=(), symbols=()) -> Refs:
    return Refs(files=tuple(sorted(files)), symbols=tuple(sorted(symbols)))


# --------------------------------------------------------------------------------------------
# the table


@pytest.mark.parametrize(
    "files, symbols, expected",
    [
        ((), (), EVERGREEN),
        (("~/.claude/x.json", "https://e.com/a.md", "vendor/x/y.ts"), (), EVERGREEN),
        ((), ("goneFn",), EVERGREEN),  # symbols alone never make a memory verifiable
        (("src/a.ts",), (), FRESH),
        (("src/a.ts", "package.json"), ("aliveFn",), FRESH),
        (("src/a.ts", "src/gone.ts"), (), PARTIALLY_STALE),
        (("src/a.ts",), ("goneFn",), PARTIALLY_STALE),  # files there, a symbol gone
        (("src/gone.ts",), ("aliveFn",), PARTIALLY_STALE),  # files gone, code moved
        (("src/gone.ts",), ("aliveFn", "goneFn"), PARTIALLY_STALE),
        (("src/gone.ts",), (), FULLY_STALE),
        (("src/gone.ts", "gone.ts"), ("goneFn", "GoneClass"), FULLY_STALE),
        (("src/gone.ts", "~/.claude/x.json"), (), FULLY_STALE),  # the external ref is not counted
    ],
)
def test_classification_table(files, symbols, expected):
    assert classify(refs(files, symbols), INDEX).cls == expected


def test_missing_refs_are_listed_files_then_symbols():
    a = classify(refs(("src/gone.ts", "src/a.ts"), ("zedFn", "aliveFn", "betaFn")), INDEX)
    assert a.cls == PARTIALLY_STALE
    assert a.missing == ("src/gone.ts", "betaFn", "zedFn")
    assert "src/gone.ts" in a.reason and "symbol betaFn" in a.reason


def test_no_repository_is_evergreen():
    assert classify(refs(("src/gone.ts",)), None).cls == EVERGREEN


def test_a_capped_scan_never_proves_missing():
    capped = RepoIndex(root="/r", files=frozenset({"src/a.ts"}), dirs=frozenset({"src"}), complete=False)
    a = classify(refs(("src/gone.ts",), ("goneFn",)), capped)
    assert a.cls == PARTIALLY_STALE and "size cap" in a.reason


def test_globs_folders_and_bare_names_resolve_against_the_index():
    index = RepoIndex(
        root="/r",
        files=frozenset({"src/skills/x/SKILL.md", "docs/site/app.test.ts"}),
        dirs=frozenset({"src", "src/skills", "src/skills/x", "docs", "docs/site"}),
    )
    assert index.has_path("src/skills/*/SKILL.md")
    assert index.has_path("docs/**/*.test.ts")
    assert not index.has_path("src/skills/*/README.md")
    assert index.has_path("src/skills/") and not index.has_path("src/nothing/")
    assert index.has_path("SKILL.md") and not index.has_path("OTHER.md")
    assert index.top_dirs == {"src", "docs"}


# --------------------------------------------------------------------------------------------
# guards


def mem(key="p/m.md", body="", **kw) -> Memory:
    kw.setdefault("layout", "claude")
    kw.setdefault("has_frontmatter", True)
    kw.setdefault("modified", dt.date(2026, 1, 1))
    return Memory(key=key, body=body, **kw)


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({"type": "project"}, None),
        ({"type": "user"}, "type:user is never auto-pruned"),
        ({"type": "feedback"}, "type:feedback value is the lesson, not its file refs"),
        ({"type": "reference"}, "type:reference value is the lesson, not its file refs"),
        ({"type": "project", "pinned": True}, "pinned memories are never auto-pruned"),
        ({"type": "project", "modified": dt.date(2026, 11, 16)}, "modified within 14d (2026-11-16)"),
        ({"type": "project", "modified": dt.date(2026, 11, 15)}, None),  # exactly 14 days: not recent
        ({"type": "project", "modified": dt.date(2026, 12, 24)}, "modified within 14d (2026-12-24)"),
        ({"type": "project", "body": "Do not bump the pool size."}, "carries a do-not/never directive"),
        ({"type": "project", "body": "We don't cache this."}, "carries a do-not/never directive"),
        ({"type": "project", "body": "We never retry."}, "carries a do-not/never directive"),
        ({"type": "project", "body": "AVOID the legacy path."}, "carries a do-not/never directive"),
        ({"type": "project", "body": "Uneventful notes about avoidance."}, None),
        ({"type": "project", "description": "never inline this"}, "carries a do-not/never directive"),
    ],
)
def test_guard_reasons(kw, expected):
    assert guard_reason(mem(**kw), NOW, 14) == expected


def test_guard_falls_back_to_mtime_and_keeps_memories_of_unknown_age():
    recent = dt.datetime(2026, 11, 25, 12, tzinfo=dt.timezone.utc).timestamp()
    old = dt.datetime(2026, 1, 25, 12, tzinfo=dt.timezone.utc).timestamp()
    assert guard_reason(mem(type="project", modified=None, mtime=recent), NOW, 14) == "modified within 14d (2026-11-25)"
    assert guard_reason(mem(type="project", modified=None, mtime=old), NOW, 14) is None
    assert guard_reason(mem(type="project", modified=None, mtime=None), NOW, 14) == "age unknown, so treated as recent"


def test_front_matter_date_wins_over_mtime():
    recent_mtime = dt.datetime(2026, 11, 28, tzinfo=dt.timezone.utc).timestamp()
    assert guard_reason(mem(type="project", modified=dt.date(2026, 2, 1), mtime=recent_mtime), NOW, 14) is None


# --------------------------------------------------------------------------------------------
# consult-gate


def entry(day: str, names=(), query="") -> ConsultEntry:
    return ConsultEntry(day=dt.date.fromisoformat(day), names=tuple(names), query=query)


def test_consult_window_inside_outside_and_future():
    entries = [
        entry("2026-11-20", names=["inside_window"]),
        entry("2026-11-15", names=["on_the_cutoff"]),
        entry("2026-11-14", names=["one_day_too_old"]),
        entry("2026-10-01", names=["long_ago"]),
        entry("2026-11-30", names=["after_now"]),
        entry("2026-11-29", names=["today"]),
    ]
    assert sorted(consulted_terms(entries, NOW, 14)) == ["inside-window", "on-the-cutoff", "today"]


def test_consult_terms_from_names_and_long_query_words():
    terms = consulted_terms([entry("2026-11-28", names=["Search_Index"], query="how is the DB pool sized?")], NOW, 14)
    assert sorted(terms) == ["how", "pool", "search-index", "sized", "the"]


def test_consult_match_by_name_or_fuzzy_slug():
    terms = {"search": dt.date(2026, 11, 25), "payments-gateway": dt.date(2026, 11, 20)}
    assert consult_match(mem(key="f/project_search_index.md"), terms) == ("search", dt.date(2026, 11, 25))
    assert consult_match(mem(key="f/gateway.md"), terms) == ("payments-gateway", dt.date(2026, 11, 20))
    assert consult_match(mem(key="f/x.md", title="payments gateway"), terms) is not None
    assert consult_match(mem(key="f/export_jobs.md"), terms) is None


def test_consult_log_parsing_skips_malformed_lines():
    text = "\n".join(
        [
            '{"ts": "2026-11-25T10:15:00Z", "session": "s", "tool": "t", "query": "q words", "names": ["a"]}',
            "not json",
            '{"session": "no ts", "names": ["b"]}',
            '{"ts": "yesterday", "names": ["c"]}',
            '["a list"]',
            '{"ts": "2026-11-26T23:30:00-05:00", "names": "not a list", "query": 5}',
            "",
        ]
    )
    entries, skipped = parse_consult_log(text)
    assert skipped == 4
    assert entries == [
        ConsultEntry(day=dt.date(2026, 11, 25), names=("a",), query="q words"),
        ConsultEntry(day=dt.date(2026, 11, 27), names=(), query=""),  # converted to UTC
    ]


# --------------------------------------------------------------------------------------------
# the whole pure rule


def test_stale_outcome_guards_then_gate_then_prunes():
    repo = "/repo"
    log = "/repo/.claude/logs/memory-consult.jsonl"
    extra = {"repo": repo, "consult_log": log}
    body = "Built in `src/gone.ts` with `goneFn()`."
    memories = [
        mem("f/project_pruned.md", body, type="project", extra=extra),
        mem("f/project_user.md", body, type="user", extra=extra),
        mem("f/project_consulted.md", body, type="project", extra=extra),
        mem("f/project_asked_long_ago.md", body, type="project", extra=extra),
        mem("f/project_fresh.md", "See `src/a.ts` and `aliveFn()`.", type="project", extra=extra),
    ]
    ctx = StalenessContext(
        repos={repo: INDEX},
        consult={log: [entry("2026-11-20", names=["project_consulted"]), entry("2026-10-01", names=["project_asked_long_ago"])]},
    )
    out = stale_outcome(memories, ctx, Settings(now=NOW), evergreen_without_frontmatter=True)
    classes = {f.targets[0]: f.class_ for f in out.findings}
    assert classes == {
        "f/project_asked_long_ago.md": FULLY_STALE,
        "f/project_consulted.md": PARTIALLY_STALE,
        "f/project_fresh.md": FRESH,
        "f/project_pruned.md": FULLY_STALE,
        "f/project_user.md": PARTIALLY_STALE,
    }
    assert [a.targets for a in out.actions] == [["f/project_asked_long_ago.md"], ["f/project_pruned.md"]]
    assert all(a.kind == "prune_stale" and "src/gone.ts" in a.reason for a in out.actions)
    kept = {f.targets[0]: f.kept_reason for f in out.findings}
    assert kept["f/project_consulted.md"].startswith("consult-gate: looked up as 'project-consulted' on 2026-11-20")
    assert kept["f/project_user.md"] == "prune-guard: type:user is never auto-pruned"
    pruned = next(f for f in out.findings if f.targets == ["f/project_pruned.md"])
    assert pruned.missing == ["src/gone.ts", "goneFn"]


def test_memories_without_front_matter_are_evergreen_only_in_the_claude_layout():
    m = mem("f/notes.md", "Was in `src/gone.ts`.", has_frontmatter=False, extra={"repo": "/repo"})
    ctx = StalenessContext(repos={"/repo": INDEX})
    def judged(layout: str):
        declared = get_layout(layout).evergreen_without_frontmatter
        return stale_outcome([m.model_copy(update={"layout": layout})], ctx, Settings(now=NOW), declared)

    claude, bank = judged("claude"), judged("bank")
    assert claude.findings[0].class_ == EVERGREEN and claude.actions == []
    assert bank.findings[0].class_ == FULLY_STALE
