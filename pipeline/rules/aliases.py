"""Memories another name points at: retiring one asks first.

A reader sets `ALIASES` on a memory a symlink of the store points at (claude: `current.md ->
project_deploy.md`, the link set aside as a second name of the same memory). Archiving, pruning,
merging or consolidating that memory would leave the link pointing at nothing, where an agent reads
it: whatever proposed it, the user decides, and the reason says which link would dangle.
"""

from __future__ import annotations

from ..kinds import retires
from ..model import Action, Corpus
from .outcome import Outcome

ALIASES = "aliases"


def ask_before_leaving_aliases(corpus: Corpus, outcome: Outcome) -> Outcome:
    """`outcome` with every retirement of a memory that has aliases needing the user, its reason
    naming the links."""
    aliased = {m.key: m.extra[ALIASES] for m in corpus.memories if m.extra.get(ALIASES)}
    if not aliased:
        return outcome
    actions: list[Action] = []
    for a in outcome.actions:
        links = sorted({link for t in a.targets if t in aliased and t != getattr(a, "survivor", None) for link in aliased[t]})
        if links and retires(a.kind):
            # Asked if it was not, and said either way: the user who approves it should know.
            said = f"{', '.join(links)} ({'a symlink' if len(links) == 1 else 'symlinks'}) {'points' if len(links) == 1 else 'point'} at it and would dangle"
            a = a.model_copy(update={"needs_user": True, "reason": f"{a.reason}; {'' if a.needs_user else 'asked: '}{said}"})
        actions.append(a)
    return Outcome(actions, outcome.findings)
