"""The scan: each match judged in its context, the results kept consistent, the edits applied.

`scan_relative_dates` masks what is not prose, then `_judge`s every match: the words just before and
after it (an approximate or ranged count, a determiner, a label's colon, a date already given), then
`_context_veto` - the sentence around it (a habit, a condition, an example, a name, a generic
statement, "today" meaning "currently"). A phrase whose clause reads as generic makes its clause's
other phrases generic too (`_consistent`). Precision over recall: a doubtful reading is left alone.
`apply_replacements` splices the results in and keeps every other character.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Iterable

from ...text.splice import SpliceError, splice
from .generic import (
    _DATED_VERB,
    _IMPERATIVE,
    _NOT_A_QUALIFIER,
    _WORD_BACK,
    _class_noun,
    _dated_verb_outside,
    _generic_statement,
    _generic_subject,
    _in_a_frame,
    _in_a_rule,
    _item,
)
from .grammar import (
    EMPTY,
    PHRASE,
    VAGUE,
    WEEKDAYS,
    _WD,
    _WORD_NUMBERS,
    DateScan,
    Mention,
    Replacement,
)
from .prefilter import might_have_dates
from .masks import _inside, _masked_spans
from .resolve import _DROP_ON, _read, _replacement
from .sentences import _CLAUSE_BREAK, _at_sentence_start, _clause, _looks_like_a_name, _opens_clause, _sentence


_HABITUAL = re.compile(
    r"\b(?:every|each|always|usually|typically|normally|generally|whenever|routinely|regularly|per\s+day)\b"
    # "runs nightly", "Daily: review ..."; but in "the nightly backup job", "weekly reports" it describes a thing
    r"|\b(?:daily|nightly|weekly|monthly)\b(?![ \t]+(?!(?:at|on|in|and|or|for|to|from|with|by|until|since|before|after)\b)[a-z])",
    re.IGNORECASE)
_CONDITIONAL = re.compile(r"\b(?:if|unless|whenever|in\s+case|suppose|supposing|assuming|provided|otherwise)\b", re.IGNORECASE)
_CONDITIONAL_LEAD = re.compile(r"^\W*(?:when|once|should|were|had|whether)\b", re.IGNORECASE)  # "Should it fail tomorrow, ..."
_MODAL = re.compile(r"\b(?:should|must|ought[ \t]+to|ha(?:ve|s)[ \t]+to|needs?[ \t]+to)\b", re.IGNORECASE)
_BARE_PLURAL_LEAD = re.compile(r"^\W*[A-Za-z][a-z]+s\b(?<!\bis)(?<!\bthis)(?<!\bus)[ \t]+(?:are|expire|must|get|go|need|have|stay|become|run)\b")
_COUNTED_FROM = re.compile(r"[ \t]+(?:after|from|of|since|once|before)\b", re.IGNORECASE)  # "in 30 days after issue"
# The noun a possessive "yesterday's" qualifies: the head of up to three words ("yesterday's config
# push", "yesterday's search API deploy"), only spaces between them.
_NOUN_WORDS = re.compile(r"(?:[ \t]+[A-Za-z](?:[\w+-]|\.(?=\w))*){1,3}")
# What "yesterday's X" can safely become "the <date> X" for: an event that happened on one day.
_EVENT_NOUN = re.compile(
    r"(?:outage|incident|deploy|deployment|release|run|standup|stand-up|meeting|build|failure|change|migration|rollout|"
    r"rollback|review|retro|retrospective|sync|session|call|demo|postmortem|post-mortem|hotfix|patch|upgrade|"
    r"maintenance|downtime|launch|cutover|handoff|hand-off|discussion|decision|crash|alert|page|merge|push|planning|"
    r"interview|workshop|kickoff|presentation|spike|error|errors|failures|alerts|deploys|releases|runs|changes|"
    r"incidents|outages|meetings|builds|fix|fixes|failover|restart|reboot|restore|backfill|reindex|rotation|drill|"
    r"regression|commit|commits|pushes|merges|rollbacks|restarts|freeze|audit|backup|snapshot|report|announcement)",
    re.IGNORECASE)
_EXAMPLE = re.compile(r"\b(?:e\.g\.|i\.e\.|for\s+example|for\s+instance|examples?\s*:|(?:an|as\s+an)\s+example|imagine|"
                      r"hypothetical(?:ly)?|such\s+as|say,|samples?(?:[ \t]+\w+)?[ \t]*:|\b(?:in|for|from)[ \t]+(?:this|that|the|an?|our)[ \t]+example\b|"
                      r"^\W*(?:consider|picture)[ \t]+(?:a|an|the[ \t]+case)\b)", re.IGNORECASE)
_BLOCKING_BEFORE = re.compile(
    r"(?:\b(?:than|of|at|in|into|between|within|about|around|over|under|like|the|a|an|that|this|these|those|every|each|per|"
    r"same|following|previous|prior|my|our|your|their|his|her|its|roughly|approximately|approx\.?|almost|nearly|some|"
    r"more[ \t]+than|less[ \t]+than|at[ \t]+least|at[ \t]+most)|~)\s*\Z", re.IGNORECASE)
_DETERMINER_BEFORE = re.compile(
    r"\b(?:the|a|an|that|this|these|those|every|each|per|same|following|previous|prior|my|our|your|their|his|her|its|"
    r"early|late|mid)\s*\Z", re.IGNORECASE)
_PART_OF_BEFORE = re.compile(r"\b(?:early|late|earlier|later|mid)\s*\Z", re.IGNORECASE)  # "early last week"
# "Monday next week", "a week from today": a day the contract has no words for, whatever precedes.
_NEVER_BEFORE = re.compile(r"\b(?:" + _WD + r"|(?:days?|weeks?|months?|years?)[ \t]+from)\s*\Z", re.IGNORECASE)
_RANGE_BEFORE = re.compile(r"(?:\d|\b(?:" + "|".join(_WORD_NUMBERS) + r"))[ \t]*(?:or|to|-|–|and)\s*\Z", re.IGNORECASE)
_APPROX_BEFORE = re.compile(
    r"(?:\b(?:about|around|roughly|approximately|approx\.?|almost|nearly|over|under|some|more[ \t]+than|less[ \t]+than|"
    r"at[ \t]+least|at[ \t]+most)|~)\s*\Z", re.IGNORECASE)
_BLOCKING_AFTER = re.compile(r"^(?:[ \t]*(?:or|-|–)[ \t]|[ \t]+of\b|[ \t]+on[ \t]+(?:" + _WD + r")\b|[ \t]*\(?\d{4}-\d{2}-\d{2})", re.IGNORECASE)
# "Today: ...", "(today: `x.py`)": a label, not a date - unless a preposition makes the phrase its
# object and the colon closes a dated label ("queue as of today: 4 open", "frozen until tomorrow:").
_LABEL_AFTER = re.compile(r"^[ \t]*:")
_LABEL_PREPOSITION = re.compile(r"\b(?:as[ \t]+of|since|until|till|by|before|after|from|on)\s+\Z", re.IGNORECASE)
_ABSOLUTE_AFTER = re.compile(
    r"^[ \t]*[(,][ \t]*(?:on[ \t]+)?(?:\d{4}-\d{2}-\d{2}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?[ \t]+\d)",
    re.IGNORECASE)
_ABSOLUTE_BEFORE = re.compile(r"\d{4}-\d{2}-\d{2}\)?[ \t]*[(,]?[ \t]*\Z")
_SUBJECT_AFTER = re.compile(r"^[ \t]+(?:is|was|will|has|had|would)\b", re.IGNORECASE)
_CONTRACTED_SUBJECT = re.compile(r"^['’]s[ \t]+(?:been|the|a|an|not)\b", re.IGNORECASE)  # "today's the day"


def _touching(text: str, matches: list[re.Match], i: int) -> bool:
    """Two phrases with only spaces between them read as one ("a week ago today"): not ours to split."""
    here = matches[i]
    before = i > 0 and not text[matches[i - 1].end():here.start()].strip()
    after = i + 1 < len(matches) and not text[here.end():matches[i + 1].start()].strip()
    return bool(before or after)


def _clause_before_colon(text: str, start: int, end: int) -> bool:
    """Whether the words before "<phrase>:" are a clause, not a label. A label is a short verbless noun
    phrase ("Today:", "Next week's plan:"); "Reproduced it this morning:", "The user gave feedback
    today:" state something - a past verb opens them or follows their subject. A participle that only
    qualifies a class ("Files changed since yesterday:") keeps the label a label."""
    lo, _ = _clause(text, start, end)
    lead = text[lo:start]
    first = re.match(r"[\W_]*([A-Za-z]\w*)", lead)
    if first and _DATED_VERB.fullmatch(first.group(1)) and first.group(1).lower() not in ("will", "shall", "due"):
        return True  # "Agreed with Priya today:", "Learned the hard way yesterday evening:"
    # "Deploys scheduled for tomorrow:", "Tests failed yesterday:" - a participle after a class may
    # qualify it (a label) as well as be its verb: in doubt, a label. After "the user", "we" it is a verb.
    qualified = [(v.start(), v.end()) for v in _PARTICIPLE_FORM.finditer(text, lo, start)
                 if (w := _WORD_BACK.search(text, max(lo, v.start() - 40), v.start()))
                 and _class_noun(text, w.start(1), w.group(1), lo)[0]]
    return _dated_verb_outside(text, lo, start, qualified)


_PARTICIPLE_FORM = re.compile(r"\b\w+(?:ed|en)\b")


# --- judging one match -----------------------------------------------------------------------------


def _context_veto(text: str, m: re.Match) -> str | None:
    """Why the sentence around a match makes it generic, conditional, an example or a name."""
    start, end = m.span()
    phrase = m.group(0)
    lo, hi = _sentence(text, start, end)
    sentence = text[lo:hi]
    if phrase.isupper() and len(phrase) > 1:
        return "name"
    if any(w[:1].isupper() and w.lower() not in WEEKDAYS for w in phrase.split()[1:]):
        return "name"  # "Last Week Tonight", "Yesterday Morning Show"
    first_upper = phrase[:1].isupper()
    at_start = _at_sentence_start(text, start, loose=True)
    if first_upper and not at_start:
        return "name"  # "the Yesterday project"
    if first_upper and _looks_like_a_name(text, end):
        return "name"  # "Today I Learned"
    if _HABITUAL.search(sentence) and not _quantified_past(sentence) and not _habit_reported_after(text, lo, hi, end):
        return "habitual"
    if _CONDITIONAL.search(sentence) or _CONDITIONAL_LEAD.match(sentence):
        return "conditional"
    if _EXAMPLE.search(sentence) or _EXAMPLE.search(text[max(0, lo - 14):lo]):
        return "example"
    generic = _generic_statement(text, m, lo, hi)
    if generic:
        return generic
    if _in_a_frame(text, lo, hi, start):
        return "generic"  # "Weekly review template: what broke last week, ..."
    if _in_a_rule(text, lo, hi, start):
        return "generic"  # "Never start it late in the day; leave it for tomorrow morning."
    if (m.group("poss") or m.group("inn")) and (_IMPERATIVE.match(sentence) or _MODAL.search(sentence)):
        return "generic"  # "check today's logs first", "retry in 3 days": relative to whenever it is done
    if m.group("inn") and (_BARE_PLURAL_LEAD.match(sentence) or _COUNTED_FROM.match(text, end)):
        return "generic"  # "Invoices are due in 30 days": a policy, not a date
    if m.group("poss"):
        if not _names_an_event(text, end):
            # "today's browsers" are the current ones (vague, like "today" meaning currently);
            # "yesterday's numbers" name a day but no event of it: only an event's day is safe to name
            return "present" if m.group("today") else "possessive"
        return None
    if m.group("today") and not m.group("earlier"):
        as_of = not m.group("poss") and _SINCE.search(text[max(0, start - 12):start])
        if not as_of and not _today_is_an_event(text, start, end, lo, hi, at_start):
            return "present"  # "ko-only today", "today's browsers": currently
    return None


# "every ticket", "each flag": a quantifier over things, not a frequency ("every day", "each Monday").
_QUANTIFIER = re.compile(r"\b(?:every|each)[ \t]+(?!(?:other|single|time|day|night|morning|afternoon|evening|week|"
                         r"weekend|month|quarter|year|hour|minute|sprint|run|release|deploy|cycle|shift|" + _WD + r")s?\b)",
                         re.IGNORECASE)


def _quantified_past(sentence: str) -> bool:
    """Whether the only habitual words are quantifiers over things in a past or future sentence: in
    "Support answered every ticket yesterday" the phrase dates the answering."""
    markers = list(_HABITUAL.finditer(sentence))
    return all(_QUANTIFIER.match(sentence, h.start()) for h in markers) and bool(_DATED_VERB.search(sentence))


# A reported instruction: "asked me to always run the linter", "told us to never deploy on Fridays".
_REPORTED_INSTRUCTION = re.compile(
    r"\b(?:asked|told|reminded|instructed|advised|urged|wanted|requested)[ \t]+(?:[\w-]+[ \t]+){1,3}?to[ \t]+",
    re.IGNORECASE)


def _habit_reported_after(text: str, lo: int, hi: int, end: int) -> bool:
    """Whether every habit marker of the sentence sits inside an instruction reported after the phrase:
    in "Earlier today the user asked me to always run the linter" the habit is the instruction's, and
    the asking happened on one day. A phrase inside the instruction ("asked me to always check
    today's logs") is the habit's."""
    r = _REPORTED_INSTRUCTION.search(text, end, hi)
    if not r or not _DATED_VERB.match(text, r.start()):
        return False
    return all(h.start() >= r.end() - lo for h in _HABITUAL.finditer(text[lo:hi])) and \
        not _HABITUAL.search(text, lo, r.start())


_SINCE = re.compile(r"\b(?:as[ \t]+of|since|until|till|from|starting)\s+\Z", re.IGNORECASE)


def _names_an_event(text: str, end: int) -> bool:
    """Whether the words after a possessive "yesterday's" are an event's name: an event noun, alone or
    after one or two qualifiers ("outage", "Kafka outage", "search API deploy")."""
    words = _NOUN_WORDS.match(text, end)
    if not words:
        return False
    for i, word in enumerate(words.group(0).split()):
        if _EVENT_NOUN.fullmatch(word):
            return True
        if i == 2 or _NOT_A_QUALIFIER.fullmatch(word) or (word.islower() and _PLAIN_PLURAL_OR_ADVERB.search(word)):
            return False
    return False


_PLAIN_PLURAL_OR_ADVERB = re.compile(r"[^sui]s\Z|..ly\Z")  # "logs", "quickly"; not "status", "analysis"


def _today_is_an_event(text: str, start: int, end: int, lo: int, hi: int, at_start: bool) -> bool:
    """"We decided today", "Today we moved": a past or future verb before it in its clause, or after
    it when it opens the sentence. In "they agree today", "a reversal today beats a ruling defended
    ..." or "(today hand-authored)" it means "currently"."""
    clause_lo = lo
    for b in _CLAUSE_BREAK.finditer(text, lo, start):
        clause_lo = b.end()
    if _DATED_VERB.search(text, clause_lo, start):
        return True
    return at_start and text[start].isupper() and bool(_DATED_VERB.search(text, end, hi))


# Vetoes that read the phrase's clause as generic: every other phrase of that clause is generic too.
_GENERIC_VETOES = frozenset({"habitual", "conditional", "example", "generic"})


def _consistent(text: str, replacements: list[Replacement], generic: list[tuple[int, int]]) -> list[Replacement]:
    """Drop the replacements that share a clause with a phrase read as generic: in "Orders placed today
    ship tomorrow" one phrase dated and its pair left would say two things of one rule."""
    if not generic or not replacements:
        return replacements
    clauses = {_clause(text, a, b, _CLAUSE_BREAK) for a, b in generic}  # "..., Bob said last week" is its own
    sentences = {_sentence(text, a, b) for a, b in generic}
    return [r for r in replacements if not any(lo <= r.start and r.end <= hi for lo, hi in clauses)
            and not _sibling_class_rule(text, r, sentences)]


def _sibling_class_rule(text: str, r: Replacement, sentences: set[tuple[int, int]]) -> bool:
    """Whether `r` sits in a sentence whose other clause was read as a class's rule and its own clause
    opens with a class too: in "anything paid for today leaves tomorrow; later payments go out the day
    after tomorrow" the second clause is the same rule's other half."""
    if not any(lo <= r.start and r.end <= hi for lo, hi in sentences):
        return False
    return _generic_subject(text, *_item(text, r.start, r.end))


def _judge(text: str, m: re.Match, written: dt.date | None) -> Replacement | Mention | str | None:
    start, end = m.span()
    phrase = m.group(0)
    before = text[max(0, start - 40):start]
    after = text[end:end + 40]
    if m.group("poss"):
        # "in yesterday's standup", "about yesterday's outage": before a possessive a preposition only
        # places the event; a determiner ("the same yesterday's") or "Monday" ("Monday next week's") blocks it.
        if _NEVER_BEFORE.search(before) or _DETERMINER_BEFORE.search(before):
            return None
    elif _APPROX_BEFORE.search(before):
        return Mention(start, end, phrase, "vague")
    elif _RANGE_BEFORE.search(before):
        return Mention(start, end, phrase, "vague")  # "2 or 3 days ago", "2 to 3 days ago"
    elif m.group("rel") and _PART_OF_BEFORE.search(before):
        return None  # a part of a week, month or year: no date to name
    elif _NEVER_BEFORE.search(before) or (_BLOCKING_BEFORE.search(before) and not _DROP_ON.search(before)):
        return None  # "the last week" (a duration), "than yesterday", "a week from today"
    if _BLOCKING_AFTER.match(after):
        return None  # "last week of March", "yesterday or the day before"
    if _LABEL_AFTER.match(after) and not _LABEL_PREPOSITION.search(before) and not _clause_before_colon(text, start, end):
        return None  # "today: ..." is a label; "as of today: 4 open", "Reproduced it this morning: ..." are dated
    if _ABSOLUTE_AFTER.match(after) or _ABSOLUTE_BEFORE.search(before):
        return None  # already dated: "yesterday (2026-03-31)"
    core_end = m.start("poss") if m.group("poss") else end
    if _CONTRACTED_SUBJECT.match(text[core_end:core_end + 40]) or (
            _SUBJECT_AFTER.match(text[core_end:core_end + 40]) and _opens_clause(text, start)):
        return Mention(start, end, phrase, "ambiguous")  # "tomorrow is the freeze", "today's the day"
    if m.group("poss") and not (m.group("yt") or m.group("today")):
        # Only "yesterday's", "today's", "tomorrow's" become "the <date>"; "last week's outage",
        # "next Monday's release train" are too clever (or a standing schedule).
        return Mention(start, end, phrase, "possessive")
    base = written or dt.date(2000, 1, 3)  # a stand-in: only to check the phrase has a reading
    try:
        reading = _read(m, base)
    except (OverflowError, ValueError):
        return None
    if isinstance(reading, str):
        return Mention(start, end, phrase, reading)
    veto = _context_veto(text, m)
    if veto == "present":
        return Mention(start, end, phrase, "vague")
    if veto == "possessive":
        return Mention(start, end, phrase, "possessive")
    if veto in _GENERIC_VETOES:
        return veto  # the caller keeps the phrase's clause consistent with it
    if veto:
        return None
    if written is None:
        return Mention(start, end, phrase, "no date")
    return _replacement(text, m, reading)


# --- the public functions --------------------------------------------------------------------------


def scan_relative_dates(text: str, written: dt.date | None) -> DateScan:
    """The relative dates in `text`, resolved against `written` (the memory's own date).

    With `written` None the phrases are still found; those that would have been rewritten are
    `held` with why "no date".
    """
    if not text or not might_have_dates(text):
        return EMPTY
    found = list(PHRASE.finditer(text))
    vague_found = list(VAGUE.finditer(text))
    if not found and not vague_found:
        return EMPTY
    masks = _masked_spans(text)
    replacements: list[Replacement] = []
    held: list[Mention] = []
    taken: list[tuple[int, int]] = []
    generic: list[tuple[int, int]] = []  # phrases whose clause reads as generic
    matches = [m for m in found if not _inside(masks, *m.span())]
    for i, m in enumerate(matches):
        taken.append(m.span())
        if _touching(text, matches, i):
            held.append(Mention(m.start(), m.end(), m.group(0), "ambiguous"))  # "a week ago today"
            continue
        verdict = _judge(text, m, written)
        if isinstance(verdict, Replacement):
            replacements.append(verdict)
        elif isinstance(verdict, str):
            generic.append(m.span())
        elif verdict is not None:
            held.append(verdict)
    replacements = _consistent(text, replacements, generic)
    vague = [Mention(h.start, h.end, h.phrase, "vague") for h in held if h.why == "vague"]
    held = [h for h in held if h.why != "vague"]
    for m in vague_found:
        if not _inside(masks, *m.span()) and not _inside(taken, *m.span()):
            vague.append(Mention(m.start(), m.end(), m.group(0), "vague"))
    vague.sort(key=lambda v: v.start)
    return DateScan(tuple(replacements), tuple(vague), tuple(held))


def apply_replacements(text: str, replacements: Iterable[Replacement]) -> str:
    """`text` with each replacement's span rewritten; every other character (CRLF, BOM, trailing
    whitespace) is kept. Refuses spans that overlap or no longer hold their phrase."""
    try:
        return splice(text, ((r.start, r.end, r.phrase, r.replacement) for r in replacements))
    except SpliceError as exc:
        raise ValueError(f"replacement {exc.before!r} at {exc.start} does not match the text") from None
