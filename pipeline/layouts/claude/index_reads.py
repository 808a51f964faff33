"""What applying a claude action builds on besides its targets: the folder's indexes, and for a
rebuild the folder's files.

An action archiving a file or writing one edits the folder's MEMORY.md and the sub-indexes it
reaches (the file's lines struck out or made a consolidation's, an owner's note on it re-pointed or
quoted: what the plan's reason says), and a MEMORY.md rebuild indexes the files the folder holds
(an entry for each one nothing reaches, made of its front matter; an entry without a file removed).
The plan gives each action the state of what these edits are built on (`Layout.depends_on`,
`plan.with_target_hashes`), so its fingerprint changes with it: `apply --select N=FINGERPRINT`
refuses an action whose edits would no longer be the ones the plan showed, and the writer skips one
whose indexes changed while the plan was shown.
"""

from __future__ import annotations

from ...kinds import ActionKind
from ...model import Action, Corpus
from ...storage.since_plan import listing_key
from .decisions import INDEX_KINDS
from .paths import _in_folder, _name, folder_of
from .reader import INDEX

# The kinds `decisions.decide` archives files or writes a file for: the run edits the folder's
# indexes for them (a conflict only under `--resolve newer`; one pinned is pinned to them anyway).
EDITS_INDEXES = (ActionKind.PRUNE_STALE, ActionKind.MERGE_DUPLICATE, ActionKind.CONSOLIDATE, ActionKind.CONFLICT)


def depends_on(corpus: Corpus, action: Action) -> list[str]:
    """The keys, besides the action's targets, whose state (as the reader read it: `Corpus.index_shas`,
    a memory's `read_shas`) what applying it writes depends on."""
    if action.kind in INDEX_KINDS:
        return [k for t in action.targets if _name(t) == INDEX for k in _rebuild_reads(corpus, t)]
    if action.kind in EDITS_INDEXES:
        folders = dict.fromkeys(folder_of(t) for t in action.targets)
        return [k for folder in folders for k in _indexes(corpus, _in_folder(folder, INDEX))]
    return []


def _indexes(corpus: Corpus, index_key: str) -> list[str]:
    """MEMORY.md and the sub-indexes it reaches: the files a run edits for the files it archives or writes."""
    return [index_key, *corpus.extra.get("sub_indexes", {}).get(index_key, [])]


def _rebuild_reads(corpus: Corpus, index_key: str) -> list[str]:
    """What a rebuild of MEMORY.md (its target) is made of besides it: its sub-indexes (the files it
    reaches through them), which files the folder holds (its listing), and each file it reaches none
    of (its new entry's title and hook come from the file's front matter)."""
    reached = {e.target for e in corpus.index_entries if e.index == index_key}
    unreached = [k for k in corpus.indexes.get(index_key, []) if k not in reached]
    return [*_indexes(corpus, index_key)[1:], listing_key(folder_of(index_key)), *unreached]
