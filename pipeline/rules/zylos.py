"""The zylos layout's rule set (placeholder until its rules land)."""

from __future__ import annotations

from ..config import Settings
from ..model import Corpus
from .outcome import Outcome


def rules(corpus: Corpus, settings: Settings) -> Outcome:
    return Outcome()
