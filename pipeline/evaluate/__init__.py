"""`memconsolidate eval`: score a stage's judge on labelled cases, with the seeds' baselines beside it.

The model is asked through the production client and the production stage schemas, so a prompt or
model change is measured on exactly what the pipeline would do. Thresholds per model and stage live
in evals/thresholds.toml; a run below them fails (exit 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import UsageError
from .baselines import majority, run_pair_baselines
from .cases import DATASET_STAGES, RULE_STAGES, default_dataset, load_cases
from .metrics import binary
from .thresholds import load_thresholds, shortfalls, thresholds_for, too_many_errors


@dataclass
class EvalResult:
    report: dict[str, Any]
    failures: list[str] = field(default_factory=list)  # metrics below their floors
    errors: list[str] = field(default_factory=list)
    error_failure: str | None = None  # set when errors exceed the stage's ceiling

    @property
    def failed(self) -> bool:
        return bool(self.failures or self.error_failure)


def _binary_stage(stage: str, cases: list[dict[str, Any]], client: Any, settings: Settings) -> tuple[dict[str, Any], list[str]]:
    from .judges import BINARY_JUDGES

    answers, errors = BINARY_JUDGES[stage](client, cases, settings.llm.batch_size or 1)
    report = binary(cases, answers)
    baselines = {name: binary(cases, preds)["metrics"] for name, preds in run_pair_baselines(stage, cases).items()}
    baselines["majority"] = binary(cases, majority(cases))["metrics"]
    report["baselines"] = dict(sorted(baselines.items()))
    return report, errors


def available_stages() -> list[str]:
    from .content import CONTENT_STAGES

    return [s for s in DATASET_STAGES if s in ("reorder", "conflict", "rule") or s in CONTENT_STAGES or s in RULE_STAGES]


def run_eval(stage: str, dataset: Path | None, settings: Settings, client: Any, thresholds: Path | None = None) -> EvalResult:
    if stage not in DATASET_STAGES:
        raise UsageError(f"unknown eval stage {stage!r} (expected {', '.join(DATASET_STAGES)})")
    cases = load_cases(dataset or default_dataset(stage), stage)
    model = settings.llm.model
    if stage in RULE_STAGES:
        from .dates import MODEL, eval_dates

        errors: list[str] = []
        report, model = eval_dates(cases), MODEL
    elif stage in ("reorder", "conflict", "rule"):
        report, errors = _binary_stage(stage, cases, client, settings)
    else:
        from .content import CONTENT_STAGES

        if stage not in CONTENT_STAGES:
            raise UsageError(f"eval for stage {stage!r} is not available yet")
        # Every case's shape was checked as it was read (cases.py): what the stage raises is its own.
        report, errors = CONTENT_STAGES[stage](cases, client, settings)
    ordered = {"stage": stage, "model": model, "n": report.pop("n"), "metrics": report.pop("metrics")}
    ordered.update(report)
    limits = thresholds_for(load_thresholds(thresholds), model, stage)
    ordered["thresholds"] = limits
    return EvalResult(
        report=ordered,
        failures=shortfalls(ordered["metrics"], limits),
        errors=errors,
        error_failure=too_many_errors(int(ordered.get("errors", 0)), int(ordered["n"]), limits),
    )
