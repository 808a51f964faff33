"""Text normalization shared by the rules, the stages and the eval baselines."""

from __future__ import annotations

import re
import sys
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import chain, filterfalse, repeat

from ..model import Memory
from . import native

# A word of the normal form: a run of letters and digits (a `\w` but `_`). Found and joined rather than
# substituting every run between them: the same text, a quarter of the CPU on a store of 200k bodies.
_ALNUM_RUN = re.compile(r"[^\W_]+", re.UNICODE)
# The same for ASCII text in one C pass over its bytes: A-Z lowered, a-z and 0-9 kept, every other
# byte a space, then split and joined (a third of the regex's CPU on a store of 200k bodies).
_ASCII_WORD_BYTES = bytes(
    c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256)
)

# dream's stopword list (seed 001, STEP 3), used wherever "significant words" are meant.
STOPWORDS = frozenset(
    """the a an is are was were be been have has had do does did will would could should may might
    can shall to of in for on with at by from as into through during before after this that it not
    no but or and if then than so""".split()
)


def normalized_text(text: str) -> str:
    """Lowercase, every run of non-alphanumerics to one space, trimmed; Unicode-aware (NFKC)."""
    if text.isascii():  # NFKC leaves ASCII as it is, and casefold is lower there
        return b" ".join(text.encode("ascii").translate(_ASCII_WORD_BYTES).split()).decode("ascii")
    return " ".join(_ALNUM_RUN.findall(unicodedata.normalize("NFKC", text).casefold()))


# Cached for the short texts asked about again and again (clauses, headings, rule lines). A memory's
# body goes through `normalized_body` instead: on a store of more than 65,536 memories every pass over
# the bodies would evict the previous pass's entries and miss on all of them.
normalize = lru_cache(maxsize=65536)(normalized_text)

# Where `normalized_body` keeps its result: a key beside the fields in the memory's `__dict__`, which
# pydantic's dumps, equality and repr ignore (they read the declared fields only).
_BODY_MEMO = "_normalized_body"


def normalized_body(memory: Memory) -> str:
    """`normalize(memory.body)`, computed once per memory and carried on it.

    The memo holds the body it was computed from and is used only while that very object is still the
    body, so a copy with another body (`model_copy(update=...)`, an assignment) is never answered with
    a stale form. An already normalized body is kept as its own normal form (no second copy in memory).
    """
    body = memory.body
    memo = memory.__dict__.get(_BODY_MEMO)
    if memo is None or memo[0] is not body:
        norm = normalized_text(body)
        memo = (body, body if norm == body else norm)
        memory.__dict__[_BODY_MEMO] = memo
    return memo[1]


def tokens(text: str) -> list[str]:
    return normalize(text).split()


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


def significant_words(text: str) -> frozenset[str]:
    """Words that carry the subject: not stopwords, longer than two characters."""
    return significant_of_normalized(normalize(text))


def significant_of_normalized(normalized: str) -> frozenset[str]:
    """`significant_words` of a text already normalized (a memory's `normalized_body`)."""
    if normalized.isascii():  # its words are runs of a-z and 0-9: one set difference, in C
        return frozenset(normalized.split()) - _NOT_SIGNIFICANT_ASCII
    return frozenset(_significant_in_order(normalized))


def _significant_in_order(normalized: str) -> Iterator[str]:
    """A normal form's significant words as it writes them (any script: the rule for every text)."""
    return (w for w in normalized.split() if w not in STOPWORDS and len(w) > 2)


def significant_of_each(normalized: list[str], tags: list[list[str]],
                        tag_word: Callable[[str], str]) -> tuple[list[tuple[str, ...]], list[int]]:
    """Each text's significant words (`significant_of_normalized`), then the words its tags are
    (`tag_word` of each), each word once, in the order first met, as a tuple; and how many of each are
    the text's own. When every text and tag word is ASCII, by one C pass (`significant_tuples`).

    A tuple, not a set: the subject-pair search reads each memory's words in C, where a tuple is made
    without hashing and freed without a table, and it builds a set only for the few pairs it offers
    (on a bank of 50k memories, sets cost some 50 ms to build and free, and their 24 MB of tables were
    read again by every later pass).

    The words of ASCII texts are interned (`sys.intern`): a word the texts share is then one object
    in all their tuples, so the passes that count or number the words match it by identity, without
    reading a copy of it elsewhere in memory."""
    if all(map(str.isascii, normalized)):
        word_of_tag = {tag: tag_word(tag) for tag in set(chain.from_iterable(tags))}
        if all(map(str.isascii, word_of_tag.values())):
            return _significant_tuples(normalized, _NOT_SIGNIFICANT_ASCII, tags, word_of_tag)
    bodies = list(map(dict.fromkeys, map(_significant_in_order, normalized)))
    return _with_tags(bodies, map(map, repeat(tag_word), tags))


def significant_tuples(texts: list[str], leave_out: frozenset[str], tags: list[list[str]],
                      tag_word: dict[str, str]) -> tuple[list[tuple[str, ...]], list[int]]:
    """Each ASCII text's words (`str.split`), interned, but those in `leave_out`, then the words of its
    `tags` (`tag_word[tag]`, kept whatever `leave_out` holds), each once, in the order first met, as a
    tuple; and how many of each are the text's. The reference of the C form in _pair_search.c, which
    native.py runs when it is built."""
    if len(tags) != len(texts):
        raise ValueError("tags for each text")
    words = map(map, repeat(sys.intern), map(str.split, texts))
    bodies = list(map(dict.fromkeys, map(filterfalse, repeat(leave_out.__contains__), words)))
    return _with_tags(bodies, map(map, repeat(sys.intern), map(map, repeat(tag_word.__getitem__), tags)))


def _with_tags(bodies: list[dict[str, None]], tag_words: Iterable[Iterable[str]]) -> tuple[list[tuple[str, ...]], list[int]]:
    """Each body's words (a dict's keys, in their order), then its tags' words not among them, as a
    tuple; and each body's size."""
    body_sizes = list(map(len, bodies))
    deque(map(dict.update, bodies, map(dict.fromkeys, tag_words)), maxlen=0)
    return list(map(tuple, bodies)), body_sizes


# What an ASCII normal form's significant words leave out: the stopwords and every word of one or two
# letters or digits.
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_NOT_SIGNIFICANT_ASCII = STOPWORDS | frozenset(_ALNUM) | frozenset(a + b for a in _ALNUM for b in _ALNUM)

_significant_tuples = native.preferred(significant_tuples)


def as_written(word: str, texts: Iterable[str]) -> str:
    """`word` (a word of the normal form) spelled as the first of `texts` that writes it with a capital
    past its first letter ("ExtLedgerState", "CBOR"), else as it is: a title built from normal-form
    words keeps the names a person wrote, not "Extledgerstate"."""
    pattern = re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", re.IGNORECASE)
    for text in texts:
        for found in pattern.finditer(text):
            if not found.group()[1:].islower():
                return found.group()
    return word


def slugify(text: str, max_len: int = 80) -> str:
    slug = normalize(text).replace(" ", "-")
    return slug[:max_len].rstrip("-") or "memory"
