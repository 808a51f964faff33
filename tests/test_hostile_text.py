"""Memory text that once made a stub heuristic raise: each must leave the plan, and its stage, whole.

A stage that raises on one memory's text loses every proposal of that stage for the whole store, on
every run, until someone edits the memory: the stub's judges must answer for any text.
"""

from __future__ import annotations

import json

import pytest

from helpers import plan_json
from pipeline.stages.heuristics.conflicts import clash_clauses, judge_conflict_quoted


def bank_store(tmp_path, *records: dict):
    bank = tmp_path / "store" / "blog"
    bank.mkdir(parents=True)
    (bank / "memories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return tmp_path / "store"


# Not blank, yet nothing but clause breaks: " so " twice over, a dash, a stop, a semicolon.
@pytest.mark.parametrize("text", ["so  so", "\u2014", ".", ";", "like  which"])
def test_a_text_of_clause_breaks_alone_is_no_statement(text):
    verdict = judge_conflict_quoted("The deploy runs on Fridays.", text)
    assert verdict[:2] == (False, "none")
    assert judge_conflict_quoted(text, text)[:2] == (False, "none")
    clash_clauses(text, "The deploy runs on Fridays.")


def test_a_store_with_such_a_memory_keeps_its_conflict_stage(tmp_path):
    store = bank_store(
        tmp_path,
        {"id": "a", "text": "The deploy runs on Fridays.", "tags": ["deploy", "ops"], "created_at": "2026-09-01T08:00:00Z"},
        {"id": "b", "text": "so  so", "tags": ["deploy", "ops"], "created_at": "2026-09-02T08:00:00Z"},
    )
    assert plan_json(store, "--model", "stub", "--no-cache")["errors"] == []
