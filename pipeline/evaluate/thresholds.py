"""Per model and stage, the lowest acceptable metrics (evals/thresholds.toml).

    [stub.reorder]
    accuracy = 0.85

A model without its own table uses `[default.<stage>]`; a metric not listed is not gated.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .cases import evals_dir


def load_thresholds(path: Path | None = None) -> dict[str, Any]:
    path = path or evals_dir() / "thresholds.toml"
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read thresholds {path}: {exc}") from None


def thresholds_for(table: dict[str, Any], model: str, stage: str) -> dict[str, float]:
    for name in (model, "default"):
        section = table.get(name, {})
        if isinstance(section, dict) and isinstance(section.get(stage), dict):
            return {k: float(v) for k, v in section[stage].items()}
    return {}


def shortfalls(metrics: dict[str, Any], limits: dict[str, float]) -> list[str]:
    out = []
    for name, floor in sorted(limits.items()):
        value = metrics.get(name)
        if value is None or value < floor:
            out.append(f"{name} {value if value is not None else 'missing'} < {floor}")
    return out
