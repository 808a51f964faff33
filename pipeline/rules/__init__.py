"""The deterministic pass: pure functions from a `Corpus` to actions and findings.

Each rule lives in its own module, named for what it does. The rules every layout shares live here;
a layout's own rules live in its package (`pipeline/layouts/<name>/`) and run through its `rules`.
"""

from __future__ import annotations

from ..config import Settings
from ..model import Corpus
from ..layouts.registry import layout_of
from .absolutize_dates import absolutize_dates
from .duplicates import merge_duplicates, report_reorders
from .index_drift import index_drift
from .outcome import Outcome
from .staleness import staleness


def run_rules(corpus: Corpus, settings: Settings) -> Outcome:
    layout = layout_of(corpus)
    out = Outcome()
    out.findings.extend(corpus.findings)
    out.extend(merge_duplicates(corpus.memories))
    out.extend(report_reorders(corpus.memories))
    out.extend(layout.rules(corpus, settings))
    if layout.staleness_without_repo or settings.repo:
        out.extend(staleness(corpus, settings))
    out.extend(index_drift(corpus))
    out.extend(absolutize_dates(corpus.memories))
    return out
