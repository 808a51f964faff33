"""The stub's conflict judge reads statements, not markup (issue 11, item 11): table rows, link
lists, wikilinks, code, template placeholders and headings are not claims; a real contradiction in
prose is still found, and every conflict action quotes the two clauses that clash."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import NOW, plan_json

from pipeline.stages.heuristics.conflicts import clash_clauses, judge_conflict, judge_conflict_quoted
from pipeline.stages.heuristics.conflict_statements import statement_lines, statements

TABLE_A = """# Crate status

| crate | adopt | priority |
|-------|-------|----------|
| ledger-validate | yes | high |
| ledger-configs | no | medium |
"""
TABLE_B = """# Crate status

| crate | adopt | priority |
|-------|-------|----------|
| ledger-validate | no | low |
| ledger-configs | yes | medium |
"""


@pytest.mark.parametrize(
    "a, b",
    [
        (TABLE_A, TABLE_B),
        ("See [[deploy_rules]] and [[never_deploy_friday]] for the deploy rules.", "Deploy rules: [[deploy_rules]]."),
        ("- [Deploy on Fridays](deploy_friday.md)\n- [Release checklist](release.md)",
         "- [Never deploy on Fridays](no_deploy_friday.md)\n- [Release checklist](release.md)"),
        ("```sh\n# always run the migrations first\nmake migrate\n```\nThe migration runner lives in tools.",
         "```sh\n# never run the migrations first\nmake migrate\n```\nThe migration runner lives in tools."),
        ("- `{{LAYER_PATHS}}`\n- `{{AGENT_NAME}}`", "The installer did not substitute {{LAYER_PATHS}} or {{AGENT_NAME}}."),
        ("## Never push to main\n\nBranch protection on main is on.", "## Push to main\n\nBranch protection on main is on."),
    ],
)
def test_markup_is_not_a_claim(a, b):
    assert judge_conflict(a, b)[0] is False


def test_statements_keep_prose_and_drop_markup():
    text = "---\nname: x\n---\n# Heading\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [link](x.md)\n- Retries stop on a 4xx answer.\n\n```\ncode()\n```\n"
    assert statement_lines(text) == ["Retries stop on a 4xx answer."]
    assert statements("Always squash-merge pull requests into main.") == "Always squash-merge pull requests into main."


def test_a_contradiction_in_prose_beside_markup_is_still_found_and_quoted():
    a = "# Payments\n\n| field | type |\n|---|---|\n| amount | int |\n\nAlways retry the payment provider call three times."
    b = "## Notes\n\n- [Payments](payments.md)\n\nNever retry the payment provider call three times."
    yes, kind, _why, qa, qb = judge_conflict_quoted(a, b)
    assert yes and kind == "opposing_advice"
    assert qa == "Always retry the payment provider call three times"
    assert qb == "Never retry the payment provider call three times"
    assert clash_clauses(a, b) == (qa, qb)


def test_a_model_verdict_is_quoted_with_the_closest_clauses():
    a = "The nightly export writes to the warehouse. It runs at 02:00 UTC."
    b = "Exports go to the data lake. The nightly export writes to cold storage."
    qa, qb = clash_clauses(a, b)
    assert qa == "The nightly export writes to the warehouse" and qb == "The nightly export writes to cold storage"


def claude_store(root: Path, files: dict[str, str]) -> Path:
    folder = root / ".claude" / "memory"
    folder.mkdir(parents=True)
    for i, (name, (description, body)) in enumerate(files.items()):
        type_ = ("feedback", "project")[i % 2]  # no two alike: a consolidation would take the pair out of judging
        (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n\n{body}\n")
    (folder / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"- [{n}]({n}.md) — {n}\n" for n in files))
    return root


def test_a_store_of_tables_and_wikilinks_flags_nothing_and_a_real_clash_is_quoted(tmp_path):
    root = claude_store(tmp_path / "repo", {
        "crate_status": ("which ledger crates we adopt", TABLE_A + "\nSee [[crate_plan]]."),
        "crate_plan": ("the plan for ledger crates we adopt", TABLE_B + "\nSee [[crate_status]]."),
        "squash_always": ("merging pull requests", "Always squash-merge pull requests into main."),
        "squash_never": ("merging pull requests", "Never squash-merge pull requests into main."),
    })
    plan = plan_json(root, "--model", "stub", "--now", NOW, "--no-cache")
    conflicts = [a for a in plan["actions"] if a["kind"] == "conflict"]
    assert [sorted(t.rsplit("/", 1)[-1] for t in c["targets"]) for c in conflicts] == [["squash_always.md", "squash_never.md"]]
    [c] = conflicts
    assert len(c["clauses"]) == 2 and all(q in c["reason"] for q in c["clauses"])
    assert any("Always squash-merge" in q for q in c["clauses"]) and any("Never squash-merge" in q for q in c["clauses"])


def test_the_judge_caches_are_bounded_and_change_no_verdict():
    """A memory's statements and readings are kept between the pairs it is in (issue 14 item 2), in
    bounded caches: the same verdict cold and warm, and no cache grows without limit."""
    from pipeline.stages.heuristics.conflicts import judge, needles, order, readings, words

    a, b = "Always retry the payment provider call three times.", "Never retry the payment provider call three times."
    for cached in (readings.read, readings._clauses, readings._word_part, judge._later_readings, needles._words, needles.has_number,
                   order._steps, words._token, statements):
        assert cached.cache_info().maxsize is not None
        cached.cache_clear()
    cold = judge_conflict_quoted(a, b)
    assert readings.read.cache_info().currsize > 0
    assert judge_conflict_quoted(a, b) == cold and cold[0] is True


@pytest.mark.parametrize("a, b", [
    # Real stores' false alarms: a passive about common things, and ", not X" of a common noun.
    ("In the backlog, done items are dropped from selection.", "The backlog loader keeps each batchable item in selection."),
    ("Monetary expansion feeds the reward calculation every epoch.",
     "The snapshot is taken at the epoch boundary (for parameter updates, not rewards)."),
])
def test_turning_down_a_common_noun_rejects_no_choice(a, b):
    assert judge_conflict(a, b)[0] is False


@pytest.mark.parametrize("a, b", [
    ("Feature flags are managed in our own table, not LaunchDarkly.", "Feature flags are managed in LaunchDarkly."),
    ("GraphQL was rejected for the public API.", "The public API is served with GraphQL."),
    # "instead of" contrasts two choices whatever they are called.
    ("It might be better to run the Celery workers with autoscale instead of a fixed concurrency.",
     "Celery workers must run with a fixed concurrency of 8; autoscale caused memory spikes."),
])
def test_turning_down_a_named_choice_or_an_instead_of_still_clashes(a, b):
    assert judge_conflict(a, b)[0] is True
