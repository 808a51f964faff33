"""Labelled eval cases (evals/datasets/<stage>.jsonl, the DESIGN.md format) and where they live."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import UsageError

EVALS_ENV = "MEMCONSOLIDATE_EVALS"
# Dataset stage names (the contract) -> the pipeline stage (prompt, schema, recordings) they exercise.
# `dates` exercises the deterministic relative-date rule: no model, no prompt.
DATASET_STAGES = {"reorder": "reorder", "conflict": "conflicts", "rule": "rules", "metadata": "metadata", "split": "split",
                  "dates": "dates"}
RULE_STAGES = ("dates",)


def evals_dir() -> Path:
    """$MEMCONSOLIDATE_EVALS, else the source tree's evals/, else ./evals."""
    env = os.environ.get(EVALS_ENV)
    if env:
        return Path(env).expanduser()
    beside_source = Path(__file__).resolve().parents[2] / "evals"
    if beside_source.is_dir():
        return beside_source
    return Path.cwd() / "evals"


def default_dataset(stage: str) -> Path:
    return evals_dir() / "datasets" / f"{stage}.jsonl"


def load_cases(path: Path, stage: str | None = None) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read dataset {path}: {exc.strerror or exc}") from None
    cases = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except ValueError:
            raise UsageError(f"dataset {path} line {n}: not valid JSON") from None
        if not isinstance(case, dict) or "id" not in case or "stage" not in case:
            raise UsageError(f"dataset {path} line {n}: a case needs at least id and stage")
        if stage is not None and case["stage"] != stage:
            raise UsageError(f"dataset {path} line {n}: stage {case['stage']!r}, expected {stage!r}")
        cases.append(case)
    if not cases:
        raise UsageError(f"dataset {path} has no cases")
    return cases
