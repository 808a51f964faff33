"""Relative time expressions in memory text, resolved against the memory's own date (issue 15).

`scan_relative_dates(text, written)` finds "yesterday", "3 days ago", "last Tuesday", "next week"...
and returns what each becomes (the contract is docs/relative-dates.md: "yesterday" written 2026-04-01 ->
"on 2026-03-31"; "last week" -> "the week of 2026-03-23"), the vague phrases it saw ("recently",
"soon"), and the expressions it recognised but will not rewrite (a possessive "last week's", a
"this Friday"). `apply_replacements` puts the replacements in and keeps every other character.

A small grammar of our own rather than `dateparser.search_dates`: measured on the unit-test cases
(scripts/bench_relative_dates.py), dateparser is ~50x slower, reads "we" as Wednesday and "may" as
May, mis-resolves "the day before yesterday", and returns datetimes where the contract needs the
phrase's granularity (a week, a month); the skips below (code, quotations, names, habitual and
conditional use) would be needed on top of it anyway. One precompiled pass, behind a prefilter
that rejects most texts before anything else runs.

Precision over recall: when a phrase's reading is in doubt (a rule, a template, a condition, an
example, a name, "today" meaning "currently", an approximate or ranged count) it is left alone.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from dataclasses import dataclass
from typing import Iterable

from ...text.splice import SpliceError, splice

# --- results ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replacement:
    start: int  # character offsets into the scanned text
    end: int
    phrase: str  # text[start:end]
    replacement: str


@dataclass(frozen=True)
class Mention:
    """A phrase found and deliberately not rewritten."""

    start: int
    end: int
    phrase: str
    why: str  # "vague", "possessive", "ambiguous", "no date", ...


@dataclass(frozen=True)
class DateScan:
    replacements: tuple[Replacement, ...] = ()
    vague: tuple[Mention, ...] = ()
    held: tuple[Mention, ...] = ()


EMPTY = DateScan()

# --- the grammar -----------------------------------------------------------------------------------

_WORD_NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                 "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
_NUMBERS = {w: i for i, w in enumerate(_WORD_NUMBERS, start=1)}
for _i, _unit in enumerate(["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"], start=1):
    _NUMBERS[f"twenty-{_unit}"] = 20 + _i
    _NUMBERS[f"twenty {_unit}"] = 20 + _i
_NUMBERS["thirty"] = 30
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

# Whitespace inside a phrase: spaces, or one line break of a hard-wrapped paragraph (never a blank line).
_S = r"(?:[ \t]+(?:\r?\n[ \t]*)?|\r?\n[ \t]*)"
_NUM = r"(?:\d{1,3}|" + "|".join(sorted((re.escape(w).replace(r"\ ", _S) for w in _NUMBERS), key=len, reverse=True)) + ")"
_WD = "|".join(WEEKDAYS)
_PARTS = "morning|afternoon|evening"

# `\b(?=...)` first: the engine tries the lookbehind and the alternatives only where a phrase can start.
PHRASE = re.compile(
    r"\b(?=[tyelinaofs0-9])(?<![\w/\\.\-=@$<{#~+'’])(?:"
    rf"(?P<dby>the{_S}day{_S}before{_S}yesterday)"
    rf"|(?P<dat>the{_S}day{_S}after{_S}tomorrow)"
    rf"|(?P<yt>yesterday|tomorrow)(?:{_S}(?P<ytpart>{_PARTS}|night))?"
    rf"|(?P<earlier>earlier{_S}|later{_S})?(?P<today>today)"
    rf"|this{_S}(?P<thispart>{_PARTS})"
    r"|(?P<tonight>tonight)"
    rf"|(?P<agon>{_NUM}|an?){_S}(?P<agounit>days?|weeks?|months?){_S}ago"
    rf"|in{_S}(?P<inn>{_NUM}){_S}days?"
    rf"|(?P<rel>last|next|this){_S}(?P<what>week|month|year|{_WD})"
    r")(?P<poss>['’]s(?!\w))?(?![\w/\\\-=@>}'’]|\.\w)",
    re.IGNORECASE,
)

VAGUE = re.compile(
    r"\b(?=[rslatmenc])(?<![\w/\\.\-=@$<{#~'’])(?:recently|soon|lately|a{S}while{S}ago|the{S}other{S}day|"
    r"(?:a{S}few|several|a{S}couple{S}of|some|many){S}(?:days|weeks|months|years){S}ago|some{S}time{S}ago|"
    r"earlier(?!{S}(?:today|than)\b)|nowadays|these{S}days|currently|now)(?![\w/\\\-=@>}]|\.\w)".replace("{S}", _S),
    re.IGNORECASE,
)

# Cheap test first: most memories contain none of these words. Substring tests on the lowered text
# are C-speed; a regex runs only behind a substring that also occurs inside common words ("know").
_STRONG = ("yesterday", "today", "tonight", "tomorrow", " ago", "recently", "soon", "lately", "other day",
           "earlier", "nowadays", "currently", "these days")
_NOW = re.compile(r"\bnow\b")
_RELATIVE_WORD = re.compile(r"\b(?:last|next|this)\s+(?:week|month|year|morning|afternoon|evening|" + _WD + r")")
_IN_DAYS = re.compile(r"\bin\s+\S+\s+days?\b")


def might_have_dates(text: str) -> bool:
    """False when `text` surely holds no relative or vague time phrase."""
    low = text.lower()
    if any(k in low for k in _STRONG):
        return True
    if "now" in low and _NOW.search(low):
        return True
    if ("last" in low or "next" in low or "this" in low) and _RELATIVE_WORD.search(low):
        return True
    return " day" in low and bool(_IN_DAYS.search(low))


# --- what the text around a phrase says ------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
# Every alternative is linear: no lazy scan can run past a line or a bounded length.
_MASKS = re.compile(
    r"(?:https?|ftp|file)://\S+|www\.\S+"  # URLs
    r"|(?<![^\s`\"“”(\[])[^\s`\"“”/\\]*[/\\][^\s`\"“”]*"  # paths and tokens with slashes (anchored)
    r"|\"[^\"\n]*\"|“[^”\n]*”"  # double quotations
    r"|(?<![\w'’])'(?=\S)[^'\n]{0,400}?(?<=[^\s\\])'(?!\w)"  # single quotations, not apostrophes
    r"|‘[^’\n]{0,400}’(?!\w)"
)
_BACKTICKS = re.compile(r"`+")
# A line that is a heading, a quotation (blockquote) or a table separator says nothing dated.
_SKIPPED_LINE = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]|>)")

_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)[.!?](?=\s)|\n[ \t]*\r?\n|\n(?=[ \t]*(?:[-*+]|\d+[.)])[ \t])")
_LINE_LEAD = re.compile(r"^\ufeff?[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+)*(?:\*\*|__|\*|_)?[ \t]*\Z")
_BULLET = re.compile(r"^\ufeff?[ \t]*(?:[-*+]|\d+[.)])[ \t]")
_AFTER_STOP = re.compile(r"[.!?:;][ \t]+(?:\*\*|__|\*|_)?\Z")

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
# Words that end a noun phrase rather than qualify its head: "yesterday's numbers show errors" names no
# event. A lowercase plural is not taken as a qualifier either ("numbers", "logs"); a capitalised
# name ending in s ("Postgres", "Redis") is.
_NOT_A_QUALIFIER = re.compile(
    r"(?:the|a|an|and|or|but|of|to|in|on|at|for|with|by|from|into|as|is|was|were|are|be|been|has|have|had|will|would|"
    r"not|that|which|who|it|its|this|these|those|we|they|he|she|i|you|our|their|his|her|my|your|than|then|so|only)",
    re.IGNORECASE)
_EXAMPLE = re.compile(r"\b(?:e\.g\.|i\.e\.|for\s+example|for\s+instance|examples?\s*:|(?:an|as\s+an)\s+example|imagine|"
                      r"hypothetical(?:ly)?|such\s+as|say,|samples?(?:[ \t]+\w+)?[ \t]*:|\b(?:in|for|from)[ \t]+(?:this|that|the|an?|our)[ \t]+example\b|"
                      r"^\W*(?:consider|picture)[ \t]+(?:a|an|the[ \t]+case)\b)", re.IGNORECASE)
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

_DROP_ON = re.compile(
    r"\b(?:as[ \t]+of|up[ \t]+to|since|until|till|by|before|after|from|on|for|to|through|thru|during)\s+\Z", re.IGNORECASE)
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
# Before a phrase followed by "is"/"was": nothing, a clause break or a conjunction makes the phrase the
# verb's subject ("Tomorrow is the freeze", "and today is the deadline"); after any other word it
# qualifies a longer subject ("the snapshot taken tonight is the restore point").
_OPENS_CLAUSE = re.compile(
    r"(?:^|[,;:()\[\]—–|*_>]|\s-|\b(?:and|but|or|nor|so|because|that|as|while|although|though|whereas|since|until|"
    r"then|said|says|think|thinks|hope|hopes|means|whether|if|when|why|how|what|where))[ \t]*\Z|^\W*\Z", re.IGNORECASE)
_NEXT_WORDS = re.compile(r"^[ \t,]*(\S+)[ \t]+(\S+)")


def _masked_spans(text: str) -> list[tuple[int, int]]:
    """Where nothing may be rewritten: code fences and spans, quotations, URLs, paths, headings."""
    spans: list[tuple[int, int]] = []
    pos, fence, fence_start = 0, "", 0
    for line in text.splitlines(keepends=True):
        opener = _FENCE.match(line)
        if fence:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                spans.append((fence_start, pos + len(line)))
                fence = ""
        elif opener:
            fence, fence_start = opener.group(1), pos
        elif _SKIPPED_LINE.match(line):
            spans.append((pos, pos + len(line)))
        pos += len(line)
    if fence:  # an unclosed fence runs to the end: safer than guessing where it stops
        spans.append((fence_start, len(text)))
    spans.extend(_code_spans(text))
    spans.extend(_comments(text))
    spans.extend(m.span() for m in _MASKS.finditer(text))
    return _merged(spans)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """`code` spans: a run of backticks up to the next run of the same length (CommonMark)."""
    runs = [m.span() for m in _BACKTICKS.finditer(text)]
    later: dict[int, list[int]] = {}  # run length -> indexes of runs, last first
    for i in range(len(runs) - 1, -1, -1):
        later.setdefault(runs[i][1] - runs[i][0], []).append(i)
    out, i = [], 0
    while i < len(runs):
        size = runs[i][1] - runs[i][0]
        same = later[size]
        while same and same[-1] <= i:
            same.pop()
        if not same:
            i += 1
            continue
        j = same[-1]
        out.append((runs[i][0], runs[j][1]))
        i = j + 1
    return out


def _comments(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    while (start := text.find("<!--", pos)) >= 0:
        end = text.find("-->", start + 4)
        end = len(text) if end < 0 else end + 3
        out.append((start, end))
        pos = end
    return out


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _touching(text: str, matches: list[re.Match], i: int) -> bool:
    """Two phrases with only spaces between them read as one ("a week ago today"): not ours to split."""
    here = matches[i]
    before = i > 0 and not text[matches[i - 1].end():here.start()].strip()
    after = i + 1 < len(matches) and not text[here.end():matches[i + 1].start()].strip()
    return bool(before or after)


def _inside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether [start, end) overlaps one of `spans` (sorted, not overlapping)."""
    i = bisect.bisect_left(spans, (end,)) - 1
    return i >= 0 and spans[i][1] > start


