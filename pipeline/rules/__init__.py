"""The deterministic pass: pure functions from a `Corpus` to actions and findings.

Each rule lives in its own module, named for what it does; this module only decides which rules
apply to which layout.
"""

from __future__ import annotations

from ..config import Settings
from ..model import Corpus
from .duplicates import merge_duplicates, report_reorders
from .index_drift import index_drift
from .outcome import Outcome
from .staleness import staleness


def run_rules(corpus: Corpus, settings: Settings) -> Outcome:
    # The layouts' own rules import this package's outcome module: import them when a run needs them.
    from ..layouts.bank.rules import bank_rule_candidates
    from ..layouts.claude import rules as claude
    from ..layouts.crux import rules as crux
    from ..layouts.zylos import rules as zylos

    LAYOUT_RULES = {"crux": crux.rules, "claude": claude.rules, "zylos": zylos.rules}
    out = Outcome()
    out.findings.extend(corpus.findings)
    out.extend(merge_duplicates(corpus.memories))
    if corpus.layout == "bank":
        out.extend(bank_rule_candidates(corpus, settings.bank.promote_corroboration_threshold))
    out.extend(report_reorders(corpus.memories))
    if corpus.layout in LAYOUT_RULES:
        out.extend(LAYOUT_RULES[corpus.layout](corpus, settings))
    if corpus.layout == "claude" or settings.repo:
        out.extend(staleness(corpus, settings))
    out.extend(index_drift(corpus))
    return out
