"""Relative time expressions in memory text, resolved against the memory's own date (issue 15).

`scan_relative_dates(text, written)` finds "yesterday", "3 days ago", "last Tuesday", "next week"...
and returns what each becomes (the contract is docs/relative-dates.md: "yesterday" written 2026-04-01 ->
"on 2026-03-31"; "last week" -> "the week of 2026-03-23"), the vague phrases it saw ("recently",
"soon"), and the expressions it recognised but will not rewrite (a possessive "last week's", a
"this Friday"). `apply_replacements` puts the replacements in and keeps every other character.

A small grammar of our own rather than `dateparser.search_dates`: measured on the unit-test cases
(scripts/bench_relative_dates.py), dateparser is ~50x slower, reads "we" as Wednesday and "may" as
May, mis-resolves "the day before yesterday", and returns datetimes where the contract needs the
phrase's granularity (a week, a month); the skips below (code, quotations, names, habitual and
conditional use) would be needed on top of it anyway. One precompiled pass, behind a prefilter
that rejects most texts before anything else runs.

Precision over recall: when a phrase's reading is in doubt (a rule, a template, a condition, an
example, a name, "today" meaning "currently", an approximate or ranged count) it is left alone.

The package, one module per concern, lowest first (each imports only the ones before it):
- prefilter: whether a text might hold a phrase at all (cheap, and without the patterns);
- grammar: the phrase patterns and the result records;
- masks: code, quotations, URLs, paths, headings - where nothing is rewritten;
- sentences: sentence and clause bounds, sentence starts;
- resolve: a match read into a day, week, month or year, and written out;
- generic: the generic-statement vetoes (a class, a period, a mention, a standing instruction, a
  frame, a rule) and the tense and noun-phrase reading they share;
- scan: each match judged in context, `scan_relative_dates` and `apply_replacements`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .grammar import DateScan, Mention, Replacement
    from .scan import apply_replacements, scan_relative_dates

__all__ = ["DateScan", "Mention", "Replacement", "apply_replacements", "scan_relative_dates"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the patterns take a tenth of a plan's start-up to compile, and a plan
    # whose texts all fail the prefilter (`prefilter.py`, imported without them) never needs them.
    if name in ("DateScan", "Mention", "Replacement"):
        from . import grammar

        return getattr(grammar, name)
    if name in ("apply_replacements", "scan_relative_dates"):
        from . import scan

        return getattr(scan, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
