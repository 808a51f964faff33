"""What a claude apply never edits or moves, decided in one place for the plan and the writer.

An index (a MEMORY.md, or a sub-index MEMORY.md reaches) is left as it is, whatever a run asks of
it (`index_left`), when:
- the reader reported it (`parse_error`): it could not be read (not UTF-8, over the size cap, a
  symlink leaving the store), or it holds a code fence never closed (`memory_md.unclosed_fence`:
  a line edited there could be code);
- it is a symlink, a dangling one too: the journal writes no file through a link;
- it is there but is no regular file (a folder, a FIFO named MEMORY.md);
- the journal refuses its path (`journal.unsafe_reason`, which apply asks before it runs a change
  set): a folder on its way is a symlink (a memory folder the reader reached through a linked
  folder), its name is one the journal cannot record (a backslash);
- apply may not write into its folder's archive (`archive_left`: `.archive` a symlink, a dangling
  one too, or no folder), where every edit of an index first copies it.
A memory is never moved or edited (`memory_left`) for `decisions.unmovable_in`'s reasons (a file
the reader could not read, a symlink, pinned) or the journal's, nor one kept inside a MEMORY.md
that is left; a topic file is never moved either (archived, merged away, consolidated, a
conflict's side) while its folder's archive is left, but its text may still be edited in place.

The writer asks these before it edits; the plan asks the same, so that it never proposes what
apply would skip every time for a reason the reader already knew (a person reviews the plan: such
an action is noise at best, and hides the real state at worst). What it would have proposed is a
finding instead (`rules.unedited_drift`, `rules.memories_left`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

from ...journal import unsafe_reason, unsafe_reasons
from ...model import Corpus, file_of
from . import memory_md
from .decisions import reported_by_reader, unmovable_in
from .paths import ARCHIVE_DIR, _in_folder, _name, folder_of
from .reader import INDEX


@dataclass(frozen=True)
class Left:
    """Why an index is left as it is, in the words each place says it in."""

    why: str  # what is wrong with it: the writer's notes (`MEMORY.md left untouched: <why>`)
    being: str  # the same, as the plan's findings say it (`left as it is, <being>: <fix>, ...`)
    fix: str  # what the user does for a later plan to propose the edit

    def then(self, kind: str) -> str:
        """What makes a plan propose `kind` of the index (`rebuild_index`, `trim_budget`)."""
        return f"{self.fix}, and the next plan proposes {kind}"


# The reader's `parse_error` on an index: it was read, or could not be, and either way is never edited.
REPORTED = "the index being read but never edited while it has the parse_error said of it"
SYMLINK = Left("it is a symlink", "the index being a symlink, never edited (no file is written through a link)",
               "put the file it points at in its place")
NOT_A_FILE = Left("it is no regular file", "the index being no regular file (a folder, a FIFO), never edited",
                  "move it aside")
NOT_READ = Left("it is no index the reader read", "the index being one the reader did not read, never edited",
                "plan again")


def index_left(corpus: Corpus, key: str, reported: Mapping[str, str] | None = None) -> Left | None:
    """Why apply leaves index `key` (a MEMORY.md or a sub-index) as it is, or None when it may edit
    it. `reported`: `reported_by_reader`, when the caller has it already."""
    said = (reported_by_reader(corpus) if reported is None else reported).get(key)
    if said is not None:
        return Left(said, REPORTED, "fix that")
    path = Path(corpus.root) / key
    if path.is_symlink():
        return SYMLINK
    if path.exists() and not path.is_file():
        return NOT_A_FILE
    if (refused := unsafe_reason(Path(corpus.root), key)) is not None:
        return Left(refused, f"the index being where apply never writes ({refused})", "move it where it may")
    if (unarchived := archive_left(Path(corpus.root), folder_of(key))) is not None:  # where its old copy goes
        return Left(unarchived, f"the index being never edited, its old copy never archived ({unarchived})",
                    f"make {ARCHIVE_DIR} beside it a folder of the store")
    if _name(key) == INDEX and key not in corpus.indexes:
        return NOT_READ  # never a folder's index the reader listed: nothing is known of what it should list
    return None


def fenced(lines: Sequence[memory_md.Line]) -> Left | None:
    """Why an index read again as `lines` is left as it is when it holds a code fence never closed
    (written since the reader read it: the reader reports one it read as a `parse_error`), in the
    words `index_left` says the reader's in."""
    line = memory_md.unclosed_fence(lines)
    return None if line is None else Left(memory_md.unclosed_fence_said(line), REPORTED, "fix that")


def uneditable_indexes(corpus: Corpus) -> dict[str, Left]:
    """Each index the reader read or listed (every folder's MEMORY.md, each sub-index it reaches)
    that apply leaves as it is, with why."""
    reported = reported_by_reader(corpus)
    subs = [k for keys in corpus.extra.get("sub_indexes", {}).values() for k in keys]
    return {key: left for key in [*corpus.indexes, *subs] if (left := index_left(corpus, key, reported)) is not None}


def archive_left(root: Path, folder: str) -> str | None:
    """Why apply never writes into the archive of memory folder `folder` (`<folder>/.archive/`,
    where a run moves what it retires and copies an index before editing it), or None: the journal
    refuses that folder (`journal.unsafe_reason`: a symlink, a dangling one too, which it would
    refuse to create the run's folder in), or it is no folder. Every such write fails there, every run."""
    archive = _in_folder(folder, ARCHIVE_DIR)
    why = unsafe_reason(root, archive, folder=True)
    if why is None and (root / archive).exists() and not (root / archive).is_dir():
        why = "it is no folder"
    return None if why is None else f"{archive}/ is where apply never writes: {why}"


def archives_left(root: Path) -> Callable[[str], str | None]:
    """`archive_left` of the folder of each memory asked of, by key, each folder asked once: a few
    folders hold thousands of memories."""
    by_folder = cache(partial(archive_left, root))
    return lambda key: by_folder(folder_of(key))


def held_in_index(key: str) -> str | None:
    """The MEMORY.md a memory is kept inside (`.../MEMORY.md#slug/n`), or None for a file of its own
    (`ci#cache.md` is a topic file with a `#` in its name, not a memory kept inside an index `ci`)."""
    index = file_of(key)
    return index if index != key and _name(index) == INDEX else None


def memory_left(corpus: Corpus, moving: bool = True) -> Callable[[str], str | None]:
    """Why apply never moves or edits a memory (`decisions.unmovable_in`: unreadable, not a memory
    file, a symlink, pinned; one kept inside MEMORY.md: that MEMORY.md is left, `index_left`), or None.
    `moving`: asked of a move (an archive, a merge, a consolidation, a conflict's resolution): a
    topic file is never moved either while its folder's archive is left (`archive_left`); False: of
    an in-place text edit, which writes the file alone."""
    reported = reported_by_reader(corpus)
    unmovable = unmovable_in(corpus, set(reported))  # from the reasons read once
    root = Path(corpus.root)
    indexes: dict[str, Left | None] = {}
    unarchived = archives_left(root)
    refused = unsafe_reasons(root)  # each folder judged once: a few folders hold thousands of memories

    def left(key: str) -> str | None:
        why = unmovable(key)
        index = held_in_index(key)
        if index is None:
            if why is None:
                why = refused(key)  # what apply would refuse to move or write
            return why if why is not None or not moving else unarchived(key)
        if why is not None:
            return why
        if index not in indexes:
            indexes[index] = index_left(corpus, index, reported)
        held_in = indexes[index]
        return None if held_in is None else f"kept inside {_name(index)}, left untouched: {held_in.why}"

    return left
