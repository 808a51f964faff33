"""Text normalization shared by the rules, the stages and the eval baselines."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_NON_ALNUM = re.compile(r"[\W_]+", re.UNICODE)

# dream's stopword list (seed 001, STEP 3), used wherever "significant words" are meant.
STOPWORDS = frozenset(
    """the a an is are was were be been have has had do does did will would could should may might
    can shall to of in for on with at by from as into through during before after this that it not
    no but or and if then than so""".split()
)


@lru_cache(maxsize=65536)
def normalize(text: str) -> str:
    """Lowercase, every run of non-alphanumerics to one space, trimmed; Unicode-aware (NFKC)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NON_ALNUM.sub(" ", folded).strip()


def tokens(text: str) -> list[str]:
    return normalize(text).split()


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


def significant_words(text: str) -> frozenset[str]:
    """Words that carry the subject: not stopwords, longer than two characters."""
    return frozenset(w for w in tokens(text) if w not in STOPWORDS and len(w) > 2)


def slugify(text: str, max_len: int = 80) -> str:
    slug = normalize(text).replace(" ", "-")
    return slug[:max_len].rstrip("-") or "memory"
