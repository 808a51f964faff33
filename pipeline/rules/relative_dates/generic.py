"""The generic-statement vetoes: a class, a duration, a mention, a standing instruction, a frame, a rule.

A phrase is dated only when it places an event relative to the day the memory was written. In a
generic sentence it is relative to whenever the statement is applied: "Files untouched since
yesterday are deleted" defines a class, "Quotes expire in 7 days" gives a validity period, "Phrases
like yesterday" mention the word, "On failure, retry tomorrow" is a standing instruction, "Weekly
review template: what broke last week" is a form to fill in, "Never deploy late; leave it for
tomorrow" is a rule. What tells them apart from "We deleted files untouched since yesterday" is the
tense, so the shared tense reading (`_DATED_VERB`, `_dated_verb_outside`) and noun-phrase reading
(`_class_noun`, `_NOT_A_QUALIFIER`) live here too, the lowest module that needs them.
"""

from __future__ import annotations

import re

from .grammar import PHRASE
from .sentences import _BULLET, _CLAUSE_BREAK, _REACH, _clause, _clause_start


# Words that end a noun phrase rather than qualify its head: "yesterday's numbers show errors" names no
# event. A lowercase plural is not taken as a qualifier either ("numbers", "logs"); a capitalised
# name ending in s ("Postgres", "Redis") is.
_NOT_A_QUALIFIER = re.compile(
    r"(?:the|a|an|and|or|but|of|to|in|on|at|for|with|by|from|into|as|is|was|were|are|be|been|has|have|had|will|would|"
    r"not|that|which|who|it|its|this|these|those|we|they|he|she|i|you|our|their|his|her|my|your|than|then|so|only)",
    re.IGNORECASE)
_IMPERATIVE = re.compile(
    r"^\W*(?:check|run|use|review|look|read|make|keep|set|add|remove|avoid|prefer|ensure|verify|confirm|compare|open|grep|"
    r"search|start|stop|pull|push|merge|rebase|restart|ask|tell|send|post|write|update|create|delete|skip|retry|try|"
    r"clear|clean|build|test|rerun|re-run|fix|note|record|log|file|do|don['’]t|never|please|remember|schedule|"
    r"plan|put|move|mark|tag|label|list|include|exclude|treat|assume|report)\b(?![ \t]*:)", re.IGNORECASE)  # "Note:" labels
# Past or future tense: "today" in a present-tense sentence usually means "currently" (vague).
_DATED_VERB = re.compile(
    r"\b(?:(?!(?:need|seed|speed|feed|embed|exceed|proceed|succeed|red|bed|shed|breed|bleed|indeed)\b)\w{2,}ed|was|were|did|had|"
    r"went|broke|ran|took|made|found|got|saw|told|said|wrote|built|left|came|began|sent|spent|lost|paid|led|fell|froze|"
    r"chose|gave|held|kept|knew|met|rose|sold|taught|threw|won|woke|caught|brought|bought|thought|hit|cut|shut|put|set|"
    r"taken|broken|written|given|frozen|chosen|driven|begun|shown|seen|fallen|forgotten|gotten|"
    r"will|['’]ll|shall|going\s+to|scheduled|planned|due)\b", re.IGNORECASE)


# A phrase is dated only when it places an event relative to the day the memory was written. In a
# generic sentence it is relative to whenever the statement is applied: "Files untouched since
# yesterday are deleted" defines a class, "Quotes expire in 7 days" gives a validity period, "Phrases
# like yesterday" mention the word, "On failure, retry tomorrow" is a standing instruction. What
# tells them apart from "We deleted files untouched since yesterday" is the tense: a generic
# statement has no past or future verb outside the phrase's own qualifier.

