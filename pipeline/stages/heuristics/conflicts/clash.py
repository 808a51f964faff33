"""What makes two clauses clash: the same subject and object, the same scope and time, the same
measure, and exactly one flip (a negation, an antonym, a number) or one competing choice.

`_judge_clauses` is the verdict on two readings; the helpers before it decide what counts as the
same thing (`_different_objects`, `_slots`) and what counts as a choice (`_chosen`, `_describes`).
Every guard that returns "none" is one false alarm class the stub would rather miss than raise.
"""

from __future__ import annotations

from .order import _order_swapped
from .readings import Reading
from .words import ANTONYM_OF, CHOICE_MARKERS, COPULAS, _token


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



def _substitution(a: Reading, b: Reading, shared: frozenset[str], only_a: frozenset[str],
                  only_b: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The competing choices, when all that differs between the clauses is one choice each makes
    where the other makes another ("use Redis for sessions" / "use Memcached for sessions"); None
    when they differ otherwise."""
    if a.negative != b.negative or a.numbers != b.numbers:
        return None
    # The words one clause has and the other lacks are what stands in the slots `_slots` aligns (a
    # slot both fill alike is empty: its words would be shared); one slot that differs holds them
    # all, at most 3 words on one side and 4 on the other. So the alignment, most of the cost, is
    # made only for clause pairs within those counts.
    if not (0 < len(only_a) <= 3 and 0 < len(only_b) <= 4):
        return None
    slots = _slots(a.seq, b.seq)
    differing = [(x, y) for x, y in slots or [] if x != y]
    if (slots is not None and len(differing) == 1 and differing[0][0] and differing[0][1]
            and len(differing[0][0]) <= 3 and len(differing[0][1]) <= 4
            and _chosen(a, differing[0][0]) and _chosen(b, differing[0][1])):
        return differing[0]
    moved = slots is None or all(not x or not y for x, y in differing)
    if moved and len(only_b) <= 3:
        # The same words in another order with one choice swapped: "use GraphQL for the mobile
        # endpoints" / "the mobile endpoints use REST".
        xa, xb = tuple(w for w in a.seq if w in only_a), tuple(w for w in b.seq if w in only_b)
        if len(shared) >= 3 and _contiguous(a, xa) and _contiguous(b, xb) and _chosen(a, xa) and _chosen(b, xb):
            return xa, xb
    return None


def _subject_differs(a: Reading, b: Reading) -> bool:
    """The clauses lead with different words before the first they share (their subjects)."""
    slots = _slots(a.seq, b.seq)
    return slots is not None and bool(slots[0][0]) and bool(slots[0][1])


def _may_oppose(a: Reading, b: Reading) -> bool:
    """Whether `_judge_clauses` could find the clauses to be opposing advice, cheaply, for the clause
    pairs where no other verdict counts: that verdict needs a flip of polarity, an antonym in each
    clause, or steps in opposite order, which needs "then" in both or "before"/"after" (antonyms).
    A necessary condition only: keep it one for each "opposing_advice" `_judge_clauses` returns."""
    return a.negative != b.negative or bool(a.antonyms and b.antonyms) or ("then" in a.words and "then" in b.words)


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
    swap = _substitution(a, b, shared, only_a, only_b)
    if swap is not None and (_describes(a, swap[0]) or _describes(b, swap[1])):
        # "with pytest" / "with coverage enabled": a state or an activity is a property the same
        # run can also have, not a competing value of the same attribute.
        return False, "none", "one names a value, the other describes a property"
    if swap is not None:
        x, y = swap
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
        if only_a and only_b and (_subject_differs(a, b) or len(only_a) + len(only_b) > 4):
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
    if flips[0] == "negation" and a.head and b.head and only_a == {a.head[0]} and only_b == {b.head[0]}:
        # "compress the catalog images" / "never archive the catalog images": all that differs is
        # the word each clause leads with, its action (or its subject: "the orders table" / "the
        # events table"); not doing one thing says nothing against doing another.
        return False, "none", f"a different action or subject leads each ('{a.head[0]}' / '{b.head[0]}')"
    if flips[0] == "antonym":
        pair = sorted(swapped)[0]
        return True, "opposing_advice", f"'{pair}' in one, '{ANTONYM_OF[pair]}' in the other, about the same thing"
    return True, "opposing_advice", "one says to do what the other says not to do"
