"""The stub's contradiction judgement (see readings.py until the split that follows)."""

from .readings import clash_clauses, judge_conflict, judge_conflict_quoted

__all__ = ["clash_clauses", "judge_conflict", "judge_conflict_quoted"]
