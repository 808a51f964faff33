"""apply: checks before it plans, numbers that match the plan, choices named when a pick is wrong."""

import json
import re

import pytest

from helpers import NOW, run_cli, snapshot


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


def plan_fingerprints(text: str) -> dict[int, str]:
    """{number: the fingerprint in brackets at the end of the action's first line} from the human plan."""
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^ +(\d+)\. .*\[(?:[^]]*; )?([0-9a-f]{8})\]$", text, re.M)}


def test_plan_numbers_are_the_json_order_and_select_takes_them(bank_store):
    human = run_cli("plan", str(bank_store), "--now", NOW).stdout
    actions = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)["actions"]
    numbers = plan_numbers(human)
    assert sorted(numbers) == list(range(1, len(actions) + 1))
    for n, first in numbers.items():
        assert any(t.endswith(first.split(" ")[0]) for t in actions[n - 1]["targets"]), (n, first)
    assert plan_fingerprints(human) == {n: a["fingerprint"] for n, a in enumerate(actions, start=1)}
    assert human == run_cli("plan", str(bank_store), "--now", NOW).stdout  # stable
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", f"3={actions[2]['fingerprint']}")
    assert res.returncode == 0, res.stderr
    ran = re.findall(r"^ +(\d+)\. (\w+)", res.stdout, re.M)
    assert ran == [("3", actions[2]["kind"])], res.stdout
    assert "1 action," in res.stdout


@pytest.mark.parametrize("pick, expect", [
    ("merge", "kinds: merge_duplicate, prune_stale"),
    ("99=0123abcd", "the plan has 7 actions"),
    ("3=0123", "NUMBER=FINGERPRINT (8 hex digits)"),
    # One wrong pin beside the right one: neither wins quietly (the last one did, so a wrong pin went unseen).
    ("3=0123abcd,3=0123abce", "given with two fingerprints, 0123abcd and 0123abce"),
])
def test_unknown_kind_or_number_names_the_choices(bank_store, pick, expect):
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", pick)
    assert res.returncode == 2 and expect in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr


def test_a_wrong_pin_beside_the_right_one_is_refused(bank_store):
    """`--select 3=WRONG,3=RIGHT`: the last pin won, so the apply ran as if the wrong one were not there."""
    right = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)["actions"][2]["fingerprint"]
    wrong = "0123abcd" if right != "0123abcd" else "0123abce"
    before = snapshot(bank_store)
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", f"3={wrong},3={right}")
    assert res.returncode == 2 and "two fingerprints" in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr
    assert snapshot(bank_store) == before


def test_a_wrong_kind_is_reported_before_anything_is_written(bank_store):
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", "nonsense")
    assert res.returncode == 2 and not (bank_store / ".memconsolidate").exists()


@pytest.mark.parametrize("pick", ["conflict", "4"])
def test_selecting_a_conflict_says_resolve_is_needed(bank_store, pick):
    actions = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)["actions"]
    assert actions[3]["kind"] == "conflict"
    pick = f"4={actions[3]['fingerprint']}" if pick == "4" else pick
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", pick)
    assert res.returncode == 2 and "--resolve" in res.stderr, res.stderr
    ok = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", pick, "--resolve", "keep-both")
    assert ok.returncode == 0, ok.stderr
    assert re.search(r"^ +4\. conflict", ok.stdout, re.M), ok.stdout


# --- the action applied is the action reviewed: numbers shift when the store changes -------------


def add_duplicates_first(store) -> None:
    """An agent writes two identical memories whose ids sort first: a merge the plan numbers 1, so
    every action after it moves down one place."""
    blog = store / "blog" / "memories.jsonl"
    record = json.loads(blog.read_text(encoding="utf-8").splitlines()[0])
    new = [dict(record, id=i, text="The office closes at 18:00 on Fridays.", tags=["office"]) for i in ("a001", "a002")]
    with blog.open("a", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in new))


def reviewed(store, n: int) -> dict:
    """Action `n` of the plan the user read (the human plan's numbers are the JSON's order)."""
    return json.loads(run_cli("plan", str(store), "--now", NOW, "--json").stdout)["actions"][n - 1]


