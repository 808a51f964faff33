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
    theirs = [["a host's object"]]  # a container the collector tracks
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        plan_with(FIXTURES / "bank", settings_for("stub"))
        # Theirs still frozen (outside every generation the collector walks: gc.unfreeze would put
        # it back), and nothing of ours frozen on top (a few of theirs may be freed meanwhile by
        # reference counting, a cache entry the plan evicts, so the count can only go down).
        assert not any(o is theirs for o in gc.get_objects())
        assert gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def _two_banks(root):
    for name in ("alpha", "beta"):
        (root / name).mkdir(parents=True)
        (root / name / "memories.jsonl").write_text(
            "".join(f'{{"id": "{name}{i}", "text": "note {i} of {name} about the build cache", "revision": 1}}\n' for i in range(20)))
    return root


def test_a_read_freezes_only_for_the_plan_that_follows_it(tmp_path):
    """The reader freezes a bank's memories only in the window a command opens from the read to its
    plan, and the window leaves nothing frozen: with several banks, or no plan at all."""
    from pipeline.layouts.registry import open_store
    from pipeline.storage.gc_pause import reading_for_a_plan
    from pipeline.workflow import run_store

    store = _two_banks(tmp_path / "store")
    assert gc.get_freeze_count() == 0
    open_store(store, settings_for("none"))  # alone: nothing frozen, nothing to thaw later
    assert gc.get_freeze_count() == 0
    with reading_for_a_plan():
        open_store(store, settings_for("none"))
        assert gc.get_freeze_count() > 0  # frozen for the plan (the perf it is for)
    assert gc.get_freeze_count() == 0  # no plan came: thawed as the window closed
    plan_with(store, settings_for("stub"))
    assert gc.get_freeze_count() == 0
    run_store(str(store), settings_for("none"), lambda _: None, if_due=False)  # ran: state.json says so
    assert gc.get_freeze_count() == 0
    skipped = run_store(str(store), settings_for("none"), lambda _: None, if_due=True)
    assert not skipped.ran and gc.get_freeze_count() == 0  # not due: read, no plan, nothing left frozen


def test_a_store_read_without_a_plan_never_costs_a_host_its_freeze(tmp_path):
    """A read with no plan after it, then a host that lets go of every frozen object and freezes its
    own: the host keeps its freeze through our next read and plan (a read's freeze was once left in
    place and counted as ours, then frozen on top of theirs and thawed with it)."""
    from pipeline.layouts.registry import open_store
    from pipeline.workflow import plan_store

    store = _two_banks(tmp_path / "store")
    open_store(store, settings_for("stub"))
    gc.unfreeze()
    gc.freeze()  # the host's own
    try:
        frozen = gc.get_freeze_count()
        plan_store(str(store), settings_for("stub"), lambda _: None)
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_a_window_inside_another_leaves_the_outer_one_freezing_and_thaws_with_it(tmp_path):
    from pipeline.layouts.registry import open_store
    from pipeline.storage.gc_pause import reading_for_a_plan

    store = _two_banks(tmp_path / "store")
    with reading_for_a_plan():
        with reading_for_a_plan():
            pass
        open_store(store, settings_for("none"))
        assert gc.get_freeze_count() > 0  # the inner close did not end the outer window
        with reading_for_a_plan():
            pass
        assert gc.get_freeze_count() > 0  # nor thaw what the outer window's read froze
    assert gc.get_freeze_count() == 0
