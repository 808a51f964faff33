"""The collector during the LLM stages: the objects alive when they start (the corpus, the
deterministic outcome) are frozen out of every collection until the stages end (issue 14)."""

from __future__ import annotations

import gc

import pytest

import pipeline.stages as stages
from helpers import FIXTURES
from pipeline.storage.gc_pause import gc_frozen
from stage_helpers import plan_with, settings_for


class _Watcher:
    name = "watcher"
    seen: list[int] = []

    def applies(self, corpus, settings):
        return True

    def run(self, ctx, outcome):
        self.seen.append(gc.get_freeze_count())
        return outcome


def test_the_stages_run_with_what_was_alive_before_them_frozen_and_it_is_thawed_after(monkeypatch):
    watcher = _Watcher()
    honest = stages.all_stages()
    monkeypatch.setattr(stages, "all_stages", lambda: [watcher, *honest, watcher])
    assert gc.get_freeze_count() == 0
    plain = plan_with(FIXTURES / "bank", settings_for("stub"))
    assert len(watcher.seen) == 2 and all(n > 0 for n in watcher.seen)
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(stages, "all_stages", lambda: honest)
    assert plan_with(FIXTURES / "bank", settings_for("stub")) == plain


def test_the_window_thaws_on_an_error_and_leaves_what_someone_else_froze_alone():
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), gc_frozen():
        assert gc.get_freeze_count() > 0
        raise RuntimeError("the window closes on an error too")
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_frozen():
            pass
        assert gc.get_freeze_count() == frozen  # not thawed by us
    finally:
        gc.unfreeze()


def test_with_the_collector_off_nothing_is_frozen():
    gc.disable()
    try:
        with gc_frozen():
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_plan_leaves_what_someone_else_froze_frozen():
    """A host that froze its own objects (a server before it forks its workers) keeps them frozen
    through a bank's read and plan: the reader's freeze is the plan's to thaw, theirs is not."""
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        plan_with(FIXTURES / "bank", settings_for("stub"))
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
