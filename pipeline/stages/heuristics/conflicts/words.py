"""The vocabulary the judge reads with: polarity, antonyms, scopes, modals, units, and the stemming
that lets "rebasing" and "rebase" count as one word.

Every other module of the package compares words through these lists and `_token`, so they sit at
the bottom and import nothing of the package: a word that changes class here changes it everywhere.
"""

from __future__ import annotations

from functools import lru_cache


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
    if not w.isalpha():
        # Every spelling on the list is letters, and each one tried below keeps a character of `w`
        # that is none ("v2", "e2e", "node js"): a word with a number or a name's mark is no antonym.
        return None
    for suffix in ("ally", "ing", "ed", "es", "ly", "s", "d"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: -len(suffix)]
            for cand in (base, base + "e", base + "al", base[:-1] if len(base) > 3 and base[-1] == base[-2] else base):
                if cand in ANTONYM_OF:
                    return cand
    return None
