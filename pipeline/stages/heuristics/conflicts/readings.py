"""The stub's contradiction judgement: opposite polarity or an antonym or a different number, on the
same subject, in the same scope.

Two memories contradict when, once polarity words are set aside, they say nearly the same thing
about the same subject and exactly one thing flips: a negation (always/never, must/must not), an
antonym (enable/disable, before/after), or a number (3 retries / 5 retries). Two flips cancel
("allowed before 16:00" / "no deploys after 16:00"). Different scopes do not contradict ("in tests,
mock the clock" / "in production, never mock the clock"). The stub prefers missing a contradiction
to raising a false alarm.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from ....rules.text import STOPWORDS, normalize
from ..conflict_statements import statements

NEGATIONS = frozenset("not never no dont don t cannot cant won wont shouldn shouldnt mustn mustnt nothing none nobody neither nor".split())
# Verbs that carry a negation of the action that follows them.
NEGATIVE_VERBS = frozenset("skip forbid ban prevent without refuse".split())
# "don't forget to rotate the keys" says to rotate them: a negated omission is no negation.
NEGATIVE_VERBS = NEGATIVE_VERBS | frozenset("forget forgets forgot forgetting neglect neglects omit omits".split())
# Words saying a thing has stopped being so.
NEGATIVE_STATES = frozenset("""removed deprecated dropped deleted retired abandoned discontinued forbidden prohibited
    separate separately""".split())
ANTONYMS = [
    ("enable", "disable"), ("before", "after"), ("allow", "deny"),
    ("sync", "async"), ("synchronous", "asynchronous"),
    ("increase", "decrease"), ("add", "remove"), ("include", "exclude"), ("public", "private"),
    ("manual", "automatic"), ("true", "false"),
    ("required", "optional"), ("accept", "reject"), ("start", "stop"), ("open", "closed"),
    ("min", "max"), ("minimum", "maximum"), ("upper", "lower"), ("first", "last"), ("more", "fewer"),
    ("higher", "lower"), ("faster", "slower"), ("inside", "outside"), ("local", "remote"),
    ("rebase", "merge"), ("push", "pull"), ("blocking", "nonblocking"), ("strict", "lenient"),
    ("use", "avoid"), ("keep", "drop"), ("same", "own"), ("shared", "own"), ("pin", "float"), ("parallel", "serial"), ("parallel", "sequential"),

]
ANTONYM_OF = {w: v for a, b in ANTONYMS for w, v in ((a, b), (b, a))}
TIME_WORDS = frozenset("now currently today anymore still".split())
# Words that name where or to what a statement applies; a different one means a different scope.
SCOPES = frozenset(
    """test tests testing unit integration e2e production prod staging dev development local locally
    ci release feature hotfix main master debug mobile web desktop ios android public internal partner
    admin admins user users frontend backend readiness liveness access refresh vpn internet intranet upload
    download uploads downloads inbound outbound ingress egress laptop sandbox""".split()
)
# Words that only carry polarity or modality: set aside before comparing what is said.
MODALS = frozenset("always must should shall need needs have has to do does only please ever allowed permitted".split())
NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                "eight": "8", "nine": "9", "ten": "10", "twice": "2", "once": "1", "single": "1"}
# A substituted word is a competing choice only where a choice is made: "use X", "with X", "in X".
COPULAS = frozenset("is are was were be".split())
CHOICE_MARKERS = frozenset("use using uses with via in on by through prefer prefers onto into as".split())
# Units: "60 seconds" and "10 minutes" are one quantity, not two subjects.
UNITS = frozenset("""second seconds sec secs minute minutes min mins hour hours day days week weeks month months year
    years ms millisecond milliseconds kb mb gb tb percent times retries attempts""".split())
PRONOUNS = frozenset("""we you they i our your their it its he she someone anyone everyone all every each any
    some""".split())
_CLAUSE_BREAK = re.compile(
    r";|—| because | since | which | so that | so |,? like |,? such as |,? for example |,? e\.g\. |[.!?:]\s+|\n",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Reading:
    seq: tuple[str, ...]  # content words (stemmed) in order
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

    @property
    def content(self) -> frozenset[str]:
        return frozenset(self.seq)


@lru_cache(maxsize=32768)
def _stem(w: str) -> str:
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


@lru_cache(maxsize=32768)
def _scope_stem(w: str) -> str:
    st = _stem(w)
    return st[:-1] if len(st) > 3 and st[-1] == st[-2] else st  # "debugging" -> "debug"


_SCOPE_STEMS = frozenset(_scope_stem(w) for w in SCOPES)  # "when debugging" names the debug scope too


@lru_cache(maxsize=32768)
def _token(w: str) -> str:
    """A content word as compared: its stem, or for an antonym its pair ('enable' and 'disable'
    are the same subject; which of the two it is, is the antonym flip)."""
    key = _antonym_key(w)
    return "|".join(sorted((key, ANTONYM_OF[key]))) if key else _stem(w)


@lru_cache(maxsize=32768)
def _antonym_key(w: str) -> str | None:
    """The antonym-list spelling of a word: 'rebasing' -> 'rebase', 'automatically' -> 'automatic'."""
    if w in ANTONYM_OF:
        return w
    for suffix in ("ally", "ing", "ed", "es", "ly", "s", "d"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            for cand in (base, base + "e", base + "al", base[:-1] if len(base) > 3 and base[-1] == base[-2] else base):
                if cand in ANTONYM_OF:
                    return cand
    return None


def clauses(text: str) -> list[str]:
    return list(_clauses(text))


@lru_cache(maxsize=2048)
def _clauses(text: str) -> tuple[str, ...]:
    # A memory stands in several pairs (and its statements are asked for several times per pair):
    # split once, in a bounded cache keyed by the text.
    return tuple(c for c in _CLAUSE_BREAK.split(" " + text + " ") if c.strip())


def claim_clauses(text: str) -> list[str]:
    """The clauses that can make a claim: a title that is one token ("package-manager",
    "feedback_testing") names the memory, it says nothing, so the body's first sentence leads."""
    found = _clauses(text)
    said = [c for c in found if len(c.split()) > 1]
    return said or list(found)


