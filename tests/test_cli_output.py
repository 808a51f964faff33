"""What a person reads fits the terminal: wrapped at its width (100 off a terminal), continuation
lines indented, one target per line, a shared folder shown once, counts in words."""

import io
import json
import re

import pytest

from helpers import FIXTURES, NOW, run_cli
from pipeline.config import LLMConfig, Settings
from pipeline.layouts.registry import open_store
from pipeline.plan import build_plan
from pipeline.actions import parse_action
from pipeline.model import Plan
from pipeline.render.plan import render_plan
from pipeline.render.runs import render_to_apply
from pipeline.render.text import PIPE_WIDTH, plural, terminal_width, wrap
from pipeline.kinds import ACTIONS
from pipeline.text.truncate import clip_middle


def fixture_plan(layout: str):
    corpus, settings = open_store(FIXTURES / layout, Settings(now=NOW, layout=layout, llm=LLMConfig(model="none")))
    return build_plan(corpus, settings)


def long_words(line: str, width: int) -> bool:
    """A line over `width` only when one word (a path) is longer than the room there is."""
    return any(len(w) > width // 2 for w in line.split())


@pytest.mark.parametrize("layout", ["crux", "claude", "zylos", "bank"])
@pytest.mark.parametrize("width", [80, 120])
def test_plan_lines_fit_the_width(layout, width):
    text = render_plan(fixture_plan(layout), width)
    for line in text.splitlines():
        assert len(line) <= width or long_words(line, width) or line.startswith("config "), line


def test_off_a_terminal_the_width_is_100_whatever_columns_says(bank_store, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    assert terminal_width(io.StringIO()) == PIPE_WIDTH == 100
    out = run_cli("plan", str(bank_store), "--now", NOW, env={"COLUMNS": "40", "PATH": "/usr/bin"}).stdout
    assert max(len(line) for line in out.splitlines() if not line.startswith(("memconsolidate plan", "config"))) > 40


def test_continuation_lines_are_indented():
    lines = wrap("word " * 40, 30, "    1. ")
    assert lines[0].startswith("    1. word") and all(line.startswith("       ") for line in lines[1:])


def test_one_target_per_line_and_a_shared_folder_once():
    text = render_plan(fixture_plan("claude"), 100)
    folder = ".claude/agent-memory/backend-architect/"
    section = text.split("Stale entries to prune")[1].split("\n\n")[0]
    assert section.count(folder) == 1, section
    assert re.search(r"^ +\d+\. project_export_jobs\.md(  \[[^]]+\])?$", section, re.M)
    pair = text.split("Reorder candidates")[1].split("\n\n")[0]
    assert re.search(r"^ +- project_lint_order\.md$", pair, re.M) and re.search(r"^ +project_lint_order_reworded\.md$", pair, re.M)


def test_counts_are_words_not_file_s():
    assert plural(1, "action") == "1 action" and plural(2, "action") == "2 actions"
    assert plural(1, "memory", "memories") == "1 memory"
    text = render_plan(fixture_plan("bank"), 100)
    assert "action(s)" not in text and "call(s)" not in text
    assert re.search(r"^\d+ actions? \(", text, re.M)


def test_headings_are_in_the_future_tense():
    # every kind has both: the plan says what apply would do, the run report what it did
    assert all(info.plan_heading for info in ACTIONS.values())
    text = render_plan(fixture_plan("bank"), 100)
    assert "Duplicates to merge (3)" in text and "Duplicates merged" not in text


def test_plan_json_is_not_wrapped_or_numbered(bank_store):
    """The JSON is the contract: the same with any width (no terminal is asked)."""
    a = run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout
    b = run_cli("plan", str(bank_store), "--now", NOW, "--json", env={"COLUMNS": "30", "PATH": "/usr/bin"}).stdout
    assert a == b and json.loads(a)["schema"] == "memconsolidate.plan/1"


def plan_of_prunes(count: int, folder: str) -> Plan:
    """A plan of `count` prune_stale actions on `folder`m000, m001, ..."""
    actions = [parse_action({"kind": "prune_stale", "targets": [f"{folder}m{i:03}.md"], "reason": "old",
                             "target_hashes": {f"{folder}m{i:03}.md": f"{i:064x}"}}) for i in range(count)]
    return Plan(layout="claude", root="/store", now=NOW, model="none", memories=count, actions=actions)


@pytest.mark.parametrize("width", [60, 80, 100])
def test_the_prompts_list_is_one_line_an_action_within_the_width_the_fingerprint_whole(width):
    folder = "projects/-home-someone-work-a-rather-long-checkout-name/memory/"
    plan = plan_of_prunes(3, folder)
    lines = render_to_apply(plan, plan.actions, width).splitlines()
    assert lines[:2] == ["", "To apply (3):"]
    for n, (line, a) in enumerate(zip(lines[2:], plan.actions, strict=True), start=1):
        assert len(line) <= width, line
        assert line.startswith(f"  {n:>3}. prune_stale  projects/") and line.endswith(f"m{n - 1:03}.md  [{a.fingerprint()}]"), line
        assert "…" in line  # the middle of the path gave way, not its file name or the fingerprint


def test_the_prompts_list_says_how_many_more_past_twenty_lines():
    plan = plan_of_prunes(25, "notes/")
    lines = render_to_apply(plan, plan.actions).splitlines()[2:]
    assert len(lines) == 20 and lines[-1] == "  … and 6 more (in the plan above)"
    assert [line.split(".")[0].strip() for line in lines[:-1]] == [str(n) for n in range(1, 20)]
    few = render_to_apply(plan, plan.actions[:20]).splitlines()[2:]
    assert len(few) == 20 and "more" not in few[-1]


def test_clip_middle_keeps_both_ends():
    assert clip_middle("abcdefghij", 10) == "abcdefghij"
    assert clip_middle("abcdefghij", 5) == "ab…ij" and clip_middle("abcdefghij", 6) == "ab…hij"
    assert clip_middle("abcdefghij", 1) == "…" and clip_middle("abcdefghij", 0) == ""
