"""`eval --stage dates`: the relative-date rule (pipeline/rules/relative_dates/) scored on labelled
texts (docs/relative-dates.md: id, stage, text, written, label, expected, optional vague).

Deterministic, so no model is asked and the report's model is "rules". A proposed edit is correct
when the text after every replacement equals `expected`, byte for byte.
- `precision` = correct edits / cases edited; `recall` = correct edits / cases labelled true;
- `accuracy` = (correct edits + label-false cases left alone) / cases; `f1` of the first two;
- `false_positives`: cases edited but not correctly (a false case edited, or a true case rewritten
  into the wrong text); `false_negatives`: true cases without the expected edit; `wrong_edits`: the
  true cases among the false positives;
- `vague_recall` (when cases list `vague`): share of the listed vague phrases reported.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..errors import UsageError
from ..rules.relative_dates import apply_replacements, scan_relative_dates

MODEL = "rules"


def _written(case: dict[str, Any]) -> dt.date:
    value = case.get("written")
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise UsageError(f"dates case {case['id']}: written must be a date like 2026-04-01, not {value!r}")


def _checked(case: dict[str, Any]) -> tuple[str, dt.date, bool, str]:
    text, label = case.get("text"), case.get("label")
    if not isinstance(text, str) or not isinstance(label, bool):
        raise UsageError(f"dates case {case['id']}: needs a text (string) and a label (true or false)")
    expected = case.get("expected", text)
    if not isinstance(expected, str):
        raise UsageError(f"dates case {case['id']}: expected must be a string")
    return text, _written(case), label, expected


def _r(x: float) -> float:
    return round(x, 4)


def eval_dates(cases: list[dict[str, Any]]) -> dict[str, Any]:
    edited = correct = true_cases = left_alone = 0
    vague_listed = vague_found = 0
    false_pos, false_neg, wrong = [], [], []
    for case in cases:
        text, written, label, expected = _checked(case)
        scan = scan_relative_dates(text, written)
        after = apply_replacements(text, scan.replacements)
        proposed = bool(scan.replacements)
        right = proposed and label and after == expected
        edited += proposed
        correct += right
        true_cases += label
        left_alone += not proposed and not label
        if proposed and not right:
            false_pos.append(case["id"])
            if label:
                wrong.append(case["id"])
        if label and not right:
            false_neg.append(case["id"])
        listed = [p.lower() for p in case.get("vague") or [] if isinstance(p, str)]
        found = {v.phrase.lower() for v in scan.vague}
        vague_listed += len(listed)
        vague_found += sum(1 for p in listed if p in found)
    n = len(cases)
    precision = correct / edited if edited else 0.0
    recall = correct / true_cases if true_cases else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    metrics = {"accuracy": _r((correct + left_alone) / n) if n else 0.0, "precision": _r(precision),
               "recall": _r(recall), "f1": _r(f1)}
    if vague_listed:
        metrics["vague_recall"] = _r(vague_found / vague_listed)
    return {
        "n": n,
        "metrics": metrics,
        "false_positives": sorted(false_pos),
        "false_negatives": sorted(false_neg),
        "wrong_edits": sorted(wrong),
        "errors": 0,
        "edited": edited,
    }