_DETERMINERS = frozenset("the this that these those our your my their his her its we i you they".split())
_INDEFINITE = frozenset("a an any all no each every".split())
_PRONOUNS = frozenset("anything everything nothing anyone anybody everyone everybody whatever whichever".split())
# A plural noun: "files", "orders", "branches"; not "status", "analysis", "this", "us", "was".
_PLURAL = re.compile(r"[a-z][\w-]*[a-z](?<![sui])s\Z", re.IGNORECASE)
_WORD_BACK = re.compile(r"([A-Za-z][\w'’-]*)[ \t]+\Z")
# A qualifier that defines a class by a time: "(files) untouched since", "(orders) placed before noon",
# "(jobs) that failed", "(anything) modified since" - a participle or a relative clause, then up to
# three words before the phrase.
_QUALIFIER = re.compile(
    r"(?P<head>[A-Za-z][\w-]*)[ \t]+(?P<rel>(?:that|which|who)[ \t]+"
    r"(?:(?:were|are|was|is|have|has|had|did|do|does)(?:n['’]t|[ \t]+not)?[ \t]+(?:been[ \t]+)?)?)?"
    r"(?:(?:not|never|last|first|recently|already)[ \t]+)?"
    r"(?P<part>[a-z]+(?:ed|en)|untouched|unused|idle|stale|inactive|open|left|"
    r"(?:re|pre|un)?(?:sent|made|seen|built|run|done|kept|held|bought|sold|paid)|older|newer|younger)"
    r"(?:[ \t]+(?!(?:and|but|or|so|then)\b)[\w:-]+){0,3}?[ \t]+\Z", re.IGNORECASE)
_VERBISH = re.compile(r"was|does|goes|gets|has|is|its|this|thus|yes|less|unless|across|always|perhaps|sometimes|"
                      r"\w+ly|\w+ss", re.IGNORECASE)
# After the phrase, the clause goes on to its verb ("Orders placed today ship tomorrow"), not to a
# place or a stop ("Nothing changed after last Monday in prod.").
_CLAUSE_GOES_ON = re.compile(
    r"(?:[ \t]+(?:before|after|by|until)[ \t]+(?:\d{1,2}(?::\d{2})?(?:[ \t]*[ap]\.?m\.?)?|noon|midnight)(?![\w:]))?"  # "today before 2 pm"
    r"[ \t]+(?!(?:in|on|at|for|to|from|with|by|of|and|or|but|so|as|than|then|when|after|before|since|until)\b)[a-z]",
    re.IGNORECASE)
_ADJECTIVE_BEFORE = re.compile(r"\b(?:a|an|the|any|each|every|all|no)[ \t]+\Z", re.IGNORECASE)
_BE_BEFORE = re.compile(r"\b(?:am|is|are|be|being|get|gets|getting|stay|stays|remain|remains|become|becomes)"
                        r"(?:[ \t]+(?:not|never|always|only|then|also|still|automatically|usually))?[ \t]+\Z", re.IGNORECASE)
# A validity or a period after a generic subject: "Price quotes expire in 7 days", "A quote expires in
# 14 days", "Trial accounts are deleted in 30 days". The subject is the words before the verb.
_CLASS_VERBS = (r"(?:are|is|expires?|lapses?|must|can|may|gets?|go(?:es)?|needs?|ha(?:ve|s)|stays?|becomes?|runs?|closes?|"
                r"renews?|times?[ \t]+out|auto-\w+|ship|ships|arrive|arrives|reset|resets|rotate|rotates|settles?|starts?|ends?)")
_SUBJECT_VERB = re.compile(
    r"^[\W_]*(?P<subject>(?:[A-Za-z][\w-]*[ \t]+){0,3}[A-Za-z][\w-]*)[ \t]+" + _CLASS_VERBS + r"\b", re.IGNORECASE)
# A comma that opens a list item with its own subject and verb: "..., refresh tokens expire in 14 days,
# and P1 tickets opened after 5 pm get one within 30 minutes". Each item is a clause of its own.
_LIST_ITEM = re.compile(
    r",[ \t]+(?:(?:and|or)[ \t]+)?(?=(?:[A-Za-z0-9][\w-]*[ \t]+){0,3}[A-Za-z][\w-]*[ \t]+(?:"
    + _CLASS_VERBS + r"|[a-z]+ed)\b)", re.IGNORECASE)


def _item(text: str, start: int, end: int) -> tuple[int, int]:
    """The clause around text[start:end] (cut at a colon, a semicolon or a dash), cut again at the
    commas that open list items."""
    lo, hi = _clause(text, start, end)
    for b in _LIST_ITEM.finditer(text, lo, start):
        lo = b.end()
    nxt = _LIST_ITEM.search(text, end, hi)
    return lo, nxt.start() if nxt else hi
