"""The LLM stages, run in order after the deterministic pass.

Candidates are chosen by code, the model decides through one client (real, stub or mock), and every
proposal passes the same guards as a deterministic one. A stage that fails is recorded in `errors`
and its proposals are dropped; a budget stop ends the remaining stages too. The runner below is the
one place stage failures are caught: a call that failed, a budget, or a bug in a stage or its
heuristics (an internal error, with MEMCONSOLIDATE_DEBUG=1 raised instead).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable

from ..config import Settings
from ..layouts.registry import layout_of
from ..model import Corpus, StageError, Stats
from ..rules.outcome import Outcome
from ..storage.gc_pause import gc_frozen
from .base import Stage, StageContext, StageProgress
from .model_text import flag_injections


@dataclass(frozen=True)
class StageEntry:
    """A stage as the runner lists it: its name and the module whose `STAGE` runs it, imported only
    when the stage may apply. A layout's own stage (`by_layout`) applies only where the store's layout
    names it (`Layout.stages`), so elsewhere its module is never imported: building a stage's pydantic
    models costs milliseconds, and the metadata stage brings the whole crux layout with it. The import
    registers the stage's stub, before the stage's first call."""

    name: str
    module: str
    by_layout: bool = False

    def stage(self) -> Stage:
        stage: Stage = importlib.import_module(self.module).STAGE
        return stage

    def applies(self, corpus: Corpus, settings: Settings) -> bool:
        if self.by_layout and self.name not in layout_of(corpus).stages(settings):
            return False
        return self.stage().applies(corpus, settings)

    def run(self, ctx: StageContext, outcome: Outcome) -> Outcome:
        return self.stage().run(ctx, outcome)


# In the order they run.
STAGES = (
    StageEntry("reorder", f"{__name__}.reorder"),
    StageEntry("conflicts", f"{__name__}.conflicts"),
    StageEntry("rules", f"{__name__}.standing_rules", by_layout=True),
    StageEntry("metadata", f"{__name__}.consolidate.stage", by_layout=True),
    StageEntry("split", f"{__name__}.split", by_layout=True),
    StageEntry("compress", f"{__name__}.compress", by_layout=True),
)


def all_stages() -> list[Stage]:
    """Every stage, in order; a stage's code is imported when it may apply (`StageEntry`), and
    `--model none` never imports any."""
    return list(STAGES)


def register_stubs() -> None:
    """Import every stage, and with it register its stub: for code that answers a stage's calls by
    its name without running the stages (the runner imports only the stages that may apply)."""
    for entry in STAGES:
        entry.stage()


def stage_runner(
    settings: Settings, client: Any = None, only: set[str] | None = None,
    progress: Callable[[StageProgress], None] | None = None,
):
    """The function that runs the LLM stages for this model, or None for `--model none`.

    `client` replaces the one the settings would make (it is then not closed here); `only` runs
    just the named stages; `progress` hears where each stage is, as its batches come back and when it
    ends (a progress bar for long runs with a real model).
    """
    if settings.llm.model == "none" and client is None:
        return None

    def run(corpus: Corpus, settings: Settings, outcome: Outcome) -> tuple[Outcome, list[StageError], Stats]:
        with gc_frozen():  # the corpus and the outcome live to the end (see storage/gc_pause.py)
            return _run(corpus, settings, outcome)

    def _run(corpus: Corpus, settings: Settings, outcome: Outcome) -> tuple[Outcome, list[StageError], Stats]:
        from ..llm import BudgetExceeded, StageCallError, make_client
        from ..llm.errors import ServerUnreachable

        errors: list[StageError] = []
        active = client or make_client(settings.llm)
        if active is None:
            return outcome, errors, Stats()
        ctx = StageContext(corpus=corpus, settings=settings, client=active)
        unreachable: ServerUnreachable | None = None
        try:
            for stage in all_stages():
                if (only and stage.name not in only) or not stage.applies(corpus, settings):
                    continue
                if unreachable is not None:
                    # The circuit is open: the stages after it are not run, and the plan says so.
                    errors.append(StageError(stage=stage.name, message=f"not run: {unreachable.reason}"))
                    continue
                if progress:
                    ctx.progress = _reporter(progress, stage.name, active)
                    ctx.progress(0, 0)
                failed = False
                try:
                    outcome = stage.run(ctx, outcome)
                except BudgetExceeded as exc:
                    errors.append(StageError(stage=stage.name, message=exc.reason))
                    _ended(progress, stage.name, active, failed=True)
                    break
                except StageCallError as exc:
                    errors.append(StageError(stage=stage.name, message=exc.reason))
                    unreachable = getattr(active, "unreachable", None)
                    failed = True
                except Exception as exc:  # noqa: BLE001 - a bug in one stage costs its proposals, not the plan
                    if os.environ.get("MEMCONSOLIDATE_DEBUG"):
                        raise
                    errors.append(StageError(stage=stage.name, message=f"internal error: {type(exc).__name__}: {exc}"))
                    failed = True
                finally:
                    errors.extend(StageError(stage=stage.name, message=note) for note in ctx.notes)
                    ctx.notes.clear()
                # not in a `finally`: a stage cut short by Ctrl-C is never reported as ended
                _ended(progress, stage.name, active, failed=failed)
        finally:
            close = getattr(active, "close", None)
            if close and client is None:
                close()
        flagged = Outcome(flag_injections(outcome.actions), outcome.findings)
        return flagged, errors, active.stats

    return run


def _ended(progress: Callable[[StageProgress], None] | None, stage: str, client: Any, failed: bool) -> None:
    if progress:
        s = client.stats
        progress(StageProgress(stage, 0, 0, s.llm_calls, s.cache_hits, finished=True, failed=failed))


def _reporter(progress: Callable[[StageProgress], None], stage: str, client: Any) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        progress(StageProgress(stage, done, total, client.stats.llm_calls, client.stats.cache_hits))

    return report