_REACH = 400


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


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence around text[start:end]: from the last stop before it to the next one after it."""
    # Bounded on both sides: a text without stops must not make every phrase read all of it.
    lo = max(0, start - _REACH)
    for m in _SENTENCE_END.finditer(text, lo, start):
        lo = m.end()
    hi = min(len(text), end + _REACH)
    nxt = _SENTENCE_END.search(text, end, hi)
    return lo, nxt.start() if nxt else hi


def _at_sentence_start(text: str, start: int, loose: bool = False) -> bool:
    """Whether a sentence starts at `start`. `loose` also counts "Note: Yesterday ..." and any line
    start (a capital there is no name); strictly, a hard-wrapped line goes on with its sentence."""
    reach = max(0, start - _REACH)
    line_start = text.rfind("\n", reach, start) + 1 or reach  # past the reach: not a line start
    before = text[line_start:start]
    stop = _AFTER_STOP.search(before)
    if stop:
        return loose or stop.group(0)[0] in ".!?"
    if not _LINE_LEAD.match(before):
        return False
    if loose or _BULLET.match(before) or line_start == 0:
        return True
    window = max(0, line_start - 1 - _REACH)
    previous = text[max(window, text.rfind("\n", window, line_start - 1) + 1):line_start].strip()
    return not previous or previous[-1] in ".!?:" or previous.startswith(("#", "|", ">", "```", "~~~"))


def _looks_like_a_name(text: str, end: int) -> bool:
    """"Today I Learned", "Yesterday Once More": the words after the phrase are title-cased too."""
    m = _NEXT_WORDS.match(text[end:end + 80])
    return bool(m and all(w[:1].isupper() for w in m.groups()))


# --- resolution ------------------------------------------------------------------------------------


def _monday(d: dt.date) -> dt.date:
    return d - dt.timedelta(days=d.weekday())


def _month(d: dt.date, delta: int) -> str:
    index = d.year * 12 + d.month - 1 + delta
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _number(token: str) -> int:
    token = re.sub(r"\s+", " ", token.lower())
    if token in ("a", "an"):
        return 1
    return int(token) if token.isdigit() else _NUMBERS[token]


@dataclass(frozen=True)
class _Reading:
    """What a phrase means before it is written out: a day, a week, a month or a year."""

    grain: str  # "day", "week", "month", "year"
    lead: str  # "on" / "in" / "" - the preposition the replacement starts with
    value: str
    part: str = ""  # "morning", "afternoon", "evening" for a day


def _read(m: re.Match, d: dt.date) -> _Reading | str:
    """The reading of one match on day `d`, or why it has none."""
    g = m.groupdict()
    day = dt.timedelta(days=1)
    if g["dby"]:
        return _Reading("day", "on", (d - 2 * day).isoformat())
    if g["dat"]:
        return _Reading("day", "on", (d + 2 * day).isoformat())
    if g["yt"]:
        part = (g["ytpart"] or "").lower()
        if part == "night":
            return "ambiguous"  # "last night" / "yesterday night": not in the contract
        when = d - day if g["yt"].lower() == "yesterday" else d + day
        return _Reading("day", "on", when.isoformat(), part)
    if g["today"]:
        if g["earlier"] and g["earlier"].lower().startswith("later"):
            return "ambiguous"
        return _Reading("day", "on", d.isoformat())
    if g["thispart"]:
        return _Reading("day", "on", d.isoformat(), g["thispart"].lower())
    if g["tonight"]:
        return _Reading("day", "on", d.isoformat(), "evening")
    if g["agon"]:
        n, unit = _number(g["agon"]), g["agounit"].lower().rstrip("s")
        if n < 1:
            return "ambiguous"
        if unit == "day":
            return _Reading("day", "on", (d - n * day).isoformat())
        if unit == "week":
            return _Reading("week", "", _monday(d - 7 * n * day).isoformat())
        return _Reading("month", "in", _month(d, -n))
    if g["inn"]:
        n = _number(g["inn"])
        return _Reading("day", "on", (d + n * day).isoformat()) if n >= 1 else "ambiguous"
    rel, what = g["rel"].lower(), g["what"].lower()
    step = {"last": -1, "this": 0, "next": 1}[rel]
    if what == "week":
        return _Reading("week", "", _monday(d + 7 * step * day).isoformat())
    if what == "month":
        return _Reading("month", "in", _month(d, step))
    if what == "year":
        return _Reading("year", "in", f"{d.year + step:04d}")
    if rel == "this":
        return "ambiguous"  # "this Friday": this week's or the coming one
    target = WEEKDAYS.index(what)
    if rel == "last":  # the latest such weekday strictly before d
        return _Reading("day", "on", (d - ((d.weekday() - target) % 7 or 7) * day).isoformat())
    return _Reading("day", "on", (d + ((target - d.weekday()) % 7 or 7) * day).isoformat())


def _write(r: _Reading, possessive: bool, drop_lead: bool) -> str | None:
    if possessive:
        # "yesterday's deploy" -> "the 2026-03-31 deploy"; anything coarser than a day is too clever.
        return f"the {r.value}" if r.grain == "day" and not r.part else None
    if r.grain == "week":
        return f"the week of {r.value}"
    core = f"the {r.part} of {r.value}" if r.part else r.value
    return core if drop_lead else f"{r.lead} {core}"


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


# --- generic statements: a class, a duration, a mention, a standing instruction --------------------
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


def _clause_start(text: str, lo: int, pos: int) -> int:
    for b in _CLAUSE_BREAK.finditer(text, lo, pos):
        lo = b.end()
    return lo


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
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]—–|]|\s-\s")


def _opens_clause(text: str, start: int) -> bool:
    """Whether the phrase at `start` begins its clause (and so can be the subject of what follows)."""
    lo, _ = _sentence(text, start, start)
    return bool(_OPENS_CLAUSE.search(text[max(lo, start - 40):start]))


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
_CLAUSE_STOP = re.compile(r"[;:—–]|\s-\s")


def _clause(text: str, start: int, end: int, stops: re.Pattern = _CLAUSE_STOP) -> tuple[int, int]:
    """The clause around text[start:end]: its sentence cut at a semicolon, a colon or a dash (or `stops`)."""
    lo, hi = _sentence(text, start, end)
    for b in stops.finditer(text, lo, start):
        lo = b.end()
    nxt = stops.search(text, end, hi)
    return lo, nxt.start() if nxt else hi


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


def _replacement(text: str, m: re.Match, reading: _Reading) -> Replacement | Mention:
    start, end = m.span()
    phrase = m.group(0)
    drop = bool(_DROP_ON.search(text[max(0, start - 12):start]))
    out = _write(reading, bool(m.group("poss")), drop)
    if out is None:
        return Mention(start, end, phrase, "possessive")
    if phrase[:1].isupper() or _at_sentence_start(text, start):
        out = out[:1].upper() + out[1:]
    return Replacement(start, end, phrase, out)


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
