"""The stub's contradiction judgement: opposite polarity or an antonym or a different number, on the
same subject, in the same scope.

Two memories contradict when, once polarity words are set aside, they say nearly the same thing
about the same subject and exactly one thing flips: a negation (always/never, must/must not), an
antonym (enable/disable, before/after), or a number (3 retries / 5 retries). Two flips cancel
("allowed before 16:00" / "no deploys after 16:00"). Different scopes do not contradict ("in tests,
mock the clock" / "in production, never mock the clock"). The stub prefers missing a contradiction
to raising a false alarm.

One module per concern, each importing only those above it in this list (no cycle):
needles.py (what a text must hold for a pattern to match: the cheap tests that skip it),
words.py (vocabulary, stemming), history.py (past vs present, superseded), quantities.py (durations,
frequencies, weekdays, measures), readings.py (clauses and what each says), order.py (steps in
opposite order), clash.py (when two clauses clash), rejected.py (one text rejects the other's
choice), judge.py (the verdict on two memories). Only the verdicts are the package's interface.
"""

from .judge import clash_clauses, judge_conflict, judge_conflict_quoted

__all__ = ["clash_clauses", "judge_conflict", "judge_conflict_quoted"]
