"""The stage runner is the one place stage failures are caught: a bug in one stage (or in the
heuristics it calls) costs that stage's proposals, is reported in the plan's errors, and the other
stages and the deterministic plan go on."""

from __future__ import annotations

import pytest

import pipeline.stages as stages
from helpers import FIXTURES
from stage_helpers import plan_with, settings_for


class _Broken:
    name = "broken"

    def applies(self, corpus, settings):
        return True

    def run(self, ctx, outcome):
        raise ValueError("a bug in a heuristic")


def test_a_stage_that_raises_is_an_error_in_the_plan_and_the_others_still_run(monkeypatch):
    honest = stages.all_stages()
    plain = plan_with(FIXTURES / "bank", settings_for("stub"))
    monkeypatch.setattr(stages, "all_stages", lambda: [_Broken(), *honest])
    monkeypatch.delenv("MEMCONSOLIDATE_DEBUG", raising=False)
    plan = plan_with(FIXTURES / "bank", settings_for("stub"))
    assert {"stage": "broken", "message": "internal error: ValueError: a bug in a heuristic"} in plan["errors"]
    assert plan["actions"] == plain["actions"] and plan["findings"] == plain["findings"]


def test_with_debug_set_the_bug_is_raised(monkeypatch):
    monkeypatch.setattr(stages, "all_stages", lambda: [_Broken()])
    monkeypatch.setenv("MEMCONSOLIDATE_DEBUG", "1")
    with pytest.raises(ValueError, match="a bug in a heuristic"):
        plan_with(FIXTURES / "bank", settings_for("stub"))
