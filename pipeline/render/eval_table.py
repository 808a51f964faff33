"""The `eval` score table: one row per stage, with the seeds' heuristics as baselines."""

from __future__ import annotations

from typing import Any


def _score(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) else "  -  "


def render_eval_table(results: list[Any]) -> str:
    lines = [f"{'stage':<9} {'model':<22} {'n':>4} {'acc':>6} {'prec':>6} {'rec':>6} {'f1':>6} {'err':>4}  baselines (acc)"]
    for r in results:
        rep = r.report
        m = rep["metrics"]
        base = ", ".join(f"{k} {v.get('accuracy', 0):.3f}" for k, v in rep.get("baselines", {}).items())
        lines.append(
            f"{rep['stage']:<9} {rep['model'][:22]:<22} {rep['n']:>4} {_score(m.get('accuracy'))} {_score(m.get('precision'))} "
            f"{_score(m.get('recall'))} {_score(m.get('f1'))} {rep.get('errors', 0):>4}  {base}"
        )
        if r.failures:
            lines.append(f"{'':<9} below threshold: {'; '.join(r.failures)}")
        if r.error_failure:
            lines.append(f"{'':<9} {r.error_failure}")
    return "\n".join(lines) + "\n"