# The word mentioned, not used: "phrases like yesterday", "the word tomorrow", "a user who says next
# week" - and the phrases listed after the first ("like yesterday or last week").
_MENTION_BEFORE = re.compile(
    r"(?:\b(?:words?|phrases?|terms?|expressions?|strings?|wording|spelled|spelling)(?:[ \t]+(?:like|such[ \t]+as))?"
    r"|\b(?:users?|someone|anyone|people|customers?|they|he|she)[ \t]+(?:who[ \t]+)?"
    r"(?:says?|saying|writes?|writing|types?|typing|mentions?|asks?[ \t]+for))"
    r"[ \t]+(?:[\w ]{1,30}?(?:,|[ \t]or|[ \t]and)[ \t]+){0,3}\Z", re.IGNORECASE)
# A standing instruction names its trigger: "On failure, retry tomorrow", "After a schema change,
# rerun it tomorrow", "Failing that, ...".
_TRIGGER = re.compile(
    r"\b(?:on[ \t]+(?:failure|error|errors|timeout|success|rejection)|(?:after|once|before)[ \t]+(?:a|an|any|each|every)\b|"
    r"failing[ \t]+that|as[ \t]+needed|or[ \t]+else)\b", re.IGNORECASE)
_WHEN = re.compile(r"\bwhen\b", re.IGNORECASE)
_LEAD_COMMA = re.compile(r"[ \t]*,?[ \t]*")


def _lead_comma_end(text: str, pos: int) -> int:
    lead = _LEAD_COMMA.match(text, pos)  # it matches the empty string too
    return lead.end() if lead else pos
# What a hypothetical text says: "a note that says the freeze ends tomorrow", "one saying the key was
# rotated 3 days ago" - an indefinite note, message or memory, in a sentence with no past of its own
# ("Alice sent a message saying the deploy failed yesterday" reports a real one).
_INDEFINITE_TEXT_SAYS = re.compile(
    r"\b(?:a|an|one|any|some)[ \t]+(?:[\w-]+[ \t]+){0,2}?(?:(?:that|which)[ \t]+)?"
    r"(?:says|saying|reads|reading|states|stating|mentions|mentioning)\b", re.IGNORECASE)


def _dated_verb_outside(text: str, lo: int, hi: int, inside: list[tuple[int, int]]) -> bool:
    """Whether text[lo:hi] holds a past or future verb outside the spans `inside`; a participle after
    a present "is" / "are" / "get" ("are deleted", "is due") is a present passive, not a past."""
    for v in _DATED_VERB.finditer(text, lo, hi):
        if any(a <= v.start() < b for a, b in inside):
            continue
        if _BE_BEFORE.search(text, max(lo, v.start() - 40), v.start()):
            continue
        if _ADJECTIVE_BEFORE.search(text, max(lo, v.start() - 12), v.start()):
            continue  # "a failed migration", "the signed quotes": an adjective
        if _adjectival_participle(text, lo, v):
            continue  # "the SLA promised on the pricing page": it qualifies a noun, it dates nothing
        return True
    return False


# A participle right after a noun phrase that is itself no subject - the object of a present "is" or of
# a preposition ("that is the SLA promised on the pricing page", "per the limit agreed with support"),
# or in apposition after a clause (", a delay described in the runbook") - and followed by its own
# preposition qualifies the noun: "The deploy failed on Monday" (a subject) stays a past.
_NP_OBJECT_BEFORE = re.compile(
    r"(?:\b(?:is|are|am|be|['’]s|per|of|with|to|for|from|by|in|on|at|under|like|than|against|about)[ \t]+"
    r"(?:the|a|an|this|that|our|its|their|your|his|her|my)"
    r"|(?:^|[,:;—–(]|\s-)[ \t]*(?:a|an|the))"
    r"(?:[ \t]+[A-Za-z][\w-]*){1,3}[ \t]+\Z", re.IGNORECASE)
_PARTICIPLE = re.compile(
    r"\w{2,}ed|\w+en|made|built|sent|set|put|kept|held|paid|sold|found|told|said|left|lost|bought|brought|caught|"
    r"taught|won|cut|shut|hit|led|spent|met|shown|seen", re.IGNORECASE)
_PREPOSITION_AFTER = re.compile(
    r"[ \t]+(?:on|in|with|by|at|for|to|under|from|during|through|per|across|within|into|over|between|against)\b",
    re.IGNORECASE)


