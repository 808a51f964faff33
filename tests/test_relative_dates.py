"""Relative dates made absolute (issue 15): the grammar against docs/relative-dates.md, byte keeping, the
`absolutize_dates` rule over typed memories and real layouts, and `eval --stage dates`."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.rules.absolutize_dates import ACTION_KIND, FINDING_KIND, absolutize_dates, own_date
from pipeline.rules.relative_dates import Replacement, apply_replacements, scan_relative_dates

from helpers import REPO, mem, run_cli

D = dt.date(2026, 4, 1)  # a Wednesday
DEV = REPO / "tests" / "data" / "dates_dev.jsonl"


def rewrite(text: str, written: dt.date = D) -> str:
    return apply_replacements(text, scan_relative_dates(text, written).replacements)


def vague_of(text: str) -> list[str]:
    return [v.phrase for v in scan_relative_dates(text, D).vague]


# --- one row of the spec's table each --------------------------------------------------------------

TABLE = [
    # today, earlier today
    ("We rotated the key today.", D, "We rotated the key on 2026-04-01."),
    ("We rotated the key earlier today.", D, "We rotated the key on 2026-04-01."),
    # this morning / afternoon / evening / tonight
    ("It broke this morning.", D, "It broke on the morning of 2026-04-01."),
    ("It broke this afternoon.", D, "It broke on the afternoon of 2026-04-01."),
    ("It broke this evening.", D, "It broke on the evening of 2026-04-01."),
    ("We cut the release tonight.", D, "We cut the release on the evening of 2026-04-01."),
    # yesterday, yesterday morning/afternoon/evening
    ("The cache was flushed yesterday.", D, "The cache was flushed on 2026-03-31."),
    ("The cache was flushed yesterday morning.", D, "The cache was flushed on the morning of 2026-03-31."),
    ("The cache was flushed yesterday afternoon.", D, "The cache was flushed on the afternoon of 2026-03-31."),
    ("The cache was flushed yesterday evening.", D, "The cache was flushed on the evening of 2026-03-31."),
    # the day before yesterday, tomorrow, the day after tomorrow
    ("The disk filled up the day before yesterday.", D, "The disk filled up on 2026-03-30."),
    ("The vendor ships the fix tomorrow.", D, "The vendor ships the fix on 2026-04-02."),
    ("The freeze starts the day after tomorrow.", D, "The freeze starts on 2026-04-03."),
    # N days ago (digits, words, "a day ago"), in N days
    ("The key was rotated 3 days ago.", D, "The key was rotated on 2026-03-29."),
    ("The key was rotated three days ago.", D, "The key was rotated on 2026-03-29."),
    ("The key was rotated twenty-one days ago.", D, "The key was rotated on 2026-03-11."),
    ("The key was rotated thirty days ago.", D, "The key was rotated on 2026-03-02."),
    ("The key was rotated a day ago.", D, "The key was rotated on 2026-03-31."),
    ("The certificate expires in 10 days.", D, "The certificate expires on 2026-04-11."),
    # last week, a week ago, one week ago, N weeks ago, this week, next week
    ("The outage hit billing last week.", D, "The outage hit billing the week of 2026-03-23."),
    ("The outage hit billing a week ago.", D, "The outage hit billing the week of 2026-03-23."),
    ("The outage hit billing one week ago.", D, "The outage hit billing the week of 2026-03-23."),
    ("The outage hit billing two weeks ago.", D, "The outage hit billing the week of 2026-03-16."),
    ("We migrated the runners this week.", D, "We migrated the runners the week of 2026-03-30."),
    ("We migrate the runners next week.", D, "We migrate the runners the week of 2026-04-06."),
    # last month, a month ago, N months ago, this month, next month
    ("The bill went over budget last month.", D, "The bill went over budget in 2026-03."),
    ("The bill went over budget a month ago.", D, "The bill went over budget in 2026-03."),
    ("The bill went over budget 3 months ago.", D, "The bill went over budget in 2026-01."),
    ("We moved to Vite this month.", D, "We moved to Vite in 2026-04."),
    ("We move to Vite next month.", D, "We move to Vite in 2026-05."),
    ("We moved to Vite last month.", dt.date(2026, 1, 5), "We moved to Vite in 2025-12."),
    # last year / this year / next year
    ("The API was deprecated last year.", D, "The API was deprecated in 2025."),
    ("The API was deprecated this year.", D, "The API was deprecated in 2026."),
    ("The API will be removed next year.", D, "The API will be removed in 2027."),
    # last <Weekday>: the latest strictly before D; next <Weekday>: the first strictly after D
    ("The review happened last Tuesday.", D, "The review happened on 2026-03-31."),
    ("The review happened last Wednesday.", D, "The review happened on 2026-03-25."),
    ("The review is next Wednesday.", D, "The review is on 2026-04-08."),
    ("The review is next Monday.", D, "The review is on 2026-04-06."),
    ("The review is next monday.", dt.date(2026, 3, 8), "The review is on 2026-03-09."),
]


@pytest.mark.parametrize("text,written,expected", TABLE, ids=[t[0] for t in TABLE])
def test_each_row_of_the_table(text, written, expected):
    assert rewrite(text, written) == expected


def test_this_weekday_is_ambiguous_and_only_reported():
    scan = scan_relative_dates("This Friday we ship the mobile build.", D)
    assert not scan.replacements
    assert [(h.phrase, h.why) for h in scan.held] == [("This Friday", "ambiguous")]
    assert rewrite("We ship on Friday.") == "We ship on Friday."


# --- prepositions, capitals, possessives -----------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("The API has returned 502s since yesterday.", "The API has returned 502s since 2026-03-31."),
    ("As of today the dashboard is read-only.", "As of 2026-04-01 the dashboard is read-only."),
    ("Invoices are in UTC since last month.", "Invoices are in UTC since 2026-03."),
    ("Merges are frozen until tomorrow.", "Merges are frozen until 2026-04-02."),
    ("Sam is out till next Wednesday.", "Sam is out till 2026-04-08."),
    ("The vendor must reply by next Friday.", "The vendor must reply by 2026-04-03."),
    ("Deploys were blocked from yesterday until this afternoon.",
     "Deploys were blocked from 2026-03-31 until the afternoon of 2026-04-01."),
    ("Nothing changed after last Monday.", "Nothing changed after 2026-03-30."),
    ("The alert was quiet before this morning.", "The alert was quiet before the morning of 2026-04-01."),
    ("We paused it until next week.", "We paused it until the week of 2026-04-06."),
])
def test_after_a_preposition_the_leading_on_or_in_is_dropped(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("Yesterday we moved the deploy to Fridays.", "On 2026-03-31 we moved the deploy to Fridays."),
    ("Last week the outage hit billing.", "The week of 2026-03-23 the outage hit billing."),
    ("Last month we paid more.", "In 2026-03 we paid more."),
    ("It broke. yesterday we fixed it.", "It broke. On 2026-03-31 we fixed it."),
    ("6 months ago we moved to Bazel.", "In 2025-10 we moved to Bazel."),
    ("- yesterday the build broke\n- Today we fixed it\n", "- On 2026-03-31 the build broke\n- On 2026-04-01 we fixed it\n"),
    ("**Yesterday** the failover took 40 s.", "**On 2026-03-31** the failover took 40 s."),
    ("We found the leak and\nrotated the key yesterday.", "We found the leak and\nrotated the key on 2026-03-31."),
    ("Retro: yesterday the pipeline stalled.", "Retro: on 2026-03-31 the pipeline stalled."),
])
def test_a_sentence_start_takes_a_capital_and_only_there(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("Yesterday's deploy broke login.", "The 2026-03-31 deploy broke login."),
    ("Today's run took 40 minutes.", "The 2026-04-01 run took 40 minutes."),
    ("Since yesterday's incident deploys are frozen.", "Since the 2026-03-31 incident deploys are frozen."),
    ("We prepared for tomorrow's release.", "We prepared for the 2026-04-02 release."),
])
def test_possessives_of_a_day_name_the_day(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text", [
    "Last week's outage was a bad DNS record.",
    "Next Monday's release train leaves at 10:00.",
    "Tonight's maintenance went fine.",
    "The job compares today's totals with yesterday's.",
])
def test_possessives_that_are_too_clever_are_reported_not_rewritten(text):
    scan = scan_relative_dates(text, D)
    assert not scan.replacements
    assert {h.why for h in scan.held} == {"possessive"}


# --- what is not replaced --------------------------------------------------------------------------


@pytest.mark.parametrize("text,phrase", [
    ("Recently the cache hit rate dropped.", "Recently"),
    ("We will revisit sharding soon.", "soon"),
    ("Lately the build is slow.", "Lately"),
    ("A while ago we tried Bazel.", "A while ago"),
    ("The other day someone force-pushed.", "The other day"),
    ("A few days ago the latency doubled.", "A few days ago"),
    ("Some time ago we dropped Node 16.", "Some time ago"),
    ("We discussed this earlier.", "earlier"),
    ("Nowadays we use pnpm.", "Nowadays"),
    ("These days the queue is short.", "These days"),
    ("The team currently deploys twice a week.", "currently"),
    ("Bob owns the pager now.", "now"),
    ("About a week ago the cache was flushed.", "a week ago"),
    ("It broke 2 or 3 days ago.", "3 days ago"),
    ("What works today must keep working.", "today"),
])
def test_vague_phrases_are_found_and_never_edited(text, phrase):
    scan = scan_relative_dates(text, D)
    assert not scan.replacements
    assert phrase in [v.phrase for v in scan.vague]


@pytest.mark.parametrize("text", [
    "Set `SINCE=yesterday` in the job's environment.",
    "Run ``git log --since=yesterday`` to see it.",
    "```\ngit log --since=yesterday\n```\n",
    "~~~bash\nrm -rf /tmp/cache  # tomorrow\n~~~\n",
    "```\nan unclosed fence from yesterday\n",
    'The runbook says "restart the pods tomorrow if they leak".',
    "He wrote “we deploy tomorrow” in the channel.",
    "The banner reads 'Deploys Today' in bold.",
    "> Yesterday we moved the deploy to Fridays.",
    "See https://status.example.com/incidents/yesterday for details.",
    "See www.example.com/today for details.",
    "The summary lives in reports/today.md.",
    "The summary lives in today.md and yesterday_notes.txt.",
    "Use the make-it-work-today adapters.",
    "<!-- yesterday we moved it -->",
    "## Yesterday\n",
])
def test_code_quotations_urls_and_file_names_are_left_alone(text):
    scan = scan_relative_dates(text, D)
    assert not scan.replacements and not scan.vague


@pytest.mark.parametrize("text", [
    # generic, habitual, a rule
    "Run the smoke tests again the next day after a schema change.",
    "Check today's error logs first when paging in.",
    "On-call engineers should check yesterday's alerts at shift start.",
    "Daily: review yesterday's failed jobs before standup.",
    "Each morning, skim yesterday's alerts.",
    "The backup runs every day and keeps the last week of snapshots.",
    "Retry failed payouts in 3 days.",
    "Invoices are due in 30 days.",
    "Tokens expire in 30 days after issue.",
    # names
    "Today I Learned: ripgrep respects .gitignore.",
    "The Yesterday project owns the archive service.",
    "The TODAY flag toggles the banner.",
    "Last Week Tonight is on at nine.",
    # conditionals
    "If the build broke yesterday, re-run it before merging.",
    "Unless the freeze ends next week, hold the migration.",
    "When a deploy fails today, roll back first.",
    "Should the import fail tomorrow, retry with --force.",
    # cron and standing schedules
    "The cleanup cron runs every Monday at 03:00.",
    "Next Monday's release train leaves every week at 10:00.",
    # hypothetical examples
    "For example, a reminder that says tomorrow is useless a week later.",
    "Imagine the deploy slips to tomorrow.",
    # spans, not dates
    "In the last week the error rate was flat.",
    "Over the last month the error rate was flat.",
    "The build is faster than yesterday.",
    "Ship by the end of next week.",
    # already absolute
    "The key was rotated on 2026-03-29.",
    "On March 31 we moved the deploy to Fridays.",
    "Yesterday (2026-03-31) we moved the deploy.",
])
def test_generic_habitual_conditional_names_and_absolute_dates_are_left_alone(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text", [
    # a template or standing frame names itself before a colon or a dash
    "Weekly review template: what broke last week, what ships next week, who is on call.",
    "Standup format: what you did yesterday, what you will do today, blockers.",
    "Retro template - what went wrong last week and what we change next week.",
    "Release rule: anything merged after 15:00 waits until tomorrow.",
    "Deploy policy: hotfixes merged tonight ship tomorrow morning.",
    "The weekly review template asks what broke last week.",
    "Weekly report: {{count}} deploys since last week.",
    # ... or introduces the list the phrase is in
    "## Standup template\n- what I did yesterday\n- what I will do tomorrow\n",
    "Incident report template:\n- What broke yesterday?\n- Who was paged?\n",
    # the advice of a "Never" rule is relative to whenever the rule is applied
    "Never start a reindex late in the day; leave it for tomorrow morning.",
    "Never deploy on a Friday afternoon - push it to next Monday.",
    "- **Never** run migrations at night; wait until tomorrow.",
    "Don't ever merge tonight; wait for tomorrow's standup.",
    "Rule of thumb: restart the pods tomorrow morning if memory grows.",
])
def test_templates_and_the_advice_of_rules_are_left_alone(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text,expected", [
    ("We updated the PR template yesterday.", "We updated the PR template on 2026-03-31."),
    ("Policy update: yesterday we made MFA mandatory.", "Policy update: on 2026-03-31 we made MFA mandatory."),
    ("The log format changed last week.", "The log format changed the week of 2026-03-23."),
    ("Done:\n- rotated the keys yesterday\n- merged the fix\n", "Done:\n- rotated the keys on 2026-03-31\n- merged the fix\n"),
    ("Never deploy on Fridays; we learned it last week.", "Never deploy on Fridays; we learned it the week of 2026-03-23."),
    ("We never got the alert yesterday.", "We never got the alert on 2026-03-31."),
])
def test_a_template_or_rule_named_in_a_dated_sentence_does_not_hide_its_date(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("Yesterday's Kafka outage lasted 40 minutes.", "The 2026-03-31 Kafka outage lasted 40 minutes."),
    ("The 500s were caused by yesterday's config push.", "The 500s were caused by the 2026-03-31 config push."),
    ("Today's search API deploy failed twice.", "The 2026-04-01 search API deploy failed twice."),
    ("Yesterday's Postgres failover took 3 minutes.", "The 2026-03-31 Postgres failover took 3 minutes."),
    ("Fixed in yesterday's hotfix.", "Fixed in the 2026-03-31 hotfix."),
    ("We talked about yesterday's outage at the retro.", "We talked about the 2026-03-31 outage at the retro."),
    ("Blocked by tomorrow's freeze.", "Blocked by the 2026-04-02 freeze."),
])
def test_a_possessive_names_the_day_of_a_qualified_event_after_any_preposition(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text", [
    "Yesterday's numbers show errors went up.",  # a plural, not a qualifier: no event is named
    "Yesterday's logs show the deploy failed.",
    "Check yesterday's config push before paging.",  # an instruction
    "The root cause of last week's outage was DNS.",
])
def test_a_possessive_without_an_event_of_that_day_is_reported(text):
    scan = scan_relative_dates(text, D)
    assert not scan.replacements


@pytest.mark.parametrize("text,expected", [
    ("The snapshot taken tonight is the restore point for the migration tomorrow.",
     "The snapshot taken on the evening of 2026-04-01 is the restore point for the migration on 2026-04-02."),
    ("The build yesterday was green.", "The build on 2026-03-31 was green."),
    ("The snapshot taken today is the restore point.", "The snapshot taken on 2026-04-01 is the restore point."),
    ("What happened yesterday was a DNS failure.", "What happened on 2026-03-31 was a DNS failure."),
])
def test_a_phrase_inside_a_longer_subject_is_replaced(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text", ["Tomorrow is the freeze.", "Bob said tomorrow is fine.", "Friday or tomorrow is fine.",
                                  "Alice asked why tomorrow is a holiday."])
def test_a_phrase_that_is_the_subject_is_only_reported(text):
    scan = scan_relative_dates(text, D)
    assert not scan.replacements and [h.why for h in scan.held] == ["ambiguous"]


@pytest.mark.parametrize("text,expected", [
    ("Dispute queue as of today: 4 open.", "Dispute queue as of 2026-04-01: 4 open."),
    ("Deploys frozen until tomorrow: the audit runs.", "Deploys frozen until 2026-04-02: the audit runs."),
    ("Changes since yesterday:\n- bumped SDK\n", "Changes since 2026-03-31:\n- bumped SDK\n"),
    ("Today: rotated keys.", "Today: rotated keys."),  # a label, not a date
    ("Status (today: green).", "Status (today: green)."),
    ("Yesterday: shipped the SDK.", "Yesterday: shipped the SDK."),
])
def test_before_a_colon_only_a_preposition_makes_the_phrase_a_date(text, expected):
    assert rewrite(text) == expected


def test_phrases_that_touch_are_one_phrase_outside_the_contract():
    scan = scan_relative_dates("The pricing took effect a week ago today.", D)
    assert not scan.replacements and {h.why for h in scan.held} == {"ambiguous"}


# --- bytes -----------------------------------------------------------------------------------------


def test_crlf_bom_and_trailing_whitespace_are_kept():
    text = "\ufeffYesterday the backup failed.  \r\nWe restored it this morning.\t\r\n\r\nUnrelated line.   \r\n"
    assert rewrite(text) == (
        "\ufeffOn 2026-03-31 the backup failed.  \r\nWe restored it on the morning of 2026-04-01.\t\r\n\r\nUnrelated line.   \r\n"
    )
    assert rewrite(text).encode("utf-8").count(b"\r\n") == text.encode("utf-8").count(b"\r\n")


def test_apply_refuses_stale_or_overlapping_replacements():
    with pytest.raises(ValueError):
        apply_replacements("today", [Replacement(0, 5, "tomorrow", "on 2026-04-02")])
    with pytest.raises(ValueError):
        apply_replacements("today x", [Replacement(0, 5, "today", "a"), Replacement(2, 7, "day x", "b")])
    assert apply_replacements("keep me", []) == "keep me"


_WORDS = ["yesterday", "today", "Tomorrow", "last", "next", "this", "week", "month", "Monday", "3", "two", "days", "ago",
          "in", "since", "the", "day", "before", "after", "`", '"', "'s", "if", "every", "recently", "now", ".", ",", "\r\n",
          "\n\n", "```", "http://x/", "\ufeff", " ", "  ", "-", "#", ">", "*"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=40).map(" ".join), st.dates(dt.date(1, 2, 1), dt.date(9999, 11, 30)))
def test_any_text_scans_and_only_phrase_spans_change(text, written):
    scan = scan_relative_dates(text, written)
    out = apply_replacements(text, scan.replacements)
    pos, rebuilt = 0, []
    for r in scan.replacements:
        assert text[r.start:r.end] == r.phrase and r.start >= pos
        rebuilt.append(text[pos:r.start])
        rebuilt.append(r.replacement)
        pos = r.end
    assert out == "".join(rebuilt) + text[pos:]


def test_the_dev_cases_come_out_as_labelled():
    for line in DEV.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        got = rewrite(case["text"], dt.date.fromisoformat(case["written"]))
        assert got == case["expected"], case["id"]
        for phrase in case.get("vague", []):
            assert phrase.lower() in [v.lower() for v in vague_of(case["text"])], case["id"]


# --- the rule --------------------------------------------------------------------------------------


def test_a_date_from_metadata_gives_an_automatic_edit_with_every_replacement():
    m = mem("b/m1", "Yesterday we moved the deploy. It broke 3 days ago.", created=D, modified=D)
    out = absolutize_dates([m])
    assert not out.findings
    [action] = out.actions
    assert action.kind == ACTION_KIND and action.targets == ["b/m1"] and action.needs_user is False
    assert action.written == "2026-04-01" and action.date_source == "created+modified"
    assert [(r["field"], r["before"], r["after"]) for r in action.replacements] == [
        ("body", "Yesterday", "On 2026-03-31"), ("body", "3 days ago", "on 2026-03-29")]
    assert "2 replacements" in action.reason  # the report lists each, before -> after


def test_resolved_against_the_memorys_own_date_not_the_run():
    m = mem("b/m1", "The key was rotated yesterday.", created=dt.date(2025, 1, 1))
    [action] = absolutize_dates([m]).actions
    assert action.replacements[0]["after"] == "on 2024-12-31"
    assert own_date(mem("b/m2", "x", modified=dt.date(2025, 2, 2))).source == "modified"


def test_only_an_mtime_gives_a_finding_with_the_suggested_replacements():
    when = dt.datetime(2026, 4, 1, 23, 30, tzinfo=dt.timezone.utc).timestamp()
    m = mem("notes.md", "Yesterday we moved the deploy.", layout="claude", mtime=when)
    out = absolutize_dates([m])
    assert not out.actions
    [finding] = out.findings
    assert finding.kind == FINDING_KIND and finding.class_ == "mtime_only"
    assert finding.replacements[0]["after"] == "On 2026-03-31"


def test_disagreeing_created_and_modified_give_a_finding():
    m = mem("b/m1", "Yesterday we moved the deploy.", created=dt.date(2026, 3, 1), modified=D)
    out = absolutize_dates([m])
    assert not out.actions and [f.class_ for f in out.findings] == ["ambiguous_date"]


def test_vague_phrases_and_undated_memories_are_findings():
    out = absolutize_dates([mem("b/v", "Recently the cache got slower.", created=D), mem("b/n", "Yesterday it broke.")])
    assert not out.actions
    assert sorted((f.targets[0], f.class_) for f in out.findings) == [("b/n", "no_date"), ("b/v", "vague")]


def test_pinned_memories_are_proposed_but_wait_for_the_user():
    [action] = absolutize_dates([mem("b/p", "Yesterday it broke.", created=D, pinned=True)]).actions
    assert action.needs_user is True


def test_description_and_the_crux_twin_are_edited_with_the_body():
    m = mem("memories/idea/a.memory.crux.md", "⟦CRUX: moved yesterday⟧", layout="crux", created=D,
            description="Moved the deploy yesterday.", extra={"twin_body": "We moved the deploy yesterday.\n"})
    [action] = absolutize_dates([m]).actions
    assert [r["field"] for r in action.replacements] == ["description", "body", "twin_body"]


def test_a_zylos_reference_file_is_left_to_its_entries():
    file = mem("reference/decisions.md", "### X\n- **Decision:** moved it yesterday\n", layout="zylos",
               modified=D, extra={"entries": ["reference/decisions.md#x"]})
    entry = mem("reference/decisions.md#x", "moved it yesterday", layout="zylos", created=dt.date(2026, 1, 15))
    [action] = absolutize_dates([file, entry]).actions
    assert action.targets == ["reference/decisions.md#x"] and action.replacements[0]["after"] == "on 2026-01-14"


def test_each_layouts_reader_gives_the_rule_its_own_date(tmp_path):
    from pipeline.config import build_settings
    from pipeline.layouts.registry import open_store

    claude = tmp_path / "claude"
    claude.mkdir()
    (claude / "MEMORY.md").write_text("- [Deploy](deploy.md) — the deploy window\n- [Cache](cache.md) — cache\n")
    (claude / "deploy.md").write_text("---\nname: Deploy\ncreated: 2026-04-01\n---\nYesterday we moved the deploy.\n")
    (claude / "cache.md").write_text("Yesterday the cache was flushed.\n")
    bank = tmp_path / "bank" / "ops"
    bank.mkdir(parents=True)
    (bank / "memories.jsonl").write_text(json.dumps({
        "id": "o1", "text": "The key was rotated 3 days ago.", "created_at": "2026-04-01T08:00:00Z", "revision": 1}) + "\n")
    zylos = tmp_path / "zylos"
    (zylos / "sessions").mkdir(parents=True)
    (zylos / "identity.md").write_text("# Identity\n")
    (zylos / "state.md").write_text("# State\n")
    (zylos / "sessions" / "2026-03-31.md").write_text("# Session 2026-03-31\nToday we moved the cron.\n")
    got = {}
    for root in (claude, tmp_path / "bank", zylos):
        corpus, _ = open_store(root, build_settings({}, {}))
        out = absolutize_dates(corpus.memories)
        got.update({a.targets[0]: (a.date_source, a.replacements[0]["after"]) for a in out.actions})
        got.update({f.targets[0]: (f.class_, None) for f in out.findings})
    assert got == {
        "deploy.md": ("created", "On 2026-03-31"),
        "cache.md": ("mtime_only", None),
        "ops/o1": ("created", "on 2026-03-29"),
        "sessions/2026-03-31.md": ("created", "On 2026-03-31"),
    }


# --- eval --stage dates ----------------------------------------------------------------------------


def _dataset(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "dates.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_scores_the_dev_cases_as_rules():
    res = run_cli("eval", "--stage", "dates", "--dataset", str(DEV), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["stage"] == "dates" and out["model"] == "rules" and out["n"] >= 100
    assert out["metrics"]["precision"] == 1.0 and out["metrics"]["recall"] == 1.0
    assert out["thresholds"] == {"precision": 0.95}
    assert out["false_positives"] == [] and out["false_negatives"] == []


def test_eval_counts_wrong_text_and_false_edits_and_fails_below_the_floor(tmp_path):
    rows = [
        {"id": "d1", "stage": "dates", "text": "Yesterday it broke.", "written": "2026-04-01", "label": True,
         "expected": "On 2026-03-31 it broke."},
        {"id": "d2", "stage": "dates", "text": "Yesterday it broke.", "written": "2026-04-01", "label": True,
         "expected": "On 31 March it broke."},  # the rule writes another text: edited, not correct
        {"id": "d3", "stage": "dates", "text": "It broke 3 days ago.", "written": "2026-04-01", "label": False},
        {"id": "d4", "stage": "dates", "text": "Recently it broke.", "written": "2026-04-01", "label": False,
         "vague": ["recently"]},
        {"id": "d5", "stage": "dates", "text": "It broke about a week ago.", "written": "2026-04-01", "label": True,
         "expected": "It broke the week of 2026-03-23."},
    ]
    res = run_cli("eval", "--stage", "dates", "--dataset", str(_dataset(tmp_path, rows)), "--json", "--model", "none")
    assert res.returncode == 1
    out = json.loads(res.stdout)
    assert out["metrics"] == {"accuracy": 0.4, "precision": 0.3333, "recall": 0.3333, "f1": 0.3333, "vague_recall": 1.0}
    assert out["false_positives"] == ["d2", "d3"] and out["wrong_edits"] == ["d2"]
    assert out["false_negatives"] == ["d2", "d5"]
    assert "dates (rules): below threshold: precision 0.3333 < 0.95" in res.stderr


def test_eval_without_the_dataset_is_the_usual_usage_error(tmp_path):
    env = {**os.environ, "MEMCONSOLIDATE_EVALS": str(tmp_path)}
    res = run_cli("eval", "--stage", "dates", env=env)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "no eval datasets found" in res.stderr and f"looked in {tmp_path})" in res.stderr


def test_eval_rejects_a_case_without_a_date(tmp_path):
    rows = [{"id": "d1", "stage": "dates", "text": "Yesterday it broke.", "written": "April 1st", "label": True}]
    res = run_cli("eval", "--stage", "dates", "--dataset", str(_dataset(tmp_path, rows)))
    assert res.returncode == 2 and "written must be a date" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_present_tense_vague_words_stay_out_of_the_plan():
    out = absolutize_dates([mem("b/q", "Bob owns the pager now and currently rotates it.", created=D)])
    assert not out.actions and not out.findings
    assert [v.phrase for v in scan_relative_dates("Bob owns the pager now.", D).vague] == ["now"]


@pytest.mark.parametrize("text", [
    "The trial ends a week from today.",
    "Monday next week the audit starts.",
    "Early last week the queue backed up.",
    "Later this week we ship the SDK.",
    "We were offline last weekend.",
    "We went through the week before last.",
])
def test_days_the_contract_has_no_words_for_are_left_alone(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text,replaced", [
    ("Run ``a`b yesterday`` now; it broke yesterday.", 1),  # a double-backtick span holds a single one
    ("A lone ` backtick; it broke yesterday.", 1),
    ("<!-- an unclosed comment from yesterday", 0),
    ("<!-- note --> it broke yesterday", 1),
])
def test_code_spans_and_comments_are_found_like_markdown_does(text, replaced):
    assert len(scan_relative_dates(text, D).replacements) == replaced


def test_a_text_without_stops_is_scanned_phrase_by_phrase():
    text = "we moved it yesterday, " * 300
    scan = scan_relative_dates(text, D)
    assert len(scan.replacements) == 300 and rewrite(text) == "we moved it on 2026-03-31, " * 300


def test_todays_thing_that_is_no_event_is_the_current_one_and_stays_out_of_the_plan():
    scan = scan_relative_dates("The old adapters lower the code to today's browsers.", D)
    assert not scan.replacements and not scan.held and [v.phrase for v in scan.vague] == ["today's"]
    assert not absolutize_dates([mem("b/t", "The adapters lower the code to today's browsers.", created=D)]).findings


# --- generic statements: a phrase is dated only when it places an event relative to the day written -


@pytest.mark.parametrize("text", [
    # a class defined by a time, in a standing rule (present tense)
    "Files untouched since yesterday are deleted by the cleanup job.",
    "The cleanup job deletes files untouched since yesterday.",
    "Any branch merged last week is pruned by the bot.",
    "Branches merged last month get archived.",
    "Jobs that failed yesterday are retried first.",
    "The cleanup job removes anything not touched since yesterday.",
    "The tmp reaper deletes any file that hasn't been modified since yesterday.",
    "Caches last written yesterday are considered stale.",
    # ... and the rule that goes with it
    "Orders placed today ship tomorrow.",
    "Customer orders placed before noon today ship tomorrow.",
    "Support tickets opened today are answered tomorrow.",
])
def test_a_class_defined_by_a_relative_time_is_a_standing_rule(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text", [
    "Price quotes expire in 7 days.",
    "A quote expires in 14 days.",
    "All signed quotes expire in 30 days.",
    "Trial accounts are deleted in 30 days.",
    "Each invite link expires in 7 days.",
    "Password reset links expire in 2 days.",
    "Quotes we send expire in 7 days.",
    "Invoices we issue are due in 30 days.",
    "Quotes are valid for two weeks and expire in 14 days.",
])
def test_a_validity_period_of_a_class_is_a_duration_not_a_date(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text", [
    "E.g. if a user says yesterday, resolve it against the message date.",
    "Phrases like yesterday or last week are resolved against the memory date.",
    "A user who says next week means the week after the message.",
    "The word yesterday in a memory goes stale.",
    'A memory like "we moved it yesterday" goes stale; so does one saying the key was rotated 3 days ago.',
    "Consider a note that says the freeze ends tomorrow.",
    "Sample memory: Yesterday we moved the deploy to Fridays.",
    "In this example the cache was flushed yesterday.",
])
def test_a_mentioned_word_or_an_example_is_not_a_date(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text", [
    "On failure, retry tomorrow.",
    "After a schema change, rerun the smoke tests tomorrow.",
    "Deploys are rolled back when they fail today.",
    "Retry tomorrow if the payout fails.",
    "After a failed migration, restore the snapshot and retry tomorrow.",
])
def test_a_standing_instruction_with_a_relative_offset_is_left_alone(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text,expected", [
    ("Yesterday we deleted files untouched for a week.", "On 2026-03-31 we deleted files untouched for a week."),
    ("The files untouched since yesterday were deleted this morning.",
     "The files untouched since 2026-03-31 were deleted on the morning of 2026-04-01."),
    ("We closed tickets opened last week.", "We closed tickets opened the week of 2026-03-23."),
    ("Tickets opened last week were all closed today.",
     "Tickets opened the week of 2026-03-23 were all closed on 2026-04-01."),
    ("The order we placed today ships tomorrow.", "The order we placed on 2026-04-01 ships on 2026-04-02."),
    ("Our vendor quote expires in 7 days.", "Our vendor quote expires on 2026-04-08."),
    ("The Stripe quote we signed expires in 14 days.", "The Stripe quote we signed expires on 2026-04-15."),
    ("We rolled back when the deploy failed yesterday.", "We rolled back when the deploy failed on 2026-03-31."),
    ("Nothing changed after last Monday.", "Nothing changed after 2026-03-30."),
    ("Kafka lag alerts fired five days ago.", "Kafka lag alerts fired on 2026-03-27."),
    ("Alice said the fix ships tomorrow.", "Alice said the fix ships on 2026-04-02."),
    ("Support answered every ticket yesterday.", "Support answered every ticket on 2026-03-31."),
    ("Alice sent a message saying the deploy failed yesterday.",
     "Alice sent a message saying the deploy failed on 2026-03-31."),
    ("Bob posted a note that says the freeze ends tomorrow.", "Bob posted a note that says the freeze ends on 2026-04-02."),
    ("The example config was updated yesterday.", "The example config was updated on 2026-03-31."),
    ("We changed the wording of the banner yesterday.", "We changed the wording of the banner on 2026-03-31."),
    ("On failure the job paged Bob yesterday.", "On failure the job paged Bob on 2026-03-31."),
    ("Quotes sent last week expired yesterday.", "Quotes sent the week of 2026-03-23 expired on 2026-03-31."),
    ("The job removed anything not touched since yesterday.", "The job removed anything not touched since 2026-03-31."),
    ("The tmp reaper deleted every file that hadn't been modified since yesterday.",
     "The tmp reaper deleted every file that hadn't been modified since 2026-03-31."),
    ("Caches last written yesterday were dropped.", "Caches last written on 2026-03-31 were dropped."),
    ("The quotes we sent Bob expire in 7 days.", "The quotes we sent Bob expire on 2026-04-08."),
    ("Customers who signed up last week got the old onboarding email.",
     "Customers who signed up the week of 2026-03-23 got the old onboarding email."),
])
def test_the_close_dated_reading_of_each_generic_class_is_replaced(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text", ["We review every PR opened last week.",
                                  "Every Monday we list what broke last week."])
def test_every_is_a_frequency_or_a_class_in_a_standing_rule(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text", [
    # a participle right after a noun phrase that is no subject qualifies it: no past of the sentence
    "Invoices raised today are paid tomorrow: that is the term promised on the vendor portal.",
    "Builds queued tonight finish tomorrow, per the limit agreed with the CI vendor.",
    "Refunds filed today clear tomorrow, a delay described in the billing FAQ.",
    "Refunds filed today clear tomorrow, the window described in the billing FAQ.",
    # the rule's own clause decides, not the one explaining it after a colon or a semicolon
    "Invoices raised today are paid tomorrow: that is what finance signed off in 2024.",
])
def test_a_participle_after_a_noun_phrase_does_not_date_a_standing_rule(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text,expected", [
    ("The term promised on the vendor portal changed yesterday.",
     "The term promised on the vendor portal changed on 2026-03-31."),
    ("Invoices raised today are paid tomorrow; finance confirmed it yesterday.",
     "Invoices raised today are paid tomorrow; finance confirmed it on 2026-03-31."),
    ("We hit the limit agreed with the CI vendor yesterday.", "We hit the limit agreed with the CI vendor on 2026-03-31."),
    ("The fix described in the runbook shipped yesterday.", "The fix described in the runbook shipped on 2026-03-31."),
])
def test_a_participle_after_a_noun_phrase_leaves_a_real_past_dated(text, expected):
    assert rewrite(text) == expected


def test_a_clause_read_as_generic_keeps_every_phrase_of_it():
    """The rule before the colon is generic as a whole: neither phrase of it is dated alone."""
    text = "Invoices raised today are paid tomorrow: see the vendor portal."
    assert not scan_relative_dates(text, D).replacements
    # "today's" in an imperative is generic; "from yesterday" in the same clause is not dated alone
    assert not scan_relative_dates("Check today's deploy log and the build from yesterday.", D).replacements
    # a reporting clause after a comma is its own clause: dated, beside a generic instruction
    text = "Read yesterday's error digest before opening any ticket, Bob said last week."
    assert rewrite(text) == "Read yesterday's error digest before opening any ticket, Bob said the week of 2026-03-23."


@pytest.mark.parametrize("text", [
    "Morning routine the user asked for: review yesterday's deploy errors before opening any new ticket.",
    "Evening checklist: archive today's alert report before closing the laptop.",
    "Habit the user wants: compare today's error rate with yesterday's before paging anyone.",
    "When you take over the pager, read yesterday's incident summary.",
    "At the start of a shift, scan yesterday's alerts.",
])
def test_an_imperative_with_a_recurring_occasion_is_a_standing_instruction(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text,expected", [
    # no recurring occasion: a one-off to-do with a dated object
    ("Retry the export that failed yesterday.", "Retry the export that failed on 2026-03-31."),
    ("To-do the user asked for: retry the export that failed yesterday.",
     "To-do the user asked for: retry the export that failed on 2026-03-31."),
    ("Send the invoice tomorrow before lunch.", "Send the invoice on 2026-04-02 before lunch."),
    # in a checklist, a definite thing with a past of its own is still a dated one-off
    ("Checklist: rerun the backfill that crashed yesterday.", "Checklist: rerun the backfill that crashed on 2026-03-31."),
    # the occasion's words in a past report
    ("Yesterday we reviewed the deploy errors before opening any new ticket.",
     "On 2026-03-31 we reviewed the deploy errors before opening any new ticket."),
])
def test_a_one_off_to_do_or_a_report_is_dated(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("In 5 days the trial on the staging org lapses.", "On 2026-04-06 the trial on the staging org lapses."),
    ("In 5 days, the trial on the staging org lapses.", "On 2026-04-06, the trial on the staging org lapses."),
    ("Note: in 5 days the trial on the staging org lapses.", "Note: on 2026-04-06 the trial on the staging org lapses."),
    ("We upgraded. In 3 days our old plan ends.", "We upgraded. On 2026-04-04 our old plan ends."),
])
def test_in_n_days_before_a_definite_subject_is_a_date(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text", [
    "In 7 days quotes expire.",
    "In 30 days, unpaid invoices are sent to collections.",
    "We moved the deploy. Price quotes expire in 7 days.",  # a class subject in a later sentence too
])
def test_in_n_days_for_a_class_is_a_period_wherever_it_stands(text):
    assert not scan_relative_dates(text, D).replacements


# --- round 3: a clause before a colon, a reported habit, a class in each clause ---------------------


@pytest.mark.parametrize("text,expected", [
    ("Agreed with Priya today: we freeze the schema until the audit ends.",
     "Agreed with Priya on 2026-04-01: we freeze the schema until the audit ends."),
    ("The user gave feedback this afternoon: the summary is too long.",
     "The user gave feedback on the afternoon of 2026-04-01: the summary is too long."),
    ("Learned the hard way yesterday evening: the staging DB has no backups.",
     "Learned the hard way on the evening of 2026-03-31: the staging DB has no backups."),
    ("- Reproduced it this morning: the crash needs an empty cache.",
     "- Reproduced it on the morning of 2026-04-01: the crash needs an empty cache."),
])
def test_a_clause_before_a_colon_is_a_statement_and_dated(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize("text", [
    "Today: review the PR queue.",
    "- Tomorrow: ship the exporter.",
    "Plan for tomorrow: finish the exporter.",
    "Deploys scheduled for tomorrow: api, web.",  # a class's participle: a label's qualifier, in doubt
    "Weekly review template: what broke last week, what ships next week.",
])
def test_a_verbless_label_before_a_colon_is_left(text):
    assert not scan_relative_dates(text, D).replacements


def test_a_habit_inside_a_reported_instruction_does_not_make_the_report_generic():
    assert rewrite("Earlier today the user asked me to always run the linter before committing.") == \
        "On 2026-04-01 the user asked me to always run the linter before committing."
    assert rewrite("Yesterday Dana told us to always tag releases.") == "On 2026-03-31 Dana told us to always tag releases."


@pytest.mark.parametrize("text", [
    "The user asked me to always check today's logs first.",  # the phrase is the habit's own
    "Every morning the user asks me to always run the linter; today too.",
    "The user always asks me to run the linter; they asked again today.",
])
def test_a_phrase_in_the_habit_or_a_habit_of_the_report_stays_generic(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text", [
    "Auth settings for the mobile API: password reset links expire in 30 minutes, refresh tokens expire "
    "in 14 days, and access tokens last one hour.",
    "Support SLA for the helpdesk bot: tickets opened today get a first human response by tomorrow noon, "
    "and P1 tickets opened after 5 pm get one within 30 minutes.",
    "Fulfilment cutoff in the shop backend: anything paid for today before 2 pm leaves the warehouse tomorrow; "
    "later payments go out the day after tomorrow.",
])
def test_a_class_opening_any_clause_is_generic(text):
    assert not scan_relative_dates(text, D).replacements


@pytest.mark.parametrize("text,expected", [
    ("We rotated the signing key yesterday, and the new key expires in 14 days.",
     "We rotated the signing key on 2026-03-31, and the new key expires on 2026-04-15."),
    ("Support SLA: tickets opened today got a first response by 3 pm, and P1 tickets got one within 30 minutes.",
     "Support SLA: tickets opened on 2026-04-01 got a first response by 3 pm, and P1 tickets got one within 30 minutes."),
    ("The order we paid today before 2 pm leaves the warehouse tomorrow.",
     "The order we paid on 2026-04-01 before 2 pm leaves the warehouse on 2026-04-02."),
    ("Orders placed today ship tomorrow; the courier strike ended yesterday.",
     "Orders placed today ship tomorrow; the courier strike ended on 2026-03-31."),
    ("Tickets opened today get a reply by tomorrow noon, and the backlog we cleared yesterday stays at zero.",
     "Tickets opened today get a reply by tomorrow noon, and the backlog we cleared on 2026-03-31 stays at zero."),
])
def test_a_definite_or_past_clause_beside_a_class_is_dated(text, expected):
    assert rewrite(text) == expected
