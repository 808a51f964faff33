"""Explicit rejection: one text turns down ("instead of", "moved away from", "X was rejected") what
the other text's main clause puts forward.

No flip of polarity marks "use SQLite instead of Postgres" against "the service uses Postgres", so it
is read by its own patterns, once per text.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ....rules.text import STOPWORDS, normalize
from .needles import may_have
from .readings import claim_clauses, read
from .words import MODALS, _stem


# (pattern, whether what it turns down must be named: see `_names_a_choice`, a word every match holds:
# the pattern runs only on a text with one, see `needles`)
_REJECTS: list[tuple[re.Pattern[str], bool, tuple[str, ...]]] = [
    (re.compile(r"\b(?:instead of|rather than|no longer|moved away from|switched away from|migrated off|replaced|"
               r"(?:moved|migrated|switched|changed) (?:\w+ ){0,4}from|never used|stopped using|no longer uses?)"
               r"\s+(?:the |a |an |our )?([\w.+#-]+)", re.I), False,
     ("instead", "rather", "longer", "moved", "switched", "migrated", "replaced", "changed", "used", "using")),
    # "managed in our own table, not LaunchDarkly": the contrast turns a choice down.
    (re.compile(r",\s*(?:and\s+|but\s+)?not\s+(?!only\b|just\b|even\b)(?:the |a |an |our )?([\w.+#-]+)", re.I), True, ("not",)),
    (re.compile(r"\b([\w.+#-]+)\s+(?:was|is|were|are|has been|have been)\s+(?:rejected|removed|dropped|retired|replaced|deprecated|abandoned)\b", re.I), True,
     ("rejected", "removed", "dropped", "retired", "replaced", "deprecated", "abandoned")),
]


def _rejected_choice(rejecting: str, other: str) -> str | None:
    """A word the first text explicitly rejects ('SQLite instead of Postgres', 'GraphQL was
    rejected') that the other text's main clause puts forward."""
    rejected = _rejected_words(rejecting)
    if not rejected:
        return None  # most texts turn nothing down: the other's main clause need not be looked at
    main = read(claim_clauses(other)[0])
    if main.negative:
        return None
    chosen = {_stem(w) for w in main.words}
    return next((word for word in rejected if _stem(word) in chosen), None)


def _names_a_choice(written: str) -> bool:
    """A tool, product, format or identifier, as written ("Postgres", "GraphQL", "k8s", "node.js").
    "Instead of" and "rather than" contrast two choices whatever they are called; a bare ", not X" or
    "X are dropped" turns down a choice only when X names one ("items are dropped from selection",
    "for PParam updates, not rewards" describe what happens to things)."""
    return written[:1].isupper() or any(c.isdigit() or c in ".+#-_" for c in written)


@lru_cache(maxsize=2048)
def _rejected_words(text: str) -> tuple[str, ...]:
    """The words a text explicitly rejects, in the order the patterns find them (once per text, not
    once per pair it is in)."""
    out = []
    for pattern, named, needles in _REJECTS:
        if not may_have(text, needles):
            continue
        for m in pattern.finditer(text):
            if named and not _names_a_choice(m.group(1)):
                continue
            word = normalize(m.group(1))
            # "instead of retrying" rejects an action in one case, not a thing the other chose.
            if word.endswith("ing"):
                continue
            if word and word not in STOPWORDS and word not in MODALS and len(word) > 1:
                out.append(word)
    return tuple(out)
