"""The `bank` layout (iii record banks): reader, writer and its own rules."""

from __future__ import annotations

from ...config import BankConfig, Settings
from ...model import Corpus, Memory
from ...rules.outcome import Outcome
from ..base import ModuleLayout
from . import reader, writer
from .cap import cap_supersedes
from .rules import bank_rule_candidates


def _rules(corpus: Corpus, settings: Settings) -> Outcome:
    return bank_rule_candidates(corpus, settings.bank.promote_corroboration_threshold)


class BankLayout(ModuleLayout):
    name = "bank"
    markers = "*/memories.jsonl"
    config_model = BankConfig
    automatic_rule_promotion = True  # iii's learned.md is managed by the tool

    def guard(self, outcome: Outcome, settings: Settings) -> Outcome:
        # iii's safety cap counts every supersede, whichever pass proposed it.
        capped = cap_supersedes(outcome.actions, settings.bank.max_supersedes_per_run)
        return Outcome(capped.actions, outcome.findings + capped.findings)

    def stages(self, settings: Settings) -> frozenset[str]:
        return frozenset({"rules"})

    def rule_candidate_cap(self, settings: Settings) -> int | None:
        return settings.bank.rule_candidates_max

    def memory_file(self, m: Memory) -> str:
        return f"{m.group}/memories.jsonl"


LAYOUT = BankLayout(reader, writer, _rules)