def _adjectival_participle(text: str, lo: int, v: re.Match) -> bool:
    if not _PARTICIPLE.fullmatch(v.group(0)) or not _PREPOSITION_AFTER.match(text, v.end()):
        return False
    # Bounded; a window cut inside the sentence gets a letter first so that neither "^" nor a cut word
    # ("th|is the ...") reads as a clause start.
    cut = v.start() - lo > 80
    np = _NP_OBJECT_BEFORE.search(("x" if cut else "") + text[v.start() - 80 if cut else lo:v.start()])
    return np is not None and not any(_NOT_A_QUALIFIER.fullmatch(w) for w in np.group(0).split()[-1:])


def _class_noun(text: str, head_start: int, head: str, floor: int) -> tuple[bool, int]:
    """Whether the noun phrase ending in `head` names a class - a bare plural ("files", "customer
    orders") or an indefinite ("any branch", "a quote", "anything"), not "the files" or "our orders" -
    and where the phrase starts."""
    if head.lower() in _PRONOUNS:
        return True, head_start
    plural = bool(_PLURAL.search(head))
    pos = head_start
    for _ in range(3):  # the words before the head: modifiers, then a determiner or the clause start
        w = _WORD_BACK.search(text, max(floor, pos - 40), pos)
        if not w:
            return plural, pos
        word = w.group(1).lower()
        if word in _INDEFINITE:
            return True, w.start()
        if word in _DETERMINERS or word.endswith(("'s", "’s")):
            return False, w.start()
        if _DATED_VERB.fullmatch(word) or _NOT_A_QUALIFIER.fullmatch(word):
            return plural, pos  # a verb or a preposition ends the noun phrase
        pos = w.start()
    return plural, pos