# The regexes `read` applies to every clause, compiled once (they were most of a stub plan's CPU).
_NON = re.compile(r"\bnon-(\w)", re.IGNORECASE)
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}(-\d{2})?\b")
_ID_PREFIX = re.compile(r"^\s*\d+[-_](?=[A-Za-z])")
_ORDINAL_LABEL = re.compile(r"\b(?:part|pt|volume|vol|step|phase|round|iteration)\s*\d+\b|\b[rR]\d{1,2}\b", re.IGNORECASE)
_FROM_TO = re.compile(r"\bfrom\s+[\d.]+\s*(\w+\s+)?to\s+(?=[\d.])", re.IGNORECASE)
_TIMED_OUT = re.compile(r"\btim(?:es|ed)? out\b", re.IGNORECASE)
_COUNTED_SPAN = re.compile(
    r"\b(an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve)\s+(?=(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b)",
    re.IGNORECASE,
)
_RAW_SPLIT = re.compile(r"[\W_]+")


def _span_number(m: re.Match) -> str:
    word = m.group(1).lower()
    return {"a": "1", "an": "1", "twelve": "12"}.get(word, NUMBER_WORDS.get(word, m.group(1))) + " "


@lru_cache(maxsize=8192)
def read(clause: str) -> Reading:
    """What a clause says, as the judge compares it. A memory's clauses are read once per pair it
    is in (up to `per_memory` pairs), so readings are kept in a bounded cache; a Reading is frozen."""
    # "non-idempotent" is a different subject, not a negation; dates say when, not what.
    # "non-root" says "not root": the word stays, the negation is counted once.
    clause, prefixed = _NON.subn(r"\1", clause)
    clause = _ISO_DATE.sub(" ", clause)
    # "117-feedback_plans" (a numbered file's name as its title): the number is an id, not a quantity.
    clause = _ID_PREFIX.sub(" ", clause)
    # "part 2", "round 3", "R4": an ordinal label of one piece of a series, not a quantity it claims.
    clause = _ORDINAL_LABEL.sub(" ", clause)
    # "raised from 10 MB to 50 MB" states 50 MB now: the old value is history, not a claim.
    clause = _FROM_TO.sub(" to ", clause)
    clause = _TIMED_OUT.sub("timeout", clause)
    clause = _COUNTED_SPAN.sub(_span_number, clause)
    days = frozenset(d.lower() for d in _WEEKDAY_RE.findall(clause))
    past = bool(_PAST.search(clause))
    exceptions = frozenset(_stem(w) for m in _EXCEPT.finditer(clause) for w in normalize(m.group(1)).split()
                           if w not in STOPWORDS and len(w) > 1)
    # "the staging bucket, not the production bucket": a contrast names the choice it turns down;
    # the verb keeps its polarity.
    clause = _CONTRAST.sub(" ", clause)
    measures = _measures(clause)
    every, clause = frequencies(clause)
    spans = durations(clause)
    plain = _DURATION.sub(" ", clause)
    words = normalize(clause.replace("n't", " not")).split()
    raw = tuple(t for t in _RAW_SPLIT.split(unicodedata.normalize("NFKC", clause.replace("n't", " not"))) if t)
    # "never, not even X" is one negation; "never deploy without X" and "do not skip X" are none.
    negated = any(w in NEGATIONS for w in words)
    negative_verb = any(w in NEGATIVE_VERBS or w in NEGATIVE_STATES for w in words)
    numbers = tuple(sorted(NUMBER_WORDS.get(w, w) for w in normalize(plain).split() if w.isdigit() or w in NUMBER_WORDS))
    seq: list[str] = []
    for w in words:
        if (w in STOPWORDS or w in PRONOUNS or w in UNITS or w in NEGATIONS or w in NEGATIVE_VERBS or w in NEGATIVE_STATES or w in MODALS or w in TIME_WORDS
                or w.isdigit() or w in NUMBER_WORDS or len(w) < 2):
            continue
        st = _token(w)
        if not seq or seq[-1] != st:
            seq.append(st)
    return Reading(
        seq=tuple(seq),
        negative=(negated != negative_verb) != (prefixed % 2 == 1),
        antonyms=frozenset(k for w in words if (k := _antonym_key(w))),
        numbers=numbers,
        scopes=frozenset(_scope_stem(w) for w in words if w in SCOPES or _scope_stem(w) in _SCOPE_STEMS),
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


# Words before a clause's first phrase that only carry polarity, modality or hedging.
_LEAD = NEGATIONS | MODALS | TIME_WORDS | PRONOUNS | frozenset("the a an maybe perhaps also just".split())
# Determiners, and the pronouns that stand for an object named before ("never cache them").
_DETERMINERS = frozenset("the a an our your their its all every each any some them it these those".split())
# A statement about the past ("we used to", "we used Jenkins", "the old API") is history: it cannot
# contradict what is true now. "Redis is (widely) used" is the present passive, not the past, so
# "used" and "tried" count only after a person who did it.
_PAST = re.compile(
    r"\b(?:used to|(?:we|i|they|you|the team)\s+(?:\w+ly\s+|once\s+|also\s+)?(?:used|tried)"
    r"|previously|formerly|originally|in the past|back then|until (?:19|20)\d\d|the old|the legacy)\b",
    re.IGNORECASE,
)
_EXCEPT = re.compile(r"\b(?:except(?:\s+for|\s+when|\s+in|\s+on)?|unless|other than|apart from)\s+([^,.;()]+)", re.IGNORECASE)
_CONTRAST = re.compile(r",\s*(?:and\s+|but\s+)?not\s+(?!only\b|just\b|even\b)[^,.;()]+", re.IGNORECASE)
_MEASURE = re.compile(r"\bper\s+(?:the\s+|a\s+|an\s+)?([A-Za-z]\w+)|\b\d+(?:\.\d+)?\s+([A-Za-z]\w+)")


def _measures(clause: str) -> frozenset[str]:
    """What the numbers of a clause are of: the thing a number counts ("4 replicas") and what a rate
    is per ("per user"). Units of time and size say how much, not of what."""
    out = set()
    for per, counted in _MEASURE.findall(clause):
        w = (per or counted).lower()
        if w in UNITS or w in STOPWORDS or w.rstrip("s") in UNITS or w in _SECONDS or w.rstrip("s") in _SECONDS:
            continue
        out.add(("per " if per else "") + _stem(w))
    return frozenset(out)


_WEEKDAY_RE = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b", re.IGNORECASE)


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


def _different_objects(a: Reading, b: Reading) -> bool:
    """Both clauses lead with the same verb but act on different things: "never store API tokens in
    logs" / "store application logs in S3". A flip of polarity or number is a clash only about the
    same object; the object is what follows the shared verb, and it differs when each clause's
    object has a word the other clause never mentions. A longer shared lead is a shared subject
    ("presigned S3 URLs expire" / "presigned S3 URLs stay valid"): what follows is its predicate."""
    if len(a.head) < 2 or len(b.head) < 2 or a.head[0] != b.head[0] or a.head[1] == b.head[1]:
        return False
    return bool(set(a.head[1:]) - b.content) and bool(set(b.head[1:]) - a.content)


def _slots(a: tuple[str, ...], b: tuple[str, ...]) -> list[tuple[tuple[str, ...], tuple[str, ...]]] | None:
    """Align two word sequences on their shared words (which must come in the same order); the
    unshared runs between the same anchors are the slots. None if the shared words are reordered."""
    shared = set(a) & set(b)
    anchors_a = [w for w in a if w in shared]
    anchors_b = [w for w in b if w in shared]
    if anchors_a != anchors_b:
        return None
    out = []
    ia = ib = 0
    for anchor in anchors_a + [None]:
        ja = a.index(anchor, ia) if anchor is not None else len(a)
        jb = b.index(anchor, ib) if anchor is not None else len(b)
        out.append((a[ia:ja], b[ib:jb]))
        ia, ib = ja + 1, jb + 1
    return out


def _chosen(r: Reading, segment: tuple[str, ...]) -> bool:
    """Whether the segment stands where a choice is made (right after 'use', 'with', 'in', ...) and
    is one choice, not a choice plus a purpose ('Redis for caching')."""
    stems = [_token(w) for w in r.words]
    for i, st in enumerate(stems):
        if st == segment[0]:
            j = i - 1
            while j >= 0 and r.words[j] in ("the", "a", "an", "our", "all", "every", "plain"):
                j -= 1
            end = max((k for k, x in enumerate(stems) if x == segment[-1] and k >= i), default=i)
            spans_preposition = any(w in CHOICE_MARKERS | {"for", "to", "at", "so"} for w in r.words[i + 1 : end])
            if spans_preposition or j < 0:
                return False
            if r.words[j] in CHOICE_MARKERS:
                return True
            # "The default branch is Main": after a copula, a name or a value is a choice; an
            # adjective ("is fast") is not, and a Title Case line says nothing about names.
            return r.words[j] in COPULAS and _is_value(r, i)
    return False


def _describes(r: Reading, segment: tuple[str, ...]) -> bool:
    """The substituted words describe a state or an activity ("coverage enabled", "BuildKit
    caching") rather than name a value: a participle or a gerund, written in lowercase (a name
    such as "Memcached" is a value)."""
    if not r.raw:
        return False
    stems = set(segment)
    return any(
        _token(w) in stems and raw.islower() and len(w) > 5 and w.endswith(("ing", "ed"))
        for w, raw in zip(r.words, r.raw)
    )


def _contiguous(r: Reading, segment: tuple[str, ...]) -> bool:
    """The segment's words stand together in the text (determiners aside): one choice, not two."""
    tokens = [(i, _token(w)) for i, w in enumerate(r.words) if w not in ("the", "a", "an")]
    positions = [i for i, (_, t) in enumerate(tokens) if t in segment]
    return bool(positions) and positions == list(range(positions[0], positions[0] + len(positions)))


def _is_value(r: Reading, i: int) -> bool:
    if not r.raw or i == 0:
        return False
    capitals = sum(1 for t in r.raw if t[:1].isupper())
    token = r.raw[i]
    return (token[:1].isupper() and capitals * 2 < len(r.raw)) or any(ch.isdigit() for ch in token)


def _order_swapped(a: Reading, b: Reading) -> bool:
    """'lint before tests' / 'tests before lint': the same sequence word with its sides exchanged."""
    for word in ("before", "after", "then"):
        if word in a.words and word in b.words:
            ia, ib = a.words.index(word), b.words.index(word)
            la, ra = set(a.words[:ia]), set(a.words[ia + 1 :])
            lb, rb = set(b.words[:ib]), set(b.words[ib + 1 :])
            if (ra - STOPWORDS) & (lb - STOPWORDS) and (la - STOPWORDS) & (rb - STOPWORDS) - {w for w in la & lb}:
                return True
    return False


def _judge_clauses(a: Reading, b: Reading) -> tuple[bool, str, str]:
    if a.scopes - b.scopes and b.scopes - a.scopes:
        return False, "none", f"different scopes ({', '.join(sorted(a.scopes ^ b.scopes))})"
    if a.past != b.past:
        return False, "none", "one speaks of the past, the other of now"
    if a.exceptions & b.content or b.exceptions & a.content:
        return False, "none", "one is the exception the other names"
    shared = a.content & b.content
    smaller = min(len(a.content), len(b.content))
    if len(shared) < 2 or smaller == 0:
        return False, "none", "not enough said about the same subject"
    only_a, only_b = a.content - b.content, b.content - a.content
    containment = len(shared) / smaller
    small_side = only_b if len(b.content) <= len(a.content) else only_a
    slots = _slots(a.seq, b.seq)
    differing = [(x, y) for x, y in slots or [] if x != y]
    substitution = (
        slots is not None and len(differing) == 1 and bool(differing[0][0]) and bool(differing[0][1])
        and len(differing[0][0]) <= 3 and len(differing[0][1]) <= 4
        and a.negative == b.negative and a.numbers == b.numbers and len(shared) >= 2
        and _chosen(a, differing[0][0]) and _chosen(b, differing[0][1])
    )
    moved = slots is None or all(not x or not y for x, y in differing)
    if not substitution and moved and 0 < len(only_a) <= 3 and 0 < len(only_b) <= 3:
        # The same words in another order with one choice swapped: "use GraphQL for the mobile
        # endpoints" / "the mobile endpoints use REST".
        xa, xb = tuple(w for w in a.seq if w in only_a), tuple(w for w in b.seq if w in only_b)
        substitution = (
            a.negative == b.negative and a.numbers == b.numbers and len(shared) >= 3
            and _contiguous(a, xa) and _contiguous(b, xb) and _chosen(a, xa) and _chosen(b, xb)
        )
        differing = [(xa, xb)]
    if substitution and (_describes(a, differing[0][0]) or _describes(b, differing[0][1])):
        # "with pytest" / "with coverage enabled": a state or an activity is a property the same
        # run can also have, not a competing value of the same attribute.
        return False, "none", "one names a value, the other describes a property"
    if substitution:
        x, y = differing[0]
        return True, "incompatible_approach", f"the same thing with '{' '.join(x)}' in one and '{' '.join(y)}' in the other"
    if containment < 0.75 or (only_a and only_b and len(small_side) > 1):
        return False, "none", "they talk about different things"
    if _different_objects(a, b):
        return False, "none", "the same verb about different objects"
    flips = []
    if a.negative != b.negative:
        flips.append("negation")
    swapped = {w for w in a.antonyms if ANTONYM_OF[w] in b.antonyms and w not in b.antonyms}
    # One antonym swapped is a flip; two ("add ... before" / "remove ... after") cancel out.
    pairs_swapped = {frozenset((w, ANTONYM_OF[w])) for w in swapped}
    flips.extend("antonym" for _ in pairs_swapped)
    quantities_differ = (
        (a.durations and b.durations and a.durations != b.durations)
        or (a.every and b.every and a.every != b.every)
        or (a.numbers and b.numbers and a.numbers != b.numbers)
        or (a.days and b.days and a.days != b.days)
    )
    if quantities_differ and a.measures and b.measures and not a.measures & b.measures:
        return False, "none", "numbers of different things"
    if quantities_differ and {m for m in a.measures ^ b.measures if m.startswith("per ")}:
        return False, "none", "rates per different things"
    if quantities_differ:
        subject_differs = slots is not None and bool(slots[0][0]) and bool(slots[0][1])
        if only_a and only_b and (subject_differs or len(only_a) + len(only_b) > 4):
            # A different number about a different thing ("payments client 3" / "search client 5").
            return False, "none", "different numbers about different things"
        flips.append("number")
    if not flips and _order_swapped(a, b):
        return True, "opposing_advice", "the same steps in the opposite order"
    if len(flips) != 1:
        if not flips:
            return False, "none", "same subject, compatible statements"
        return False, "none", f"{' and '.join(flips)} flips cancel out"
    if flips[0] == "number":
        if a.days != b.days and a.numbers == b.numbers:
            return True, "factual_disagreement", f"the same statement with different days ({', '.join(sorted(a.days))} vs {', '.join(sorted(b.days))})"
        return True, "factual_disagreement", f"the same statement with different numbers ({', '.join(a.numbers)} vs {', '.join(b.numbers)})"
    if flips[0] == "antonym":
        pair = sorted(swapped)[0]
        return True, "opposing_advice", f"'{pair}' in one, '{ANTONYM_OF[pair]}' in the other, about the same thing"
    return True, "opposing_advice", "one says to do what the other says not to do"


_REJECTS = [
    re.compile(r"\b(?:instead of|rather than|no longer|moved away from|switched away from|migrated off|replaced|"
               r"(?:moved|migrated|switched|changed) (?:\w+ ){0,4}from|never used|stopped using|no longer uses?)"
               r"\s+(?:the |a |an |our )?([\w.+#-]+)", re.I),
    # "managed in our own table, not LaunchDarkly": the contrast turns a choice down.
    re.compile(r",\s*(?:and\s+|but\s+)?not\s+(?!only\b|just\b|even\b)(?:the |a |an |our )?([\w.+#-]+)", re.I),
    re.compile(r"\b([\w.+#-]+)\s+(?:was|is|were|are|has been|have been)\s+(?:rejected|removed|dropped|retired|replaced|deprecated|abandoned)\b", re.I),
]


def _rejected_choice(rejecting: str, other: str) -> str | None:
    """A word the first text explicitly rejects ('SQLite instead of Postgres', 'GraphQL was
    rejected') that the other text's main clause puts forward."""
    main = read(claim_clauses(other)[0])
    if main.negative:
        return None
    chosen = {_stem(w) for w in main.words}
    return next((word for word in _rejected_words(rejecting) if _stem(word) in chosen), None)


@lru_cache(maxsize=2048)
def _rejected_words(text: str) -> tuple[str, ...]:
    """The words a text explicitly rejects, in the order the patterns find them (once per text, not
    once per pair it is in)."""
    out = []
    for pattern in _REJECTS:
        for m in pattern.finditer(text):
            word = normalize(m.group(1))
            # "instead of retrying" rejects an action in one case, not a thing the other chose.
            if word.endswith("ing"):
                continue
            if word and word not in STOPWORDS and word not in MODALS and len(word) > 1:
                out.append(word)
    return tuple(out)


_DURATION = re.compile(r"\b(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?)\b", re.I)
_SECONDS = {"ms": 0.001, "millisecond": 0.001, "s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600,
            "hr": 3600, "hour": 3600, "day": 86400, "week": 604800, "month": 2592000, "year": 31536000}


_PERIOD_WORDS = {"hourly": 1.0, "daily": 24.0, "nightly": 24.0, "weekly": 168.0, "monthly": 720.0, "yearly": 8760.0,
                 "annually": 8760.0, "quarterly": 2190.0}
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_EVERY = re.compile(
    r"\b(?:every|each)\s+(\d+)\s*(minutes?|hours?|days?|weeks?|months?)\b|\b(?:every|each)\s+(minute|hour|day|night|week|month|"
    + _WEEKDAY + r")\b|\b(once|twice)\s+(?:a|an|per)\s+(hour|day|week|month)\b|\b(hourly|daily|nightly|weekly|monthly|yearly|"
    r"annually|quarterly)\b|\bon\s+" + _WEEKDAY + r"s\b",
    re.IGNORECASE,
)
_HOURS = {"minute": 1 / 60, "hour": 1.0, "day": 24.0, "night": 24.0, "week": 168.0, "month": 720.0}


def frequencies(text: str) -> tuple[set[float], str]:
    """How often something happens, as a period in hours, and the text without those phrases."""
    found: set[float] = set()

    def take(m: re.Match) -> str:
        n, unit, single, times, per, word = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)
        if n:
            found.add(float(n) * _HOURS[unit.lower().rstrip("s")])
        elif single:
            found.add(_HOURS.get(single.lower(), 168.0))  # a weekday: weekly
        elif times:
            found.add(_HOURS[per.lower()] / (2 if times.lower() == "twice" else 1))
        elif word:
            found.add(_PERIOD_WORDS[word.lower()])
        else:
            found.add(168.0)  # "on Sundays"
        return " "

    return found, _EVERY.sub(take, text)


