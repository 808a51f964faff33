"""The LLM stages, run in order after the deterministic pass.

Candidates are chosen by code, the model decides through one client (real, stub or mock), and every
proposal passes the same guards as a deterministic one. A stage that fails is recorded in `errors`
and its proposals are dropped; a budget stop ends the remaining stages too.
"""

from __future__ import annotations

from ..config import Settings
from ..model import Corpus, StageError, Stats
from ..rules.outcome import Outcome
from .base import Stage, StageContext


def all_stages() -> list[Stage]:
    # Imported here: registering the stubs happens at import, and `--model none` never pays for it.
    from . import conflicts, reorder, rules

    return [reorder.STAGE, conflicts.STAGE, rules.STAGE]


def stage_runner(settings: Settings):
    """The function that runs every LLM stage for this model, or None for `--model none`."""
    if settings.llm.model == "none":
        return None

    def run(corpus: Corpus, settings: Settings, outcome: Outcome) -> tuple[Outcome, list[StageError], Stats]:
        from ..llm import BudgetExceeded, StageCallError, make_client

        errors: list[StageError] = []
        client = make_client(settings.llm)
        if client is None:
            return outcome, errors, Stats()
        ctx = StageContext(corpus=corpus, settings=settings, client=client)
        try:
            for stage in all_stages():
                if not stage.applies(corpus, settings):
                    continue
                try:
                    outcome = stage.run(ctx, outcome)
                except BudgetExceeded as exc:
                    errors.append(StageError(stage=stage.name, message=exc.reason))
                    break
                except StageCallError as exc:
                    errors.append(StageError(stage=stage.name, message=exc.reason))
        finally:
            close = getattr(client, "close", None)
            if close:
                close()
        return outcome, errors, client.stats

    return run
