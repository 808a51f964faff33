"""Labelled eval cases (evals/datasets/<stage>.jsonl, the DESIGN.md format) and where they live."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import UsageError

EVALS_ENV = "MEMCONSOLIDATE_EVALS"
# Dataset stage names (the contract) -> the pipeline stage (prompt, schema, recordings) they exercise.
# `dates` exercises the deterministic relative-date rule: no model, no prompt.
DATASET_STAGES = {"reorder": "reorder", "conflict": "conflicts", "rule": "rules", "metadata": "metadata", "split": "split",
                  "dates": "dates"}
RULE_STAGES = ("dates",)


def evals_places() -> list[Path]:
    """Where the eval data may be, in order: $MEMCONSOLIDATE_EVALS alone when set; else the source
    tree's evals/, the copy installed with the package (`pipeline/evals`), ./evals."""
    env = os.environ.get(EVALS_ENV)
    if env:
        return [Path(env).expanduser()]
    package = Path(__file__).resolve().parents[1]
    return [package.parent / "evals", package / "evals", Path.cwd() / "evals"]


def evals_dir() -> Path:
    """The first of `evals_places()` that has datasets (the last place when none has)."""
    places = evals_places()
    return next((p for p in places if (p / "datasets").is_dir()), places[-1])


def find_evals() -> Path:
    """`evals_dir()`, or a usage error naming every place looked in when none holds datasets."""
    found = evals_dir()
    if (found / "datasets").is_dir():
        return found
    looked = ", ".join(str(p) for p in evals_places())
    raise UsageError(f"no eval datasets found (looked in {looked}); set {EVALS_ENV} to a folder with datasets/")


def dataset_stage(name: str) -> str:
    """A dataset stage from its own name or its pipeline stage's (`conflict` or `conflicts`)."""
    if name in DATASET_STAGES:
        return name
    by_pipeline = {v: k for k, v in DATASET_STAGES.items()}
    if name in by_pipeline:
        return by_pipeline[name]
    raise UsageError(f"unknown eval stage {name!r} (expected {', '.join(DATASET_STAGES)})")


def default_dataset(stage: str) -> Path:
    return evals_dir() / "datasets" / f"{stage}.jsonl"


# The fields a judged stage's case must carry, and their types (the contract's dataset format).
_FIELDS: dict[str, dict[str, type]] = {
    "reorder": {"a": str, "b": str, "label": bool},
    "conflict": {"a": str, "b": str, "label": bool},
    "rule": {"text": str, "label": bool},
}


class _Member(BaseModel):
    """A memory of a metadata case (`created`, `source`, `strength` and the like may come too)."""

    model_config = ConfigDict(extra="allow", strict=True)
    title: str = ""
    description: str = ""
    body: str = ""
    type: str | None = None
    tags: list[str] = []


class _MetadataCase(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    members: list[_Member] = Field(min_length=1)
    must_keep: list[str] = []


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    heading: str
    body: str


class _SplitCase(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    cap: int = Field(ge=1)
    sections: list[_Section] = Field(min_length=1)
    gold: list[list[int]]


# The content stages' cases, checked whole as they are read: a case of another shape is the
# dataset's fault (exit 2, its line named), and nothing the stage then raises is blamed on the data.
_SHAPES: dict[str, type[BaseModel]] = {"metadata": _MetadataCase, "split": _SplitCase}


def _shape_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg'][0].lower()}{first['msg'][1:]}" if where else first["msg"]


def load_cases(path: Path, stage: str | None = None) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read dataset {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"dataset {path}: not UTF-8 (byte {exc.start})") from None
    cases = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except (ValueError, RecursionError):
            raise UsageError(f"dataset {path} line {n}: not valid JSON") from None
        if not isinstance(case, dict) or not isinstance(case.get("id"), str) or not isinstance(case.get("stage"), str):
            raise UsageError(f"dataset {path} line {n}: a case needs at least id and stage (strings)")
        if stage is not None and case["stage"] != stage:
            raise UsageError(f"dataset {path} line {n}: stage {case['stage']!r}, expected {stage!r}")
        for field, kind in _FIELDS.get(case["stage"], {}).items():
            if not isinstance(case.get(field), kind):
                raise UsageError(f"dataset {path} line {n}: {field} must be {'true or false' if kind is bool else 'a string'}")
        if case["stage"] in _SHAPES:
            try:
                _SHAPES[case["stage"]].model_validate(case)
            except ValidationError as exc:
                raise UsageError(f"dataset {path} line {n}: not a {case['stage']} case ({_shape_error(exc)})") from None
        cases.append(case)
    if not cases:
        raise UsageError(f"dataset {path} has no cases")
    return cases
