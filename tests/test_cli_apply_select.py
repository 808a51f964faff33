"""apply: checks before it plans, numbers that match the plan, choices named when a pick is wrong."""

import json
import re

import pytest

from helpers import NOW, run_cli


def test_apply_off_a_terminal_without_yes_plans_and_writes_nothing(bank_store, monkeypatch):
    import pipeline.workflow

    def no_plan(*a, **k):
        raise AssertionError("planned before refusing")

    monkeypatch.setattr(pipeline.workflow, "build_plan", no_plan)
    res = run_cli("apply", str(bank_store), "--now", NOW)
    assert res.returncode == 2 and "--yes" in res.stderr and len(res.stderr.splitlines()) == 1
    assert not (bank_store / ".memconsolidate").exists()  # no lock file, no state folder


def plan_numbers(text: str) -> dict[int, str]:
    """{number: the line's first target} from the human plan."""
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^ +(\d+)\. (\S+)", text, re.M)}


def test_plan_numbers_are_the_json_order_and_select_takes_them(bank_store):
    human = run_cli("plan", str(bank_store), "--now", NOW).stdout
    actions = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)["actions"]
    numbers = plan_numbers(human)
    assert sorted(numbers) == list(range(1, len(actions) + 1))
    for n, first in numbers.items():
        assert any(t.endswith(first.split(" ")[0]) for t in actions[n - 1]["targets"]), (n, first)
    assert human == run_cli("plan", str(bank_store), "--now", NOW).stdout  # stable
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", "3")
    assert res.returncode == 0, res.stderr
    ran = re.findall(r"^ +(\d+)\. (\w+)", res.stdout, re.M)
    assert ran == [("3", actions[2]["kind"])], res.stdout
    assert "1 action," in res.stdout


@pytest.mark.parametrize("pick, expect", [
    ("merge", "kinds: merge_duplicate, prune_stale"),
    ("99", "numbers: 1-7"),
])
def test_unknown_kind_or_number_names_the_choices(bank_store, pick, expect):
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", pick)
    assert res.returncode == 2 and expect in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr


def test_a_wrong_kind_is_reported_before_anything_is_written(bank_store):
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", "nonsense")
    assert res.returncode == 2 and not (bank_store / ".memconsolidate").exists()


@pytest.mark.parametrize("pick", ["conflict", "4"])
def test_selecting_a_conflict_says_resolve_is_needed(bank_store, pick):
    actions = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)["actions"]
    assert actions[3]["kind"] == "conflict"
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", pick)
    assert res.returncode == 2 and "--resolve" in res.stderr, res.stderr
    ok = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", pick, "--resolve", "keep-both")
    assert ok.returncode == 0, ok.stderr
    assert re.search(r"^ +4\. conflict", ok.stdout, re.M), ok.stdout
