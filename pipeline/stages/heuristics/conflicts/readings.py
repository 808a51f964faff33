"""What a statement says, as the judge compares it: its clauses, and for each clause a `Reading`
(content words in order, polarity, antonyms, numbers, scopes, values, its leading phrase).

Two memories are compared clause by clause, never as whole texts, so that "always X; never Y" is two
claims. A reading is computed once per clause text, in bounded caches: a memory stands in many pairs.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

from ....rules.text import STOPWORDS, normalize
from ....text.matched import matched_key
from .history import _PAST
from .needles import has_digit, has_number, may_have, may_have_word, may_match
from .quantities import _WEEKDAY_RE, _measures, durations, frequencies
from .words import (
    CHOICE_MARKERS,
    MODALS,
    NEGATIONS,
    NEGATIVE_STATES,
    NEGATIVE_VERBS,
    NUMBER_WORDS,
    PRONOUNS,
    SCOPES,
    TIME_WORDS,
    UNITS,
    _SCOPE_STEMS,
    _antonym_key,
    _scope_stem,
    _stem,
    _token,
)


# Where a clause ends: ";", "—", " because ", " so that ", ", like ", ", e.g. ", ". " and the like. Each
# optional comma and each of ".!?:" spelled out as its own alternative, so that every alternative starts
# with a literal: the regex engine then skips ahead to a place one could match (three times faster
# than `,? like ` and `[.!?:]\s+`; the same splits, the test keeps the short form to compare).
_CLAUSE_BREAK = re.compile(
    r";|—| because | since | which | so that | so |, like | like |, such as | such as |, for example | for example "
    r"|, e\.g\. | e\.g\. |\.\s+|!\s+|\?\s+|:\s+|\n",
    re.IGNORECASE,
)
# Most texts hold none of the words that end a clause ("because", "so", "like", ...): they are split
# at the marks alone, in a fraction of the time (no longer trying eight words at every space). A
# word's alternative can match only where the text holds it, spaces around (see `needles`).
_CLAUSE_MARK = re.compile(r";|—|\.\s+|!\s+|\?\s+|:\s+|\n")
_CLAUSE_WORDS = (" because ", " since ", " which ", " so ", " like ", " such as ", " for example ", " e.g. ")


def _clause_split(padded: str) -> list[str]:
    """`_CLAUSE_BREAK.split`: the same pieces."""
    if may_have(padded, _CLAUSE_WORDS):
        return _CLAUSE_BREAK.split(padded)
    return _CLAUSE_MARK.split(padded)


class Reading(NamedTuple):
    """What a clause says (`read`). A named tuple rather than a frozen dataclass: as immutable, and
    one is made for every clause read and its fields are looked up in every comparison, which as a
    dataclass (a field set at a time, `content` made on first use under a lock) cost the judge some
    7% more CPU on a store."""

    seq: tuple[str, ...]  # content words (stemmed) in order
    content: frozenset[str]  # the same words as a set: asked for in every clause comparison
    negative: bool
    antonyms: frozenset[str]
    numbers: tuple[str, ...]
    scopes: frozenset[str]
    words: tuple[str, ...]
    raw: tuple[str, ...] = ()  # the same tokens as `words`, case kept
    durations: frozenset[float] = frozenset()  # seconds: "60 seconds" == "1 minute"
    every: frozenset[float] = frozenset()  # periods in hours: "nightly" == "every 24 hours"
    head: tuple[str, ...] = ()  # the clause's leading phrase: its verb and object, or its subject
    past: bool = False  # history ("we used to pin Node 16"), not a claim about now
    days: frozenset[str] = frozenset()  # weekdays named: "on Tuesdays" / "on Thursdays" differ
    exceptions: frozenset[str] = frozenset()  # what "except for hotfixes" leaves out of the claim
    measures: frozenset[str] = frozenset()  # what a number counts or is per: "per user", "3 replicas"


def clauses(text: str) -> list[str]:
    return list(_clauses(text))


@lru_cache(maxsize=2048)
def _clauses(text: str) -> tuple[str, ...]:
    # A memory stands in several pairs (and its statements are asked for several times per pair):
    # split once, in a bounded cache keyed by the text.
    return tuple(c for c in _clause_split(" " + text + " ") if c.strip())


def claim_clauses(text: str) -> list[str]:
    """The clauses that can make a claim: a title that is one token ("package-manager",
    "feedback_testing") names the memory, it says nothing, so the body's first sentence leads."""
    return list(_claim_clauses(text))


@lru_cache(maxsize=2048)
def _claim_clauses(text: str) -> tuple[str, ...]:
    # Asked for a memory several times per pair it is in: sorted out once, beside `_clauses`.
    found = _clauses(text)
    said = tuple(c for c in found if len(c.split()) > 1)
    return said or found


