"""Scores: binary classification for pair and single-text stages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def binary(cases: list[dict[str, Any]], predicted: Mapping[str, bool | None]) -> dict[str, Any]:
    """accuracy/precision/recall/f1 over `cases`; a case the model errored on (None) counts as wrong."""
    tp = fp = fn = tn = errors = 0
    false_pos, false_neg = [], []
    for case in cases:
        label = bool(case["label"])
        guess = predicted.get(case["id"])
        if guess is None:
            errors += 1
            guess = not label  # an error is a wrong answer
        if guess and label:
            tp += 1
        elif guess and not label:
            fp += 1
            false_pos.append(case["id"])
        elif label:
            fn += 1
            false_neg.append(case["id"])
        else:
            tn += 1
    n = len(cases)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "n": n,
        "metrics": {
            "accuracy": round((tp + tn) / n, 4) if n else 0.0,
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(f1, 4),
        },
        "false_positives": sorted(false_pos),
        "false_negatives": sorted(false_neg),
        "errors": errors,
    }
