"""dream's consult-gate (seed 001, STEP 2.5): never prune a memory that is still being looked up.

`.claude/logs/memory-consult.jsonl` holds one JSON object a line (`ts` ISO-8601, `session`, `tool`,
`query`, `names`). A FULLY_STALE memory consulted within `consult_window_days` before `--now` is
kept. dream's own code computes the cutoff and never applies it; here only entries dated within
[now - window, now] count (entries after `--now` belong to a later run and count neither).

Matching is dream's, deliberately fuzzy because it errs toward keeping: an entry's `names`, and the
words of its `query` longer than two characters, are terms; a memory matches when its name equals a
term, or a term and its file slug contain one another. Terms and slugs are lowercased and `_`/space
are read as `-`, so "search_index", "search-index" and "search index" agree.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass

from ..model import Memory

_SEP = re.compile(r"[\s_]+")
_EDGE_PUNCT = ".,;:!?\"'()[]{}<>`*#"


@dataclass(frozen=True)
class ConsultEntry:
    day: dt.date  # UTC date of `ts`
    names: tuple[str, ...]
    query: str


def _day(ts: object) -> dt.date | None:
    if not isinstance(ts, str) or not ts.strip():
        return None
    text = ts.strip()
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is not None:
        try:
            when = when.astimezone(dt.timezone.utc)
        except OverflowError:  # 9999-12-31T23:59-01:00 has no UTC date
            return None
    return when.date()


def parse_consult_log(text: str) -> tuple[list[ConsultEntry], int]:
    """Entries of a consult log and the number of lines skipped (not JSON, no usable `ts`)."""
    entries: list[ConsultEntry] = []
    skipped = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        day = _day(rec.get("ts")) if isinstance(rec, dict) else None
        if day is None:
            skipped += 1
            continue
        names = rec.get("names")
        names_t = tuple(str(n) for n in names if isinstance(n, (str, int)) and not isinstance(n, bool)) if isinstance(names, list) else ()
        query = rec.get("query") if isinstance(rec.get("query"), str) else ""
        entries.append(ConsultEntry(day=day, names=names_t, query=query))
    return entries, skipped


def normalize_term(text: str) -> str:
    return _SEP.sub("-", text.strip().lower()).strip(_EDGE_PUNCT + "-")


def consulted_terms(entries: list[ConsultEntry], now: dt.date, window_days: int) -> dict[str, dt.date]:
    """Every term looked up in the window, with the latest day it was looked up."""
    cutoff = now - dt.timedelta(days=window_days)
    terms: dict[str, dt.date] = {}
    for e in entries:
        if not (cutoff <= e.day <= now):
            continue
        words = [normalize_term(n) for n in e.names]
        words += [normalize_term(w) for w in e.query.split() if len(normalize_term(w)) > 2]
        for w in words:
            if w and (w not in terms or terms[w] < e.day):
                terms[w] = e.day
    return terms


def consult_match(m: Memory, terms: dict[str, dt.date]) -> tuple[str, dt.date] | None:
    """The term (and its latest day) that shows this memory was looked up, or None."""
    slug = normalize_term(m.slug)
    name = normalize_term(m.title) if m.title else ""
    hits = [t for t in terms if (name and t == name) or (slug and (t in slug or slug in t))]
    if not hits:
        return None
    best = max(hits, key=lambda t: (terms[t], t))
    return best, terms[best]