# The regexes `read` applies to every clause, compiled once (they were most of a stub plan's CPU).
_NON = re.compile(r"\bnon-(\w)", re.IGNORECASE)
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}(-\d{2})?\b")
_ID_PREFIX = re.compile(r"^\s*\d+[-_](?=[A-Za-z])")
_ORDINAL_LABEL = re.compile(r"\b(?:part|pt|volume|vol|step|phase|round|iteration)\s*\d+\b|\b[rR]\d{1,2}\b", re.IGNORECASE)
# "issue 123", "PR #412", "sprint 14", "INC-1005", "#88": the number names which issue, sprint or
# incident, as a name does; two of them are two things, not two values of one (the word stays).
_ID_LABEL = re.compile(
    r"\b(issues?|pr|prs|pull requests?|tickets?|bugs?|incidents?|inc|sprints?|rfcs?|adrs?|stor(?:y|ies)|epics?|milestones?"
    r"|cves?)(?:\s*[#-]\s*|\s+)\d+(?:-\d+)*\b|(?<![\w&])#\d+\b",
    re.IGNORECASE,
)
_FROM_TO = re.compile(r"\bfrom\s+[\d.]+\s*(\w+\s+)?to\s+(?=[\d.])", re.IGNORECASE)
_TIMED_OUT = re.compile(r"\btim(?:es|ed)? out\b", re.IGNORECASE)
_COUNTED_SPAN = re.compile(
    r"\b(an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve)\s+(?=(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b)",
    re.IGNORECASE,
)
# The tokens of `Reading.raw`: what splitting at every run of `[\W_]` leaves, without the empty ends.
_RAW_WORD = re.compile(r"[^\W_]+")
# What every match of a pattern holds (see `needles`), as a substring or as a whole word: a unit of
# `_COUNTED_SPAN`, a word of `_PAST` ("used to", "the old", "in the past", "until 2019", ...), of
# `_EXCEPT`, of `_ORDINAL_LABEL` and `_ID_LABEL` (or an "r" right before a digit, a '#').
_SPAN_UNITS = frozenset("second seconds minute minutes hour hours day days week weeks month months year years".split())
_PAST_NEEDLES = frozenset(("used", "tried", "previously", "formerly", "originally", "past", "then", "until", "old", "legacy"))
_EXCEPT_NEEDLES = frozenset(("except", "unless", "other", "apart"))
_FROM = frozenset(("from",))
_TIMED_OUT_NEEDLES = ("tim out", "times out", "timed out")
_ORDINAL_NEEDLES = ("part", "pt", "vol", "step", "phase", "round", "iteration")
_R_DIGIT = re.compile(r"[rR]\d", re.IGNORECASE)
_ID_WORDS = frozenset("""issue issues pr prs pull ticket tickets bug bugs incident incidents inc sprint sprints rfc rfcs
    adr adrs story stories epic epics milestone milestones cve cves""".split())


def _span_number(m: re.Match) -> str:
    word = matched_key(m.group(1))  # "ſix" matched "six" (text/matched.py)
    return {"a": "1", "an": "1", "twelve": "12"}.get(word, NUMBER_WORDS.get(word, m.group(1))) + " "


def _without_labels(clause: str) -> str:
    """A clause with a digit, without the numbers that name or date rather than count: ISO dates,
    a numbered file's id, ordinal labels ("part 2", "R4"), issue and incident ids ("PR #412")."""
    # Each pattern only when the clause holds what every match of it needs (`needles`): these try
    # their words and `\b`s at every place, a quarter of a reading's time when they all ran.
    if has_number(clause):  # a date and an id start a word: "v2" is neither
        if may_have(clause, ("-",)):
            clause = _ISO_DATE.sub(" ", clause)
        # "117-feedback_plans" (a numbered file's name as its title): the number is an id, not a quantity.
        clause = _ID_PREFIX.sub(" ", clause)
    # "part 2", "round 3", "R4": an ordinal label of one piece of a series, not a quantity it claims.
    if may_have(clause, _ORDINAL_NEEDLES) or may_match(clause, _R_DIGIT):
        clause = _ORDINAL_LABEL.sub(" ", clause)
    if has_number(clause) and (may_have(clause, ("#",)) or may_have_word(clause, _ID_WORDS)):
        clause = _ID_LABEL.sub(lambda m: f" {m.group(1) or ''} ", clause)
    return clause


