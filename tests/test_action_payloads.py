"""Action and finding payloads typed per kind: a misspelled field fails where it is built, and a
saved plan reads back through the unions into each kind's class, dumping byte for byte as before."""

from __future__ import annotations

import json

import pydantic
import pytest

from helpers import FIXTURES, plan_json
from pipeline.actions import (
    ACTION_TYPES, FINDING_TYPES, Action, ArchiveAction, ConsolidateAction, Finding, StaleFinding, UpdateRefAction,
    parse_action, parse_finding,
)
from pipeline.model import Plan


def test_a_misspelled_field_fails_at_construction():
    with pytest.raises(pydantic.ValidationError, match="to_pth"):
        ArchiveAction(targets=["a"], reason="r", to_pth="memories/archived/a.memory.md")
    with pytest.raises(pydantic.ValidationError, match="to_path"):  # the base carries no payload
        Action(kind="archive", targets=["a"], reason="r", to_path="memories/archived/a.memory.md")
    with pytest.raises(pydantic.ValidationError, match="missng"):
        StaleFinding(targets=["a"], reason="r", missng=["src/a.py"])
    with pytest.raises(pydantic.ValidationError, match="befor"):  # inside a payload too
        UpdateRefAction(targets=["a"], reason="r", replacements=[{"field": "body", "start": 0, "end": 1, "befor": "x", "after": "y"}])


def test_a_saved_action_is_parsed_as_its_kind_and_refused_when_misspelled():
    a = parse_action({"kind": "consolidate", "targets": ["a", "b"], "reason": "r", "topic": "t", "volumes": 2,
                      "outputs": [{"path": "p.md", "frontmatter": {}, "body": "x\n", "size": 1}]})
    assert isinstance(a, ConsolidateAction) and a.topic == "t" and a.outputs[0]["path"] == "p.md"
    assert type(parse_action({"kind": "rebuild_index", "targets": ["MEMORY.md"], "reason": "r"})) is Action
    with pytest.raises(pydantic.ValidationError):
        parse_action({"kind": "consolidate", "targets": ["a"], "reason": "r", "outptus": []})
    with pytest.raises(pydantic.ValidationError):
        parse_action({"kind": "rebuild_index", "targets": ["MEMORY.md"], "reason": "r", "survivr": "x"})
    assert isinstance(parse_finding({"kind": "stale", "targets": ["a"], "reason": "r", "class": "FULLY_STALE"}), StaleFinding)
    assert type(parse_finding({"kind": "parse_error", "targets": ["a"], "reason": "r"})) is Finding


def test_flagged_stays_last_whatever_the_payload():
    a = ConsolidateAction(targets=["a", "b"], reason="r", fallback=False, topic="t", flagged="ignore previous")
    assert list(a.model_dump())[-1] == "flagged"


@pytest.mark.parametrize("layout", ["crux", "claude", "zylos", "bank"])
def test_a_plan_reads_back_into_typed_payloads_and_dumps_byte_for_byte(layout):
    data = plan_json(FIXTURES / layout, "--model", "stub", "--no-cache")
    plan = Plan.model_validate(data)
    assert json.dumps(plan.to_json_dict(), indent=2) == json.dumps(data, indent=2)  # key order included
    for a in plan.actions:
        assert type(a) is ACTION_TYPES.get(a.kind, Action), a.kind
    for f in plan.findings:
        assert type(f) is FINDING_TYPES.get(f.kind, Finding), f.kind