def test_a_number_with_yes_never_applies_another_action_than_the_one_reviewed(bank_store):
    """The user reads action 3 (m010 → m011), an agent writes a memory, the user applies `--select 3
    --yes`: apply plans again, and action 3 is now another merge. It used to apply that one."""
    chosen = reviewed(bank_store, 3)
    add_duplicates_first(bank_store)
    assert reviewed(bank_store, 3)["targets"] != chosen["targets"]  # the hazard: 3 is another action now
    before = snapshot(bank_store)
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", "3", "--json")
    applied = json.loads(res.stdout)["applied"] if res.returncode == 0 else []
    assert all(a["targets"] == chosen["targets"] for a in applied), applied  # never another action
    assert res.returncode == 2 and "3=FINGERPRINT" in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr
    assert snapshot(bank_store) == before and not (bank_store / ".memconsolidate" / "runs").exists()


def test_a_number_given_with_its_fingerprint_is_refused_once_it_names_another_action(bank_store):
    chosen = reviewed(bank_store, 3)
    add_duplicates_first(bank_store)
    before = snapshot(bank_store)
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", f"3={chosen['fingerprint']}")
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert "the plan changed since it was printed" in res.stderr and "run `memconsolidate plan` again" in res.stderr
    assert snapshot(bank_store) == before and not (bank_store / ".memconsolidate" / "runs").exists()


def test_a_number_given_with_its_fingerprint_is_refused_when_its_targets_changed(bank_store):
    """Same number, same kind and targets, but a memory it merges was edited since it was reviewed:
    the merge the user approved was judged on other text."""
    chosen = reviewed(bank_store, 1)
    blog = bank_store / "blog" / "memories.jsonl"
    lines = blog.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = dict(json.loads(lines[1]), confidence=0.9, revision=2)  # m002, a member of merge 1
    blog.write_text("".join(lines) + json.dumps(edited) + "\n", encoding="utf-8")
    now = reviewed(bank_store, 1)
    assert now["targets"] == chosen["targets"] and now["fingerprint"] != chosen["fingerprint"]
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--select", f"1={chosen['fingerprint']}")
    assert res.returncode == 2 and "the plan changed since it was printed" in res.stderr, res.stderr


def test_a_number_with_its_fingerprint_applies_that_action_when_the_rest_of_the_store_changed(bank_store):
    """What the check compares is the action: a memory written elsewhere that moves no number
    leaves the reviewed action applicable, and exactly it is applied."""
    chosen = reviewed(bank_store, 3)
    ops = bank_store / "ops" / "memories.jsonl"
    record = json.loads(ops.read_text(encoding="utf-8").splitlines()[0])
    with ops.open("a", encoding="utf-8") as f:
        f.write(json.dumps(dict(record, id="o100", text="The pager rota lives in the team wiki.", tags=["pager"])) + "\n")
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--json", "--select", f"3={chosen['fingerprint']}")
    assert res.returncode == 0, res.stderr
    assert [a["targets"] for a in json.loads(res.stdout)["applied"]] == [chosen["targets"]]


def test_fingerprints_hold_across_plans_and_name_only_their_own_action(bank_store):
    first = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)["actions"]
    add_duplicates_first(bank_store)
    second = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)["actions"]
    codes = [a["fingerprint"] for a in second]
    assert len(set(codes)) == len(codes)
    for a in first:  # an action in both plans keeps its code, wherever it is numbered now
        same = [b for b in second if b["kind"] == a["kind"] and b["targets"] == a["targets"]]
        assert [b["fingerprint"] for b in same] in ([a["fingerprint"]], []), a


def test_a_saved_plan_whose_action_was_edited_is_not_read_as_the_reviewed_one(bank_store):
    import pydantic

    from pipeline.model import Plan

    data = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)
    assert Plan.model_validate(data).actions[0].fingerprint() == data["actions"][0]["fingerprint"]
    data["actions"][0]["survivor"] = data["actions"][0]["targets"][1]
    with pytest.raises(pydantic.ValidationError, match="fingerprint"):
        Plan.model_validate(data)


def test_fleet_apply_refuses_a_bare_number(bank_store):
    """Each store of a fleet numbers its own actions: a bare number is every store's action N."""
    res = run_cli("fleet", "apply", str(bank_store), "--now", NOW, "--yes", "--select", "2")
    assert res.returncode == 2 and "2=FINGERPRINT" in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr
    assert not (bank_store / ".memconsolidate").exists()


# --- which of the reviewed actions ran, and which are about to -----------------------------------


