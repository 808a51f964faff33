"""Index drift: MEMORY.md or `.crux/memory-index.yml` not 1:1 with the memory files."""

from __future__ import annotations

from collections import Counter
from typing import Collection

from ..text.counts import plural
from ..text.truncate import HOOK_STRIP, shorten
from ..model import Action, Corpus
from .outcome import Outcome


def _describe(keys: list[str], limit: int = 3) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _quoted(hook: str, limit: int = 100) -> str:
    return "\u201c" + shorten(" ".join(hook.split()), limit, strip=HOOK_STRIP) + "\u201d"


def index_drift(corpus: Corpus, settled: Collection[str] = frozenset()) -> Outcome:
    """One `rebuild_index` per index whose entries are not exactly the files it should list.

    `settled`: files the plan's own actions archive, taking their index lines with them (claude's
    `rules.without_settled_drift`). That one is not indexed or is indexed twice is no reason for a
    rebuild: once archived it needs no entry, and it has no line left to repeat."""
    out = Outcome()
    archived = frozenset(settled)
    listed: dict[str, list[str]] = {index: [] for index in corpus.indexes}
    hooks: dict[tuple[str, str], str] = {}  # (index, target): the first hook its lines give
    for entry in corpus.index_entries:
        listed.setdefault(entry.index, []).append(entry.target)
        if entry.hook.strip():
            hooks.setdefault((entry.index, entry.target), entry.hook)
    for index, expected in sorted(corpus.indexes.items()):
        have = Counter(listed.get(index, []))
        want = set(expected)
        missing = sorted(want - set(have) - archived)
        extra = sorted(set(have) - want)
        repeated = sorted(k for k, n in have.items() if n > 1 and k in want and k not in archived)
        problems = []
        if not corpus.extra.get("index_present", {}).get(index, True):
            problems.append("index file missing")
        if missing:
            problems.append(f"{plural(len(missing), 'file')} not indexed: {_describe(missing)}")
        if extra:
            # Its line goes with the rebuild; a hook may be the only words left of that memory, and
            # the agent reads it each session: quoted, so a person sees what goes (the index itself
            # is archived first).
            said = [f"{k} ({_quoted(hooks[index, k])})" if (index, k) in hooks else k for k in extra]
            problems.append(f"{plural(len(extra), 'entry', 'entries')} without a file: {_describe(said)}")
        if repeated:
            problems.append(f"{plural(len(repeated), 'file')} indexed twice: {_describe(repeated)}")
        if problems:
            out.actions.append(Action(kind="rebuild_index", targets=[index], reason="; ".join(problems)))
    return out
