"""The stub's rule judgement: is this a standing instruction, or a plain fact?

A standing rule tells an agent what to do (or not) every time: an imperative ("Run ruff before
every commit"), a prohibition ("Never force-push to main"), an obligation ("Migrations must be
backward compatible"), a preference ("Prefer composition"), a condition with an instruction ("When a
test is flaky, quarantine it"), or a norm stated impersonally ("Every PR needs a ticket"). It is not
a fact, even one phrased like an instruction ("Deploys go out on Fridays"), a question, a hedge, a
past event, a guess ("must have failed"), or a one-off task ("Restart the stuck worker today").
"""

from __future__ import annotations

import re

from ...text.truncate import shorten
from ...rules.text import normalize

IMPERATIVE_VERBS = frozenset(
    """add always ask avoid bump check commit create delete deploy document do don ensure fix follow
    give handle include keep lint log make merge mock never notify open pin prefer put quarantine
    rebase record remember remove rename require restart review rotate run send set ship sign skip split
    squash start stop store tag test treat update upgrade use verify wait write wrap prefer mark name
    return reject retry cache call clean""".split()
)
PROHIBITION_OPENERS = ("never ", "don't ", "do not ", "avoid ", "no ", "stop ", "dont ")
DEONTIC = re.compile(r"\b(must|should|shall|has to|have to|needs? to|ought to|is required to|are required to)\b(?! have\b)", re.I)
NORM_PHRASES = re.compile(
    r"\b(is not allowed|are not allowed|is forbidden|are forbidden|is mandatory|are mandatory|is required|are required|"
    r"requires?|needs? an?|needs? a|belongs? in|belong in|is prohibited|are prohibited|not permitted)\b",
    re.I,
)
CONDITION_OPENERS = ("when ", "whenever ", "if ", "before ", "after ", "once ", "unless ")
HEDGES = re.compile(r"\b(maybe|perhaps|might|could|consider|worth trying|some day|at some point|i think|probably)\b", re.I)
EPISTEMIC = re.compile(r"\b(must have|should have|must be somewhere|should be .* by now|by now|i couldn't|must be (?:broken|down|wrong))\b", re.I)
PAST_EVENT = re.compile(
    r"\b(yesterday|last (?:week|month|year|sprint|night)|ago|we tried|was|were|did|said|agreed|decided|caused|"
    r"replaced|failed|dropped|doubled|broke|happened|in (?:january|february|march|april|may|june|july|august|"
    r"september|october|november|december))\b",
    re.I,
)
ONE_OFF = re.compile(r"\b(today|tonight|tomorrow|this week|this sprint|before (?:monday|tuesday|wednesday|thursday|friday)|"
                     r"the stuck|the leaked|it's neat|on prod-\d+|right now|asap)\b", re.I)


def _first_word(text: str) -> str:
    words = normalize(text).split()
    return words[0] if words else ""


def judge_rule(text: str) -> tuple[bool, str]:
    """(standing rule?, one-line reasoning)."""
    t = " ".join(text.split())
    low = t.lower()
    if t.endswith("?"):
        return False, "a question, not an instruction"
    if HEDGES.search(t):
        return False, "a hedged suggestion, not a standing instruction"
    if EPISTEMIC.search(t):
        return False, "a guess about a state ('must have', 'by now'), not an obligation"
    if ONE_OFF.search(t):
        return False, "a one-off task, not a standing instruction"
    first = _first_word(t)
    second = (normalize(t).split() + ["", ""])[1]
    hyphenated_start = re.match(r"^[A-Za-z']+-\w", t) is not None
    if not hyphenated_start and low.startswith(PROHIBITION_OPENERS):
        return True, "a prohibition"
    if low.startswith("remember to ") or low.startswith("prefer "):
        return True, "an instruction to follow every time"
    if low.startswith(CONDITION_OPENERS):
        rest = re.split(r",", t, maxsplit=1)
        if len(rest) == 2 and (_first_word(rest[1]) in IMPERATIVE_VERBS or DEONTIC.search(rest[1])):
            return True, "a condition with an instruction"
    if (first in IMPERATIVE_VERBS and not hyphenated_start and not second.isdigit()
            and second not in ("of", "times", "conflicts", "requests", "is", "are", "was", "were")
            and not PAST_EVENT.search(t)):
        return True, "an imperative"
    if DEONTIC.search(t) and not PAST_EVENT.search(t):
        return True, "an obligation ('must', 'should')"
    if NORM_PHRASES.search(t) and not PAST_EVENT.search(t):
        return True, "a norm stated impersonally"
    if PAST_EVENT.search(t):
        return False, "a past event"
    return False, "a statement of fact"


def one_line_rule(text: str) -> str:
    """The memory as a one-line rule: whitespace folded, a leading 'Remember to' dropped, capitalised."""
    t = " ".join(text.split())
    t = re.sub(r"^remember to\s+", "", t, flags=re.I)
    t = t[:1].upper() + t[1:]
    return shorten(t, 300, word_after=1)