def _class_qualifiers(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """The spans (noun start, phrase end) where a relative phrase in text[lo:hi] qualifies a class:
    "files untouched since yesterday", "orders placed today", "jobs that failed yesterday"."""
    spans = []
    for p in PHRASE.finditer(text, lo, hi):
        q = _QUALIFIER.search(text, max(lo, p.start() - 80), p.start())
        if not q or _NOT_A_QUALIFIER.fullmatch(q.group("head")) or _VERBISH.fullmatch(q.group("head")):
            continue
        generic, np_start = _class_noun(text, q.start("head"), q.group("head"), lo)
        if not generic:
            continue
        if not q.group("rel") and not text[lo:np_start].strip(" \t*_-+>") and not _CLAUSE_GOES_ON.match(text, p.end(), hi):
            continue  # "Alerts fired five days ago.": the participle is the sentence's own verb
        spans.append((np_start, p.end()))
    return spans


def _generic_subject(text: str, lo: int, hi: int) -> bool:
    """Whether the sentence text[lo:hi] opens with a class for its subject ("Price quotes", "A quote",
    "All signed quotes") and says nothing past or future about it."""
    s = _SUBJECT_VERB.match(text[lo:hi])  # sliced: "^" never matches at a `pos` inside the text
    if not s:
        return False
    words = s.group("subject").split()
    first, head = words[0].lower(), words[-1]
    if first in _INDEFINITE or head.lower() in _PRONOUNS:
        generic = True
    else:  # "Price quotes", "Quotes we send": a plural without a determiner or an owner
        generic = any(_PLURAL.search(w) and not _VERBISH.fullmatch(w) for w in words) and first not in _DETERMINERS \
            and not any(w.endswith(("'s", "’s")) for w in words)
    subject = (lo + s.start("subject"), lo + s.end("subject"))
    return generic and not _dated_verb_outside(text, lo, hi, [subject])


# A standing instruction to do something every time: an imperative clause (a bare verb opening it, at
# the sentence's start or after a label's colon or a trigger's comma) in a sentence that names a
# recurring occasion - a routine, a checklist, a habit, "before opening any ticket", "at the start of
# each shift", "when you". Its phrase is relative to whenever it is done. "Retry the job that failed
# yesterday" names no occasion: a one-off to-do, dated; and an imperative whose own clause reports a
# past of a definite thing ("... the export that failed yesterday") is dated even in a checklist.
_RECURRING = re.compile(
    r"\b(?:routines?|checklists?|check-lists?|habits?|rituals?|procedures?|playbooks?|runbooks?|sops?|"
    r"(?:every|each)[ \t]+(?:time|day|morning|evening|shift|session|week)|whenever|when[ \t]+you|first[ \t]+thing|"
    r"at[ \t]+the[ \t]+(?:start|end|beginning|top)[ \t]+of|"
    r"(?:before|after)[ \t]+(?:[a-z]+ing[ \t]+(?:any|each|every|a|an|new)\b|any|each|every|standups?|stand-ups?|the[ \t]+standup|handoffs?|"
    r"sign-?off|shift[ \t]+change))\b", re.IGNORECASE)
# A bare verb opening a clause: a known imperative, or a base-form word (no -s, -ed, -ing) before its
# object ("skim yesterday's digest", "archive the log").
_BASE_VERB_LEAD = re.compile(
    r"[\W_]*(?P<verb>[A-Za-z][a-z]+)(?<![^s]s)(?<!ed)(?<!ing)[ \t]+"
    r"(?:the|a|an|any|all|every|each|my|our|your|their|its|it|them|this|that|these|those|"
    r"yesterday['’]s|today['’]s|tomorrow['’]s|last|up|out|through|over|off|back)\b", re.IGNORECASE)
_NOT_A_VERB = frozenset("we they you i he she it there here then also just only and but or so yet if when while "
                        "since because once as per from with without into onto over under about after before "
                        "at by for in of on to up out all any each every no not".split())


def _opens_with_imperative(text: str, pos: int, hi: int) -> bool:
    clause = text[pos:hi]
    if _IMPERATIVE.match(clause):
        return True
    b = _BASE_VERB_LEAD.match(clause)
    return b is not None and b.group("verb").lower() not in _NOT_A_VERB and b.group("verb").lower() not in _DETERMINERS


def _standing_imperative(text: str, lo: int, hi: int, start: int, end: int) -> bool:
    if not _RECURRING.search(text, lo, hi):
        return False
    clause_lo = _clause_start(text, lo, start)
    if not _opens_with_imperative(text, clause_lo, hi):
        return False
    qualifiers = _class_qualifiers(text, clause_lo, hi)
    return not _dated_verb_outside(text, clause_lo, hi, qualifiers)


def _generic_statement(text: str, m: re.Match, lo: int, hi: int) -> str | None:
    """Why the sentence around `m` is generic (a class, a period, a mention, a standing instruction)."""
    start, end = m.span()
    clause_lo = _clause_start(text, lo, start)
    if _MENTION_BEFORE.search(text, max(clause_lo, start - 80), start):
        return "example"  # "phrases like yesterday": the word, not a day
    says = _INDEFINITE_TEXT_SAYS.search(text, lo, start)
    if says and not _dated_verb_outside(text, _clause_start(text, lo, says.start()), says.start(), []):
        return "example"  # "Consider a note that says the freeze ends tomorrow"
    sentence = text[lo:hi]
    if _TRIGGER.search(sentence) and not _dated_verb_outside(text, lo, hi, []):
        return "generic"  # "On failure, retry tomorrow"
    when = None
    for w in _WHEN.finditer(text, lo, start):
        when = w
    if when and not _dated_verb_outside(text, when.end(), hi, []):
        return "conditional"  # "Deploys are rolled back when they fail today"
    # The class and its rule are one clause: a past in the clause that explains it after a colon or a
    # semicolon ("...: that is what the courier signed in 2024") does not date the rule.
    c_lo, c_hi = _item(text, start, end)
    qualifiers = _class_qualifiers(text, c_lo, c_hi)
    if qualifiers and not _dated_verb_outside(text, c_lo, c_hi, qualifiers):
        return "generic"  # "Orders placed today ship tomorrow": the class and its rule
    if _standing_imperative(text, lo, hi, start, end):
        return "generic"  # "Morning routine: skim yesterday's error digest before opening any ticket"
    if m.group("inn") and (_generic_subject(text, lo, hi) or _generic_subject(text, *_item(text, start, end)) or (
            not text[clause_lo:start].strip(" \t*_-+>") and _generic_subject(text, _lead_comma_end(text, end), hi))):
        return "generic"  # "Price quotes expire in 7 days", "In 7 days quotes expire": a period, not a date
    return None
# A generic frame names itself before a colon or a dash: "Weekly review template: what broke last week,
# what ships next week" is a form to fill in, not a report. The words that say so are the label's own
# ("template", "format") or its head ("Release rule:", "Deploy policy -"); "Policy update:" is dated.
_FRAME_LABEL = re.compile(
    r"(?:\b(?:templates?|boilerplate|skeleton|format|standing|recurring|reusable)\b[^.!?:\n]{0,40}?"
    r"|\b(?:rules?|polic(?:y|ies)|guidelines?|conventions?)[ \t]*\**)"
    r"(?::|[ \t][—–-][ \t])",
    re.IGNORECASE)
# ... or holds placeholders to fill in: "{{n}} deploys since last week", "owner: ___", "YYYY-MM-DD".
_PLACEHOLDER = re.compile(r"\{\{[^{}\n]{1,40}\}\}|_{3,}|\bYYYY-MM(?:-DD)?\b|\[(?:date|name|owner|tbd|\.\.\.|…)\]",
                          re.IGNORECASE)
# ... or a template that asks: "The weekly review template asks what broke last week."
_FRAME_SAYS = re.compile(
    r"\b(?:templates?|boilerplate|form)[ \t]+(?:asks?|lists?|covers?|contains?|includes?|reads?|says?|prompts?|"
    r"has[ \t]+(?:a[ \t]+)?(?:fields?|sections?|questions?))\b", re.IGNORECASE)
_FRAME_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+[^\n]*\b(?:templates?|boilerplate|skeleton|format)\b",
                            re.IGNORECASE)
