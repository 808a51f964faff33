"""The verdict on two memories: `judge_conflict`, `judge_conflict_quoted` (with the clashing
clauses) and `clash_clauses` (the clauses to quote for any verdict, the stub's or a model's).

It decides which clauses are weighed against which: statements only (markup set aside), the main
clauses first, then steps in opposite order, an explicit rejection, and a few later clauses near the
top. A long document's every clause pair would be a chance for a false alarm.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ....rules.text import normalize
from ..conflict_statements import statements
from .clash import _judge_clauses, _may_oppose
from .history import _dated
from .order import _opposite_actions, _reversed_steps, _step_sentences
from .readings import Reading, claim_clauses, clauses, read
from .rejected import _rejected_choice
from .words import _stem, _token


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
    ca, cb = claim_clauses(text_a), claim_clauses(text_b)
    # A text of clause breaks alone ("—", ".", ";") is not blank, yet splits into no clause at all.
    if not ca or not cb:
        return False, "none", "no statement to compare (markup only)", "", ""
    if text_a.strip().endswith("?") or text_b.strip().endswith("?"):
        return False, "none", "a question asserts nothing", "", ""
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
    later_a, later_b = _later_readings(text_a), _later_readings(text_b)
    for i, j in _LATER_PAIRS:
        # Only opposing advice counts here: most clause pairs are not weighed at all (`_may_oppose`).
        if i >= len(later_a) or j >= len(later_b) or not _may_oppose(later_a[i], later_b[j]):
            continue
        verdict = _judge_clauses(later_a[i], later_b[j])
        if verdict[0] and verdict[1] == "opposing_advice":
            return (*_dated(verdict, text_a, text_b), ca[i].strip(), cb[j].strip())
    return (*first, "", "")


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


LATER_CLAUSES = 4
# The pairs of clauses (index in a, index in b) weighed after the main clauses, in order: among each
# text's first `LATER_CLAUSES`, those where either clause is its text's first or second.
_LATER_PAIRS = tuple((i, j) for i in range(LATER_CLAUSES) for j in range(LATER_CLAUSES) if (i, j) != (0, 0) and min(i, j) <= 1)


@lru_cache(maxsize=2048)
def _later_readings(text: str) -> tuple[Reading, ...]:
    """The readings of a text's first `LATER_CLAUSES` claim clauses, each with its pronoun resolved:
    made once per text (its statements), not once per pair it is in nor per clause it is weighed
    against, in a bounded cache beside `statements`."""
    found = claim_clauses(text)
    return tuple(read(_resolve_pronoun(x, found)) for x in found[:LATER_CLAUSES])


_PRONOUN_OBJECT = re.compile(r"\b(them|it|they|these|those|there)\b", re.IGNORECASE)


def _resolve_pronoun(clause: str, all_clauses: list[str]) -> str:
    """'never cache them' after 'fetch exchange rates on every conversion': 'them' is what the first
    clause spoke of, so a later clause with a pronoun borrows the first clause's words."""
    if clause == all_clauses[0] or not _PRONOUN_OBJECT.search(clause):
        return clause
    head = all_clauses[0].split()
    return f"{clause} {' '.join(head[1:])}"
