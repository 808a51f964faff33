"""The LLM stages with the offline stub model on the bank fixture."""

from helpers import FIXTURES, plan_json


def by_kind(plan, kind):
    return [a for a in plan["actions"] if a["kind"] == kind]


def test_stub_stages_on_bank_fixture():
    plan = plan_json(FIXTURES / "bank", "--model", "stub")
    assert plan["errors"] == []
    merges = {tuple(a["targets"]): a["source"] for a in by_kind(plan, "merge_duplicate")}
    # the moved phrase merges; the role swap does not
    assert merges[("blog/m004", "blog/m005")] == "stub:reorder"
    assert not any("blog/m006" in t and "blog/m007" in t for t in merges)
    # always/never on the same subject is a conflict that needs the user
    conflicts = by_kind(plan, "conflict")
    assert [(c["targets"], c["needs_user"], c["source"]) for c in conflicts] == [
        (["blog/m008", "blog/m009"], True, "stub:conflicts")
    ]
    # a standing instruction gets a one-line rule and is automatic; facts stay with the user
    rules = {a["targets"][0]: a for a in by_kind(plan, "promote_rule")}
    assert rules["ops/o007"]["rule"] == "Never restart the database during business hours."
    assert rules["ops/o007"]["needs_user"] is False
    assert rules["blog/m012"]["needs_user"] is True and "plain fact" in rules["blog/m012"]["reason"]
    # the hostile memory proposes nothing about itself or anything else
    assert not any("blog/m015" in a["targets"] for a in plan["actions"])
    # the cap counts the stage's merge too (fixture cap 4: three deterministic + one reorder retire 4)
    retired = sum(len(a["targets"]) - 1 for a in by_kind(plan, "merge_duplicate"))
    assert retired <= 4
    capped = [f for f in plan["findings"] if f["kind"] == "capped"]
    assert capped and "blog/m017" in capped[0]["targets"]
    assert plan["stats"]["llm_calls"] == 3


def test_stub_plan_is_deterministic():
    a = plan_json(FIXTURES / "bank", "--model", "stub")
    b = plan_json(FIXTURES / "bank", "--model", "stub")
    assert a == b
