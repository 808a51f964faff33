"""Staleness of file and symbol references (placeholder until the rule lands)."""

from __future__ import annotations

from ..config import Settings
from ..model import Corpus
from .outcome import Outcome


def staleness(corpus: Corpus, settings: Settings) -> Outcome:
    return Outcome()
