"""Two crux memories of one slug in different type folders (red-team 4, bugs 6 and 7): they share one
tracker (the seed keys trackers by slug), so a nightly `run` must not sync its strength to one of
them and the next run's to the other; and the plan must not offer a move onto the other's file that
apply never makes. Whatever cannot settle is a `shared_slug` finding; a second `run` does nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import NOW, files, run_cli, snapshot

SLUG = "cache-feature-flags-at-the-edge"
IDEA = f"memories/idea/{SLUG}.memory.md"  # strength 6 in the fixture: promoted to learning
LEARNING = f"memories/learning/{SLUG}.memory.md"
TRACKER = f".crux/reference-tracking/{SLUG}.refs.yml"  # strength 6

SECOND = """---
title: Cache feature flags at the edge (learning notes)
type: learning
strength: 2
created: 2026-10-01
modified: 2026-10-01
---
A different memory that shares the slug: flags cached for 30s at the CDN.
"""


@pytest.fixture
def store(fixture_store) -> Path:
    """The crux fixture with a second memory of the idea's slug in learning/, at another strength."""
    root = fixture_store("crux")
    (root / LEARNING).write_text(SECOND)
    return root


def run_json(root: Path, *extra: str) -> dict:
    res = run_cli("run", str(root), "--now", NOW, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def plan(root: Path, *extra: str) -> dict:
    res = run_cli("plan", str(root), "--now", NOW, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def automatic(p: dict) -> list[tuple[str, str]]:
    return [(a["kind"], a["targets"][0]) for a in p["actions"] if not a["needs_user"]]


@pytest.mark.parametrize("model", ["none", "stub"])
def test_a_second_run_on_a_store_sharing_a_slug_does_nothing(store, model):
    before = (store / TRACKER).read_bytes()
    first = run_json(store, "--model", model, "--max-retire", "1")
    assert first["apply"]["applied"]  # the fixture's own clean-up
    assert (store / TRACKER).read_bytes() == before  # not synced to either memory
    tree = files(store)
    second = run_json(store, "--model", model, "--max-retire", "1")  # the same day: nothing to age
    assert second["apply"]["applied"] == [] and second["apply"]["run_id"] is None
    assert files(store) == tree
    assert automatic(plan(store, "--model", model)) == []


@pytest.mark.parametrize("model", ["none", "stub"])
def test_a_second_run_on_the_crux_fixture_does_nothing(fixture_store, model):
    root = fixture_store("crux")
    assert run_json(root, "--model", model, "--max-retire", "1")["apply"]["applied"]
    assert run_json(root, "--model", model, "--max-retire", "1")["apply"]["applied"] == []
    assert automatic(plan(root, "--model", model)) == []


def test_the_shared_slug_is_a_finding_naming_both_files(store):
    p = plan(store, "--model", "stub")
    assert [(a["kind"], a["targets"][0]) for a in p["actions"] if SLUG in a["targets"][0]] == []
    [f] = [f for f in p["findings"] if f["kind"] == "shared_slug"]
    assert f["targets"] == [IDEA, LEARNING]
    assert f"one tracker, {TRACKER}, counts the references of both" in f["reason"]
    assert f"6 in {IDEA}, 2 in {LEARNING}" in f["reason"]
    assert f"promote of {IDEA} to learning (strength 6 ≥ threshold 5) not proposed: {LEARNING} is there" in f["reason"]


def test_every_move_the_plan_offers_is_applied_when_selected_and_undone_byte_for_byte(store):
    # Each move selected by number and fingerprint, those that need the user too: none is skipped.
    before = snapshot(store)
    p = plan(store, "--model", "none")
    moves = [f"{i}={a['fingerprint']}" for i, a in enumerate(p["actions"], 1) if a["kind"] in ("promote", "demote", "archive")]
    assert moves
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", "--json", "--select", ",".join(moves))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["skipped"] == [] and len(out["applied"]) == len(moves)
    assert (store / IDEA).read_text() == (before[IDEA]).decode() and (store / LEARNING).read_text() == SECOND
    assert run_cli("undo", str(store)).returncode == 0
    assert snapshot(store) == before
