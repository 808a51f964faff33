"""Per model and stage, the lowest acceptable metrics (evals/thresholds.toml).

    [stub.reorder]
    accuracy = 0.85

A model without its own table uses `[default.<stage>]`; a metric not listed is not gated.
`max_error_rate` is a ceiling, not a floor: the share of cases the model errored on (a failed call,
an unanswered item, a handle it was not offered) above which the run fails, whatever it scored on
the rest; DEFAULT_MAX_ERROR_RATE when a table does not set it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .cases import evals_dir

ERROR_CEILING = "max_error_rate"
# A model that errors on more than this share of the cases has not been measured: fail the run
# rather than report a score computed mostly from failures.
DEFAULT_MAX_ERROR_RATE = 0.10


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
        if name == ERROR_CEILING:
            continue
        value = metrics.get(name)
        if value is None or value < floor:
            out.append(f"{name} {value if value is not None else 'missing'} < {floor}")
    return out


def too_many_errors(errors: int, n: int, limits: dict[str, float]) -> str | None:
    """The line saying the run failed on errors, or None when they stay within the ceiling."""
    ceiling = limits.get(ERROR_CEILING, DEFAULT_MAX_ERROR_RATE)
    if n <= 0 or errors / n <= ceiling:
        return None
    return f"too many errors: {errors} of {n} cases ({errors / n:.0%}), more than the {ceiling:.0%} allowed"
