"""The stub's reorder judgement: a moved phrase keeps the meaning, swapped arguments do not.

Two texts with the same words differ by how the words moved:
- one block moved (an adverbial like "on Fridays", "in CI", "after each merge", a list item) — the
  meaning stays, unless the block is the subject or object of a verb;
- two blocks exchanged around a verb ("Alice manages Bob" / "Bob manages Alice") — a role swap,
  different, unless the relation between them is symmetric ("and", "with", "equals");
- anything more tangled — different. The stub errs towards "different": a wrong "same" merges two
  memories, a wrong "different" only leaves a pair for later.
"""

from __future__ import annotations

import re

from ...rules.text import tokens

# Words that open an adverbial phrase: the phrase can move without changing who does what.
ADVERBIAL_OPENERS = frozenset(
    """as on at in every each during after before when whenever while if unless once for within
    without via through across per until since by from daily nightly weekly monthly hourly always
    usually often sometimes never also first finally then today tomorrow now later here there
    inside outside under over locally remotely""".split()
)
# Words that make a relation read the same both ways ("X is identical to Y", "X pairs with Y").
SYMMETRIC_PREDICATES = frozenset(
    """identical equal equals equivalent same similar siblings married compatible incompatible
    conflicts conflict collide collides matches match pairs pair adjacent alongside together
    interchangeable synonyms""".split()
)
# Joiners of a plain list: items around them can trade places.
LIST_JOINERS = frozenset("and or plus nor".split())
# Words whose position decides what they modify: moving them changes the meaning.
SCOPE_WORDS = frozenset("only not just even no".split())
DETERMINERS = frozenset("the a an both our their".split())
AUXILIARIES = frozenset("should must can could will would may might do does did is are shall".split())
PRONOUNS = frozenset("you we they i he she it".split())
# Order words: exchanging what stands around them changes the sequence.
SEQUENCE = frozenset("before after then first last followed precedes precede follows follow until".split())


def _moves(a: list[str], b: list[str]) -> list[tuple[int, int, int]]:
    """All (start, end, insert_at) such that moving a[start:end] to insert_at gives b.

    A move leaves in place the words before min(start, insert_at) and those after the span it
    shifts, so only a move whose span covers both the first and the last place where a and b differ
    can give b: the others are not tried (the same moves, found in the same order)."""
    n = len(a)
    if len(b) != n:
        return []  # a move keeps the length
    same_head = next((t for t in range(n) if a[t] != b[t]), n)
    # (Two equal lists differ nowhere: every move that keeps them equal counts, none is ruled out.)
    same_tail = next((t for t in range(n - same_head) if a[n - 1 - t] != b[n - 1 - t]), n)
    if same_head < n and not _one_seam(a, b, same_head, n - same_tail):
        return []  # most pairs are shuffles: proven to be no move without trying every block
    found = []
    for i in range(n):
        for j in range(i + 1, n + 1):
            # insert_at k: min(i, k) <= same_head, and the span ends at max(j, k + j - i) >= n - same_tail.
            lo = 0 if j >= n - same_tail else n - same_tail - (j - i)
            hi = n - (j - i) if i <= same_head else min(same_head, n - (j - i))
            if lo > hi:
                continue
            # The block lands at k, so b[k] must be its first word: a cheap test that rules out
            # almost every k before the lists are built (most pairs are shuffles, not moves).
            starts = [k for k in range(lo, hi + 1) if k != i and b[k] == a[i]]
            if not starts:
                continue
            block, rest = a[i:j], a[:i] + a[j:]
            for k in starts:
                if rest[:k] + block + rest[k:] == b:
                    found.append((i, j, k))
    return found


def _one_seam(a: list[str], b: list[str], first: int, end: int) -> bool:
    """Whether b[first:end] (a != b: `first` is where they first differ, `end - 1` where they last
    do) has at most one pair of neighbours that are not also neighbours somewhere in a.

    Every move passes this test, so a pair that fails it has no move. Moving a[i:j] to k rotates
    one span of a and leaves the rest: b[L:R] == a[M:R] + a[L:M] (L, M, R = k, i, j when the block
    moves left, i, j, k + j - i when it moves right) and b == a outside [L, R). Every place where
    they differ is in that span, so L <= first and end <= R. Inside b[L:R] the two neighbours
    b[x], b[x + 1] are a[y], a[y + 1] for some y, except at the one seam where the pieces meet;
    b[first:end] lies inside b[L:R], so it has that seam or none.
    """
    pairs_of_a = set(zip(a, a[1:]))
    seams = 0
    for x in range(first, end - 1):
        if (b[x], b[x + 1]) not in pairs_of_a:
            seams += 1
            if seams > 1:
                return False
    return True


def _swap(a: list[str], b: list[str]) -> tuple[list[str], list[str], list[str]] | None:
    """(first block, middle, second block) if b is a with two blocks exchanged around a middle."""
    n = len(a)
    pre = 0
    while pre < n and a[pre] == b[pre]:
        pre += 1
    post = 0
    while post < n - pre and a[n - 1 - post] == b[n - 1 - post]:
        post += 1
    core_a, core_b = a[pre : n - post], b[pre : n - post]
    m = len(core_a)
    for i in range(1, m):
        if core_a[i - 1] != core_b[-1]:  # x = core_a[:i] must end core_b
            continue
        for j in range(i, m):
            if core_a[j] != core_b[0]:  # y = core_a[j:] must start it
                continue
            x, mid, y = core_a[:i], core_a[i:j], core_a[j:]
            if y + mid + x == core_b:
                return x, mid, y
    return None


