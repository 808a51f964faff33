"""The public API in `pipeline/__init__.py`: every exported name resolves, and a plan, an apply and
an undo through it do what the command line does."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pipeline
from helpers import FIXTURES, NOW, plan_json, snapshot


def test_every_name_in_all_resolves():
    for name in pipeline.__all__:
        assert getattr(pipeline, name) is not None, name
    assert set(pipeline.__all__) >= {"open_store", "build_plan", "apply_plan", "undo", "status", "Plan", "Action", "Finding"}


def test_plan_apply_undo_through_the_api_match_the_cli(tmp_path):
    store = tmp_path / "crux"
    shutil.copytree(FIXTURES / "crux", store)
    before = snapshot(store)
    settings = pipeline.Settings(now=dt.date.fromisoformat(NOW), llm={"model": "none"})
    corpus, settings = pipeline.open_store(store, settings)
    plan = pipeline.build_plan(corpus, settings)
    assert json.loads(json.dumps(plan.to_json_dict())) == plan_json(store, "--model", "none")

    result = pipeline.apply_plan(corpus, plan, settings)
    assert result.record is not None and result.changes.applied
    assert snapshot(store) != before
    assert pipeline.status(store, settings)["applied_runs"] == [result.run_id]

    pipeline.undo(store, result.run_id)
    assert snapshot(store) == before
