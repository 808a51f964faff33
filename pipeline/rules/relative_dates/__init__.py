"""Relative time expressions in memory text, resolved against the memory's own date (issue 15).

The contract is docs/relative-dates.md. This package re-exports what the rest of the tool uses;
the modules below it each decide one thing (see their docstrings).
"""

from __future__ import annotations

from .scan import DateScan, Mention, Replacement, apply_replacements, scan_relative_dates

__all__ = ["DateScan", "Mention", "Replacement", "apply_replacements", "scan_relative_dates"]
