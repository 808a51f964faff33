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

from ..rules.text import STOPWORDS, normalize

NEGATIONS = frozenset("not never no dont don t cannot cant won wont shouldn shouldnt mustn mustnt nothing none nobody neither nor".split())
# Verbs that carry a negation of the action that follows them.
NEGATIVE_VERBS = frozenset("skip forbid ban prevent without refuse".split())
# Words saying a thing has stopped being so.
NEGATIVE_STATES = frozenset("removed deprecated dropped deleted retired abandoned discontinued forbidden prohibited".split())
ANTONYMS = [
    ("enable", "disable"), ("before", "after"), ("allow", "deny"),
    ("sync", "async"), ("synchronous", "asynchronous"),
    ("increase", "decrease"), ("add", "remove"), ("include", "exclude"), ("public", "private"),
    ("manual", "automatic"), ("true", "false"),
    ("required", "optional"), ("accept", "reject"), ("start", "stop"), ("open", "closed"),
    ("min", "max"), ("minimum", "maximum"), ("upper", "lower"), ("first", "last"), ("more", "fewer"),
    ("higher", "lower"), ("faster", "slower"), ("inside", "outside"), ("local", "remote"),
    ("rebase", "merge"), ("push", "pull"), ("blocking", "nonblocking"), ("strict", "lenient"),
    ("use", "avoid"), ("keep", "drop"), ("pin", "float"), ("parallel", "serial"), ("parallel", "sequential"),

]
ANTONYM_OF = {w: v for a, b in ANTONYMS for w, v in ((a, b), (b, a))}
TIME_WORDS = frozenset("now currently today anymore still".split())
# Words that name where or to what a statement applies; a different one means a different scope.
SCOPES = frozenset(
    """test tests testing unit integration e2e production prod staging dev development local locally
    ci release feature hotfix main master debug mobile web desktop ios android public internal partner
    admin admins user users frontend backend readiness liveness access refresh""".split()
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
PRONOUNS = frozenset("""we you they i our us your their it its he she someone anyone everyone all every each any
    some""".split())
_CLAUSE_BREAK = re.compile(r";|—| because | since | which | so that |[.!?:]\s+|\n", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    seq: tuple[str, ...]  # content words (stemmed) in order
    negative: bool
    antonyms: frozenset[str]
    numbers: tuple[str, ...]
    scopes: frozenset[str]
    words: tuple[str, ...]
    raw: tuple[str, ...] = ()  # the same tokens as `words`, case kept

    @property
    def content(self) -> frozenset[str]:
        return frozenset(self.seq)


def _stem(w: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


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
    return [c for c in _CLAUSE_BREAK.split(" " + text + " ") if c.strip()]


def read(clause: str) -> Reading:
    # "non-idempotent" is a different subject, not a negation; dates say when, not what.
    clause = re.sub(r"\bnon-(\w)", r"non\1", clause, flags=re.IGNORECASE)
    clause = re.sub(r"\b\d{4}-\d{2}(-\d{2})?\b", " ", clause)
    clause = re.sub(r"\b(?:part|pt|volume|vol|step|phase)\s*\d+\b", " ", clause, flags=re.IGNORECASE)
    words = normalize(clause.replace("n't", " not")).split()
    raw = tuple(t for t in re.split(r"[\W_]+", unicodedata.normalize("NFKC", clause.replace("n't", " not"))) if t)
    negations = sum(1 for w in words if w in NEGATIONS or w in NEGATIVE_VERBS or w in NEGATIVE_STATES)
    numbers = tuple(sorted(NUMBER_WORDS.get(w, w) for w in words if w.isdigit() or w in NUMBER_WORDS))
    seq: list[str] = []
    for w in words:
        if (w in STOPWORDS or w in PRONOUNS or w in UNITS or w in NEGATIONS or w in NEGATIVE_VERBS or w in NEGATIVE_STATES or w in MODALS or w in TIME_WORDS
                or _antonym_key(w) or w.isdigit() or w in NUMBER_WORDS or len(w) < 2):
            continue
        st = _stem(w)
        if not seq or seq[-1] != st:
            seq.append(st)
    return Reading(
        seq=tuple(seq),
        negative=negations % 2 == 1,
        antonyms=frozenset(k for w in words if (k := _antonym_key(w))),
        numbers=numbers,
        scopes=frozenset(_stem(w) for w in words if w in SCOPES),
        words=tuple(words),
        raw=raw if len(raw) == len(words) else (),
    )


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
    stems = [_stem(w) for w in r.words]
    for i, st in enumerate(stems):
        if st == segment[0]:
            j = i - 1
            while j >= 0 and r.words[j] in ("the", "a", "an", "our", "all", "every", "plain"):
                j -= 1
            end = max((k for k, x in enumerate(stems) if x == segment[-1] and k >= i), default=i)
            spans_preposition = any(w in CHOICE_MARKERS | {"for", "to", "at"} for w in r.words[i + 1 : end])
            if spans_preposition or j < 0:
                return False
            if r.words[j] in CHOICE_MARKERS:
                return True
            # "The default branch is Main": after a copula, a name or a value is a choice; an
            # adjective ("is fast") is not, and a Title Case line says nothing about names.
            return r.words[j] in COPULAS and _is_value(r, i)
    return False


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
    if not substitution and moved and 0 < len(only_a) <= 2 and 0 < len(only_b) <= 2:
        # The same words in another order with one choice swapped: "use GraphQL for the mobile
        # endpoints" / "the mobile endpoints use REST".
        xa, xb = tuple(w for w in a.seq if w in only_a), tuple(w for w in b.seq if w in only_b)
        substitution = (
            a.negative == b.negative and a.numbers == b.numbers and len(shared) >= 3
            and _chosen(a, xa) and _chosen(b, xb)
        )
        differing = [(xa, xb)]
    if substitution:
        x, y = differing[0]
        return True, "incompatible_approach", f"the same thing with '{' '.join(x)}' in one and '{' '.join(y)}' in the other"
    if containment < 0.75 or (only_a and only_b and len(small_side) > 1):
        return False, "none", "they talk about different things"
    flips = []
    if a.negative != b.negative:
        flips.append("negation")
    swapped = {w for w in a.antonyms if ANTONYM_OF[w] in b.antonyms and w not in b.antonyms}
    if swapped:
        flips.append("antonym")
    if a.numbers and b.numbers and a.numbers != b.numbers:
        if only_a and only_b and (slots is not None or len(only_a) + len(only_b) > 3):
            # A different number about a different thing ("payments client 3" / "search client 5").
            return False, "none", "different numbers about different things"
        da, db = durations(" ".join(a.words)), durations(" ".join(b.words))
        if not (da and db and da == db):
            flips.append("number")
    if not flips and _order_swapped(a, b):
        return True, "opposing_advice", "the same steps in the opposite order"
    if len(flips) != 1:
        if not flips:
            return False, "none", "same subject, compatible statements"
        return False, "none", f"{' and '.join(flips)} flips cancel out"
    if flips[0] == "number":
        return True, "factual_disagreement", f"the same statement with different numbers ({', '.join(a.numbers)} vs {', '.join(b.numbers)})"
    if flips[0] == "antonym":
        pair = sorted(swapped)[0]
        return True, "opposing_advice", f"'{pair}' in one, '{ANTONYM_OF[pair]}' in the other, about the same thing"
    return True, "opposing_advice", "one says to do what the other says not to do"


_REJECTS = [
    re.compile(r"\b(?:instead of|rather than|no longer|moved away from|switched away from|migrated off|replaced)\s+(?:the |a |an |our )?([\w.+#-]+)", re.I),
    re.compile(r"\b([\w.+#-]+)\s+(?:was|is|were|are|has been|have been)\s+(?:rejected|removed|dropped|retired|replaced|deprecated|abandoned)\b", re.I),
]


def _rejected_choice(rejecting: str, other: str) -> str | None:
    """A word the first text explicitly rejects ('SQLite instead of Postgres', 'GraphQL was
    rejected') that the other text's main clause puts forward."""
    main = read(clauses(other)[0])
    if main.negative:
        return None
    chosen = {_stem(w) for w in main.words}
    for pattern in _REJECTS:
        for m in pattern.finditer(rejecting):
            word = normalize(m.group(1))
            if word and word not in STOPWORDS and word not in MODALS and len(word) > 2 and _stem(word) in chosen:
                return word
    return None


_DURATION = re.compile(r"\b(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?)\b", re.I)
_SECONDS = {"ms": 0.001, "millisecond": 0.001, "s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600,
            "hr": 3600, "hour": 3600, "day": 86400, "week": 604800, "month": 2592000, "year": 31536000}


def durations(text: str) -> set[float]:
    out = set()
    for value, unit in _DURATION.findall(text):
        u = unit.lower().rstrip("s") if unit.lower() not in ("s", "ms") else unit.lower()
        out.add(float(value) * _SECONDS.get(u, 1))
    return out


def judge_conflict(text_a: str, text_b: str) -> tuple[bool, str, str]:
    """(contradiction?, kind, one-line explanation) for two memories on the same subject.

    The main clauses are compared first; a later clause ("...; do not poll it") may contradict too.
    """
    if text_a.strip().endswith("?") or text_b.strip().endswith("?"):
        return False, "none", "a question asserts nothing"
    ca, cb = clauses(text_a), clauses(text_b)
    first = _judge_clauses(read(ca[0]), read(cb[0]))
    if first[0]:
        return _dated(first, text_a, text_b)
    ra, rb = read(ca[0]), read(cb[0])
    if len(ra.content & rb.content) >= 2 and not (ra.scopes - rb.scopes and rb.scopes - ra.scopes):
        for rejecting, other in ((text_a, text_b), (text_b, text_a)):
            word = _rejected_choice(rejecting, other)
            if word and first[2] != "a question asserts nothing":
                return _dated((True, "incompatible_approach", f"one rejects '{word}', which the other puts forward"), text_a, text_b)
    for x in ca:
        for y in cb:
            if (x, y) == (ca[0], cb[0]):
                continue
            verdict = _judge_clauses(read(x), read(y))
            if verdict[0] and verdict[1] == "opposing_advice":
                return _dated(verdict, text_a, text_b)
    return first


def _dated(verdict: tuple[bool, str, str], text_a: str, text_b: str) -> tuple[bool, str, str]:
    if re.search(r"\b(as of|since|now|no longer|raised|lowered|was removed|replaced)\b", text_a + " " + text_b, re.I):
        return True, "superseded", verdict[2] + " (one supersedes the other)"
    return verdict
