"""What a rule returns, and the ordering that makes every plan byte-stable."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..kinds import action_rank, finding_rank
from ..model import Action, Finding


@dataclass
class Outcome:
    actions: list[Action] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def extend(self, other: "Outcome") -> "Outcome":
        self.actions.extend(other.actions)
        self.findings.extend(other.findings)
        return self


def action_sort_key(a: Action) -> tuple:
    return (action_rank(a.kind), a.targets, a.source, a.reason)


def finding_sort_key(f: Finding) -> tuple:
    return (finding_rank(f.kind), f.targets, f.class_ or "", f.reason)