def durations(text: str) -> set[float]:
    out = set()
    for value, unit in _DURATION.findall(text):
        u = unit.lower().rstrip("s") if unit.lower() not in ("s", "ms") else unit.lower()
        out.add(float(value) * _SECONDS.get(u, 1))
    return out


_SEQUENCE = re.compile(
    r"(?P<first>.+?)\s*,?\s+(?:first\s*,?\s*(?:and\s+)?then|first\s+and|,?\s*then)\s+(?P<second>.+)"
    r"|(?P<a1>.+?)\s+before\s+(?P<a2>.+)"
    r"|(?P<b2>.+?)\s+(?:only\s+)?(?:after|once)\s+(?P<b1>.+)",
    re.IGNORECASE,
)


_SENTENCE_BREAK = re.compile(r"[.;!?]\s+|\n")
_DATED_WORDS = re.compile(r"\b(as of|since|now|no longer|raised|lowered|was removed|replaced)\b", re.I)


def steps(text: str) -> list[tuple[frozenset[str], frozenset[str]]]:
    """(what comes first, what comes second) for each ordering the text states, as word sets."""
    return list(_steps(text))


@lru_cache(maxsize=2048)
def _steps(text: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    out = []
    for sentence in _SENTENCE_BREAK.split(text):
        m = _SEQUENCE.match(sentence.strip())
        if not m:
            continue
        first = m.group("first") or m.group("a1") or m.group("b1")
        second = m.group("second") or m.group("a2") or m.group("b2")
        fw, sw = _event(first), _event(second)
        if fw and sw:
            out.append((fw, sw))
    return tuple(out)


def _event(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in normalize(text).split()
                     if w not in STOPWORDS and w not in PRONOUNS and w not in MODALS and not w.isdigit() and len(w) > 2
                     and w not in ("first", "then", "only", "once", "start"))


def _reversed_steps(text_a: str, text_b: str) -> bool:
    """Both texts order the same two steps, in opposite orders ('drain, then upgrade' / 'upgrade
    first, then drain')."""
    for fa, sa in steps(text_a):
        for fb, sb in steps(text_b):
            crossed = len(fa & sb) + len(sa & fb)
            straight = len(fa & fb) + len(sa & sb)
            if fa & sb and sa & fb and crossed > straight:
                return True
    return False


def judge_conflict(text_a: str, text_b: str) -> tuple[bool, str, str]:
    """(contradiction?, kind, one-line explanation) for two memories on the same subject."""
    return judge_conflict_quoted(text_a, text_b)[:3]


def judge_conflict_quoted(text_a: str, text_b: str) -> tuple[bool, str, str, str, str]:
    """`judge_conflict` plus the two clauses that clash (as written, markup removed; "" when none).

    Only statements are compared: tables, link lists, wikilinks, code, placeholders and headings
    are set aside first (`conflict_statements`). The main clauses are compared first; a later
    clause ("...; do not poll it") may contradict too.
    """
    text_a, text_b = statements(text_a), statements(text_b)
    if not text_a.strip() or not text_b.strip():
        return False, "none", "no statement to compare (markup only)", "", ""
    if text_a.strip().endswith("?") or text_b.strip().endswith("?"):
        return False, "none", "a question asserts nothing", "", ""
    ca, cb = claim_clauses(text_a), claim_clauses(text_b)
    main_a, main_b = ca[0].strip(), cb[0].strip()
    if _reversed_steps(text_a, text_b) and read(ca[0]).negative == read(cb[0]).negative:
        qa, qb = _step_sentences(text_a, text_b)
        # The sentences that order the steps must agree in polarity and action: "do not edit them
        # after X" / "edit before X" is two flips, which cancel.
        sa, sb = read(qa), read(qb)
        if sa.negative == sb.negative and not _opposite_actions(sa, sb):
            return True, "opposing_advice", "the same steps in the opposite order", qa, qb
    first = _judge_clauses(read(ca[0]), read(cb[0]))
    if first[0]:
        return (*_dated(first, text_a, text_b), main_a, main_b)
    ra, rb = read(ca[0]), read(cb[0])
    if ra.content & rb.content and not (ra.scopes - rb.scopes and rb.scopes - ra.scopes):
        for rejecting, other, flip in ((text_a, text_b, False), (text_b, text_a, True)):
            word = _rejected_choice(rejecting, other)
            if word and not (ra.content & rb.content) - {_stem(word), _token(word)}:
                continue  # only the rejected thing is shared: the two speak of different uses of it
            if word and first[2] != "a question asserts nothing":
                verdict = _dated((True, "incompatible_approach", f"one rejects '{word}', which the other puts forward"), text_a, text_b)
                qr, qo = _clause_with(rejecting, word), claim_clauses(other)[0].strip()
                return (*verdict, *((qo, qr) if flip else (qr, qo)))
    # A later clause is weighed against the other text's head (its title or first sentence) only, and
    # only near the top: a long document has dozens of clauses, and every pair of them is a chance
    # for a false alarm.
    for i, x in enumerate(ca[:LATER_CLAUSES]):
        for j, y in enumerate(cb[:LATER_CLAUSES]):
            if (i, j) == (0, 0) or min(i, j) > 1:
                continue
            verdict = _judge_clauses(read(_resolve_pronoun(x, ca)), read(_resolve_pronoun(y, cb)))
            if verdict[0] and verdict[1] == "opposing_advice":
                return (*_dated(verdict, text_a, text_b), x.strip(), y.strip())
    return (*first, "", "")


def _opposite_actions(a: Reading, b: Reading) -> bool:
    """'add the label before merging' / 'remove the label after merging': opposite actions in
    opposite order are two flips that cancel, not the same steps reordered."""
    order = {"before", "after", "first", "last"}
    return any(ANTONYM_OF[w] in b.antonyms and w not in b.antonyms for w in a.antonyms - order)


def clash_clauses(text_a: str, text_b: str) -> tuple[str, str]:
    """The two clauses that clash: the stub's own when it sees the contradiction, else (a model's
    verdict) the pair of statements that say the most about the same thing."""
    verdict = judge_conflict_quoted(text_a, text_b)
    if verdict[0] and verdict[3] and verdict[4]:
        return _sentence_for(verdict[3], text_a), _sentence_for(verdict[4], text_b)
    ca = [c.strip() for c in clauses(statements(text_a))] or [text_a.strip()]
    cb = [c.strip() for c in clauses(statements(text_b))] or [text_b.strip()]
    best = max(
        ((len(read(x).content & read(y).content), -i - j, x, y) for i, x in enumerate(ca[:40]) for j, y in enumerate(cb[:40])),
        default=(0, 0, ca[0], cb[0]),
    )
    return best[2], best[3]


def _sentence_for(quote: str, text: str) -> str:
    """A quote a person can read: a title that is a slug ("use-pnpm") stands for the memory's first
    sentence, which says the same in words."""
    if " " in quote.strip():
        return quote
    return next((c.strip() for c in clauses(statements(text)) if " " in c.strip()), quote)


def _clause_with(text: str, word: str) -> str:
    for c in clauses(text):
        if word in normalize(c).split():
            return c.strip()
    return clauses(text)[0].strip()


def _step_sentences(text_a: str, text_b: str) -> tuple[str, str]:
    """The two sentences that order the same steps oppositely."""
    for sa in _SENTENCE_BREAK.split(text_a):
        for sb in _SENTENCE_BREAK.split(text_b):
            if steps(sa) and steps(sb) and _reversed_steps(sa, sb):
                return sa.strip(), sb.strip()
    return clauses(text_a)[0].strip(), clauses(text_b)[0].strip()


LATER_CLAUSES = 4
_PRONOUN_OBJECT = re.compile(r"\b(them|it|they|these|those|there)\b", re.IGNORECASE)


def _resolve_pronoun(clause: str, all_clauses: list[str]) -> str:
    """'never cache them' after 'fetch exchange rates on every conversion': 'them' is what the first
    clause spoke of, so a later clause with a pronoun borrows the first clause's words."""
    if clause == all_clauses[0] or not _PRONOUN_OBJECT.search(clause):
        return clause
    head = all_clauses[0].split()
    return f"{clause} {' '.join(head[1:])}"


def _dated(verdict: tuple[bool, str, str], text_a: str, text_b: str) -> tuple[bool, str, str]:
    if _DATED_WORDS.search(text_a + " " + text_b):
        return True, "superseded", verdict[2] + " (one supersedes the other)"
    return verdict