@lru_cache(maxsize=8192)
def read(clause: str) -> Reading:
    """What a clause says, as the judge compares it. A memory's clauses are read once per pair it
    is in (up to `per_memory` pairs), so readings are kept in a bounded cache; a Reading is frozen."""
    # "non-idempotent" is a different subject, not a negation; dates say when, not what.
    # "non-root" says "not root": the word stays, the negation is counted once.
    # Each pattern runs only when the clause holds what every match of it needs (`needles`).
    prefixed = 0
    if may_have(clause, ("non-",)):
        clause, prefixed = _NON.subn(r"\1", clause)
    if has_digit(clause):
        clause = _without_labels(clause)
    # "raised from 10 MB to 50 MB" states 50 MB now: the old value is history, not a claim.
    if may_have_word(clause, _FROM):
        clause = _FROM_TO.sub(" to ", clause)
    if may_have(clause, _TIMED_OUT_NEEDLES):
        clause = _TIMED_OUT.sub("timeout", clause)
    if may_have_word(clause, _SPAN_UNITS):
        clause = _COUNTED_SPAN.sub(_span_number, clause)
    days = frozenset(d.lower() for d in _WEEKDAY_RE.findall(clause)) if may_have(clause, ("day",)) else frozenset()
    past = may_have_word(clause, _PAST_NEEDLES) and bool(_PAST.search(clause))
    exceptions = frozenset(_stem(w) for m in _EXCEPT.finditer(clause) for w in normalize(m.group(1)).split()
                           if w not in STOPWORDS and len(w) > 1) if may_have_word(clause, _EXCEPT_NEEDLES) else frozenset()
    # "the staging bucket, not the production bucket": a contrast names the choice it turns down;
    # the verb keeps its polarity.
    if "," in clause:
        clause = _CONTRAST.sub(" ", clause)
    measures = _measures(clause)
    every, clause = frequencies(clause)
    spans, plain = durations(clause)
    said = clause.replace("n't", " not")
    words = normalize(said).split()
    # NFKC as `normalize` reads it; it leaves ASCII as it is.
    raw = tuple(_RAW_WORD.findall(said if said.isascii() else unicodedata.normalize("NFKC", said)))
    # "never, not even X" is one negation; "never deploy without X" and "do not skip X" are none.
    negated = not NEGATIONS.isdisjoint(words)
    negative_verb = not _NEGATIVE_WORDS.isdisjoint(words)
    numbers = tuple(sorted(NUMBER_WORDS.get(w, w) for w in normalize(plain).split() if w.isdigit() or w in NUMBER_WORDS))
    # One pass over the words, each word's part in a reading looked up once (`_word_part`). Lists,
    # not sets: the frozensets are made from the words in order, as the reading always made them.
    seq: list[str] = []
    antonyms: list[str] = []
    scopes: list[str] = []
    for w in words:
        token, antonym, scope = _word_part(w)
        if token is not None and (not seq or seq[-1] != token):
            seq.append(token)
        if antonym is not None:
            antonyms.append(antonym)
        if scope is not None:
            scopes.append(scope)
    return Reading(
        seq=tuple(seq),
        content=frozenset(seq),
        negative=(negated != negative_verb) != (prefixed % 2 == 1),
        antonyms=frozenset(antonyms),
        numbers=numbers,
        scopes=frozenset(scopes),
        words=tuple(words),
        raw=raw if len(raw) == len(words) else (),
        durations=frozenset(spans),
        every=frozenset(every),
        head=_head(words),
        past=past,
        days=days,
        exceptions=exceptions,
        measures=measures,
    )


@lru_cache(maxsize=32768)
def _word_part(w: str) -> tuple[str | None, str | None, str | None]:
    """What a word brings to a reading: (its token if it is content, its antonym-list spelling, the
    scope it names), None for each it brings nothing to. A clause's every word is looked up."""
    token = None if w in _NOT_CONTENT or w.isdigit() or len(w) < 2 else _token(w)
    scope = _scope_stem(w) if w in SCOPES or _scope_stem(w) in _SCOPE_STEMS else None
    return token, _antonym_key(w), scope


# The words that are never content, each class above in one set: a clause's every word is tried.
_NOT_CONTENT = (STOPWORDS | PRONOUNS | UNITS | NEGATIONS | NEGATIVE_VERBS | NEGATIVE_STATES | MODALS | TIME_WORDS
                | frozenset(NUMBER_WORDS))
# The words that negate the action or state they stand with.
_NEGATIVE_WORDS = NEGATIVE_VERBS | NEGATIVE_STATES

# Words before a clause's first phrase that only carry polarity, modality or hedging.
_LEAD = NEGATIONS | MODALS | TIME_WORDS | PRONOUNS | frozenset("the a an maybe perhaps also just".split())
# Determiners, and the pronouns that stand for an object named before ("never cache them").
_DETERMINERS = frozenset("the a an our your their its all every each any some them it these those".split())


_EXCEPT = re.compile(r"\b(?:except(?:\s+for|\s+when|\s+in|\s+on)?|unless|other than|apart from)\s+([^,.;()]+)", re.IGNORECASE)
_CONTRAST = re.compile(r",\s*(?:and\s+|but\s+)?not\s+(?!only\b|just\b|even\b)[^,.;()]+", re.IGNORECASE)


def _head(words: list[str]) -> tuple[str, ...]:
    """The leading phrase of a clause, stemmed: in "never store API tokens in log files" the verb
    and its object ('store api token'), in "the orders table is partitioned" the subject. It ends at
    the first preposition, copula, modal or conjunction."""
    i = 0
    while i < len(words) and words[i] in _LEAD:
        i += 1
    out: list[str] = []
    for w in words[i:]:
        if w in _DETERMINERS:
            continue
        # "use" leads a clause as its verb ("use the admin token"); after a word it marks a choice.
        if w in STOPWORDS or w in MODALS or w in NEGATIONS or w in NEGATIVE_VERBS or (w in CHOICE_MARKERS and out):
            break
        if w.isdigit() or w in UNITS or w in NUMBER_WORDS or len(w) < 2:
            continue
        out.append(_token(w))
    return tuple(out)
