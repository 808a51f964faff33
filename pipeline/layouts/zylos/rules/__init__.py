"""The zylos layout's rule set: the seed's Consolidation Review, one small module per concern.

Duplicates and reorder candidates among reference entries come from the generic text rules (the
adapter gives each entry its statement as `body` and the rest of it as merge parts, so a merge of
entries that differ beyond their bookkeeping needs the user; whole tier files are excluded from them).
"""

from __future__ import annotations

from ....config import Settings
from ....model import Corpus
from ....rules.outcome import Outcome
from .budgets import budgets
from .freshness import freshness
from .sessions import sessions


def rules(corpus: Corpus, settings: Settings) -> Outcome:
    out = Outcome()
    out.extend(budgets(corpus, settings))
    out.extend(freshness(corpus, settings))
    out.extend(sessions(corpus, settings))
    return out