# Cheap substring tests first: the frame patterns run only where one of their words occurs.
_FRAME_WORDS = ("templat", "boilerplate", "skeleton", "format", "standing", "recurring", "reusable", "rule", "polic",
                "guideline", "convention", "form ")
_LIST_LINE = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]|^\s*\Z")


def _in_a_frame(text: str, lo: int, hi: int, start: int) -> bool:
    """Whether the phrase fills a template: its sentence opens with a frame's label, or it is an item
    of a list whose introducing line (or heading) names a template."""
    lead = text[lo:start]
    low = lead.lower()
    if any(w in low for w in _FRAME_WORDS) and (_FRAME_LABEL.search(lead) or _FRAME_SAYS.search(lead)):
        return True
    sentence = text[lo:hi]
    if ("{{" in sentence or "__" in sentence or "[" in sentence or "YYYY" in sentence) and _PLACEHOLDER.search(sentence):
        return True
    pos = text.rfind("\n", 0, lo) + 1
    if not _BULLET.match(text[pos:pos + 12]):
        return False
    floor = max(0, lo - _REACH)
    while pos > floor:  # walk up the list to the line that introduces it
        prev = text.rfind("\n", 0, pos - 1) + 1
        line = text[prev:pos - 1]
        if not _LIST_LINE.match(line):  # a heading, or a label that ends in a colon
            return bool(_FRAME_HEADING.match(line) or (line.rstrip().endswith(":") and _FRAME_LABEL.search(line)))
        pos = prev
    return False


# A rule: a sentence or clause that opens with "Never" (or "don't ever", "as a rule"). The advice in it
# is relative to whenever the rule is applied ("leave it for tomorrow morning"), unless the phrase's
# own clause reports a dated event ("we learned that last week").
_RULE_OPENING = re.compile(
    r"(?:^|[;:—–(]|\s-\s)[\s*_>]*(?:(?:[-*+]|\d+[.)])[ \t]+)?[*_]*(?:never|don['’]t[ \t]+ever|do[ \t]+not[ \t]+ever|"
    r"as[ \t]+a[ \t]+rule|rule[ \t]+of[ \t]+thumb)\b", re.IGNORECASE)


def _in_a_rule(text: str, lo: int, hi: int, start: int) -> bool:
    lead = text[lo:start]
    low = lead.lower()
    if not ("never" in low or " ever" in low or "rule" in low) or not _RULE_OPENING.search(lead):
        return False
    clause_lo = lo
    for b in _CLAUSE_BREAK.finditer(text, lo, start):
        clause_lo = b.end()
    clause_end = _CLAUSE_BREAK.search(text, start, hi)
    return not _DATED_VERB.search(text, clause_lo, clause_end.start() if clause_end else hi)
