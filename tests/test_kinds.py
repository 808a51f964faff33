"""The kinds table: every kind has one row, and a typed kind is its string in the plan JSON."""

from __future__ import annotations

import json

import pydantic
import pytest

from pipeline.kinds import ACTIONS, CLAIM_KINDS, FINDINGS, ActionKind, FindingKind, action_rank, claim_rank, is_automatic
from pipeline.model import Action, Finding


def test_every_kind_has_exactly_one_row():
    assert list(ACTIONS) == list(ActionKind)
    assert list(FINDINGS) == list(FindingKind)
    assert not {k.value for k in ActionKind} & {k.value for k in FindingKind}


def test_a_typed_kind_serializes_as_its_string():
    a = Action(kind="merge_duplicate", targets=["a", "b"], survivor="a", reason="r")
    assert a.kind is ActionKind.MERGE_DUPLICATE and a.kind == "merge_duplicate"
    dumped = json.dumps(a.model_dump(mode="json"))
    assert '"kind": "merge_duplicate"' in dumped
    assert json.dumps({"k": a.kind}) == '{"k": "merge_duplicate"}'


def test_an_unknown_kind_is_refused():
    with pytest.raises(pydantic.ValidationError):
        Action(kind="merge_duplicates", targets=["a"], reason="typo")
    with pytest.raises(pydantic.ValidationError):
        Finding(kind="stalе", targets=["a"], reason="homoglyph")


def test_claims_strongest_first_and_only_conflicts_wait_for_a_policy():
    assert [k.value for k in CLAIM_KINDS] == [
        "merge_duplicate", "prune_stale", "consolidate", "archive", "demote", "promote", "compress",
    ]
    assert claim_rank("conflict") is None
    assert [k for k in ActionKind if not is_automatic(k)] == [ActionKind.CONFLICT]
    assert action_rank("not_a_kind") == len(ACTIONS)