def automatic(plan: dict) -> dict[int, dict]:
    """{number: action} of what a bare `apply` applies: the plan's automatic actions."""
    return {n: a for n, a in enumerate(plan["actions"], start=1) if not a["needs_user"]}


def test_apply_json_gives_each_applied_action_its_fingerprint(bank_store):
    plan = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes", "--json")
    assert res.returncode == 0, res.stderr
    applied = json.loads(res.stdout)["applied"]
    expected = list(automatic(plan).values())
    assert [(a["kind"], a["targets"], a.get("fingerprint")) for a in applied] == [
        (a["kind"], a["targets"], a["fingerprint"]) for a in expected]
    assert all(list(a)[-1] == "fingerprint" for a in applied)  # last, as in the plan


def test_apply_json_gives_each_skipped_action_its_fingerprint(fixture_store):
    store = fixture_store("zylos")
    plan = json.loads(run_cli("plan", str(store), "--now", NOW, "--model", "none", "--json").stdout)
    (trim,) = [a for a in plan["actions"] if a["kind"] == "trim_budget"]
    out = json.loads(run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", "--json", "--select", "trim_budget").stdout)
    assert [(s["kind"], s["targets"], s.get("fingerprint")) for s in out["skipped"]] == [("trim_budget", trim["targets"], trim["fingerprint"])]
    assert "needs judgement" in out["skipped"][0]["why"]


def test_apply_prints_each_applied_actions_number_and_fingerprint_as_the_plan_does(bank_store):
    human_plan = run_cli("plan", str(bank_store), "--now", NOW).stdout
    applies = automatic(json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout))
    res = run_cli("apply", str(bank_store), "--now", NOW, "--yes")
    assert res.returncode == 0, res.stderr
    assert plan_fingerprints(res.stdout) == {n: code for n, code in plan_fingerprints(human_plan).items() if n in applies}


def to_apply_lines(prompt: str) -> list[str]:
    """The lines of apply's prompt between `To apply (N):` and the question."""
    listing = prompt.split("\nTo apply (", 1)[1]
    return listing[: listing.index("\nApply ")].split("\n")[1:]


def first_shown(action: dict) -> str:
    """The target a one-line summary starts with: a merge's first retired member."""
    return next(t for t in action["targets"] if t != action.get("survivor"))


def test_the_prompt_lists_the_actions_it_is_about_to_apply(bank_store):
    """At a terminal without --yes, apply asks before it writes: under the plan, what it is about to
    apply, one line each: number, kind, first target, the plan's brackets. It asked only `Apply 4
    actions to STORE?`, naming none of them."""
    plan = json.loads(run_cli("plan", str(bank_store), "--now", NOW, "--json").stdout)
    before = snapshot(bank_store)
    res = run_cli("apply", str(bank_store), "--now", NOW, typed="n\n")
    assert res.returncode == 1 and "declined at the prompt" in res.stderr, res.stderr
    assert snapshot(bank_store) == before
    chosen = automatic(plan)
    assert f"\nTo apply ({len(chosen)}):\n" in res.stderr, res.stderr
    lines = to_apply_lines(res.stderr)
    assert len(lines) == len(chosen), lines
    for line, (n, a) in zip(lines, chosen.items()):
        assert re.fullmatch(rf" +{n}\. {a['kind']}  {re.escape(first_shown(a))}.*\[(?:[^]]*; )?{a['fingerprint']}\]", line), line
    assert f"\nApply {len(chosen)} actions to {bank_store}? [y/N]:" in res.stderr
    # The plan shown above the prompt does not tell a user already running apply to run it.
    assert "memconsolidate apply STORE" not in res.stderr
    assert "memconsolidate apply STORE" in run_cli("plan", str(bank_store), "--now", NOW).stdout


def test_the_prompt_lists_only_the_selected_actions(bank_store):
    chosen = reviewed(bank_store, 3)
    res = run_cli("apply", str(bank_store), "--now", NOW, "--select", f"3={chosen['fingerprint']}", typed="y\n")
    assert res.returncode == 0, res.stderr
    (line,) = to_apply_lines(res.stderr)
    assert line.startswith("    3. merge_duplicate  ") and line.endswith(f"[{chosen['fingerprint']}]"), line
    assert "Apply 1 action to " in res.stderr
    assert plan_fingerprints(res.stdout) == {3: chosen["fingerprint"]}
