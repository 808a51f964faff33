"""The LLM stages: candidates chosen by code, a structured-output call per batch, guards, actions."""

from __future__ import annotations

from ..config import Settings
from ..model import Corpus, StageError, Stats
from ..rules.outcome import Outcome


def stage_runner(settings: Settings):
    """The function that runs every LLM stage for this model, or None for `--model none`."""
    if settings.llm.model == "none":
        return None

    def run(corpus: Corpus, settings: Settings, outcome: Outcome) -> tuple[Outcome, list[StageError], Stats]:
        # Said in the plan, not hidden: no stage exists yet, so the plan is the deterministic pass.
        return outcome, [StageError(stage="llm", message=f"no LLM stage is implemented yet; model {settings.llm.model} was not called")], Stats()

    return run