def _uninvert(words: list[str]) -> list[str]:
    """'should you merge' -> 'you should merge': question-style inversion is not a change of meaning."""
    out = list(words)
    if AUXILIARIES.isdisjoint(out):
        return out  # nothing to swap back (most texts): one set test instead of a look at every word
    for i in range(len(out) - 1):
        if out[i] in AUXILIARIES and out[i + 1] in PRONOUNS:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


_LIST_SPLIT = re.compile(r",|;|\band\b|\bor\b")


def _list_items(text: str) -> tuple[str, list[str]] | None:
    """(head, items) of a text that is a list: 'Staging runs Node 20, Postgres 15 and Redis 7'."""
    folded = text.casefold()
    if "," not in folded and ";" not in folded and "and" not in folded and "or" not in folded:
        return None  # nothing `_LIST_SPLIT` can cut at (most texts): one part, no list, and no split made
    parts = [p for p in _LIST_SPLIT.split(folded) if p.strip()]
    if len(parts) < 2:
        return None
    return " ".join(tokens(parts[0])), [" ".join(tokens(p)) for p in parts[1:]]


def _same_list(text_a: str, text_b: str) -> bool:
    la = _list_items(text_a)
    if not la:
        return False  # (b is not split when a is no list: the answer is already known)
    lb = _list_items(text_b)
    if not lb:
        return False
    # The head's last word is the first item ("runs node 20" -> item "node 20" starts after the verb).
    heads_a, heads_b = la[0].split(), lb[0].split()
    for cut in range(1, min(len(heads_a), len(heads_b)) + 1):
        if heads_a[:cut] == heads_b[:cut]:
            ia = sorted([" ".join(heads_a[cut:]), *la[1]])
            ib = sorted([" ".join(heads_b[cut:]), *lb[1]])
            if ia == ib and all(ia):
                return True
    return False


def judge_reorder(text_a: str, text_b: str) -> tuple[bool, str]:
    """(same meaning?, one-line reasoning) for two texts with equal token sets."""
    a, b = tokens(text_a), tokens(text_b)
    if a == b:
        return True, "identical after normalization"
    if sorted(a) != sorted(b):
        return False, "not the same words: not a pure reordering"
    if "respectively" in a:
        return False, "'respectively' ties each item to its place: reordering one list changes who owns what"
    a, b = _uninvert(a), _uninvert(b)
    if a == b:
        return True, "only the question-style word order changed"
    moves = _moves(a, b)
    for i, j, _ in moves:
        block = a[i:j]
        opener = block[1] if block[0] == "only" and len(block) > 1 else block[0]
        if opener in ADVERBIAL_OPENERS and not (set(block) & SCOPE_WORDS and block[0] != "only"):
            return True, f"the phrase '{' '.join(block)}' moved; who does what is unchanged"
        if set(block) & SCOPE_WORDS and len(block) <= 2:
            return False, f"'{' '.join(block)}' moved: it now limits something else"
    if _same_list(text_a, text_b):
        return True, "the items of a list changed order"
    swap = _swap(a, b)
    if swap:
        x, mid, y = swap
        if set(mid) & SEQUENCE:
            return False, f"'{' '.join(x)}' and '{' '.join(y)}' changed places around '{' '.join(mid)}': the order changed"
        if set(x + y) & SCOPE_WORDS:
            return False, f"'{' '.join(x)}' and '{' '.join(y)}' changed places: a negation or limit moved"
        if {_stem(w) for w in mid} & SYMMETRIC_PREDICATES:
            return True, f"'{' '.join(x)}' and '{' '.join(y)}' changed places around a symmetric relation ('{' '.join(mid)}')"
        if _coordinated(a, x, mid, y) and not _numeric(x + y):
            return True, f"'{' '.join(x)}' and '{' '.join(y)}' are joined by '{' '.join(w for w in mid if w in LIST_JOINERS)}': their order does not matter"
        return False, f"'{' '.join(x)}' and '{' '.join(y)}' changed roles around '{' '.join(mid)}'"
    if moves:
        i, j, _ = moves[0]
        return False, f"'{' '.join(a[i:j])}' moved to another role in the sentence"
    return False, "the words were rearranged in a way that may change the meaning"



def _numeric(words: list[str]) -> bool:
    return any(w.isdigit() for w in words)


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _coordinated(a: list[str], x: list[str], mid: list[str], y: list[str]) -> bool:
    """x and y are items of one coordination: 'the billing service and the invoicing service'.

    The middle is a joiner plus determiners and the words both items share ('service'), which must
    then also follow y, so nothing but the two items traded places.
    """
    if not any(w in LIST_JOINERS for w in mid):
        return False
    rest = [w for w in mid if w not in LIST_JOINERS and w not in DETERMINERS]
    if not rest:
        return True
    start = _find(a, x + mid + y)
    if start is None:
        return False
    after_y = a[start + len(x) + len(mid) + len(y) :][: len(rest)]
    return after_y == rest and mid.index(next(w for w in mid if w in LIST_JOINERS)) == len(rest)


def _find(seq: list[str], sub: list[str]) -> int | None:
    for i in range(len(seq) - len(sub) + 1):
        if seq[i : i + len(sub)] == sub:
            return i
    return None
