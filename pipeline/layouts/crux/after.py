"""The crux store as it will be after the run, read by the crux reader itself.

The REM summary's corpus figures and the rebuilt index must describe exactly what the next `plan`
will read. Rather than predicting the reader, the memory and tracker files as they will be (the
overlay over the disk, each read within the readers' limits) are handed to the same reader as bytes
in memory: nothing is copied anywhere, inside the store or out. Files the reader could not read stay
unreadable (a stand-in that the reader rejects takes their place), so nothing from, say, a symlink
pointing outside the store leaks into the index — and such a file is never read at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import yaml

from ...text.yaml_load import safe_load
from ...kinds import FindingKind
from ...config import Settings
from ...model import Corpus, Memory
from .reader import (MEMORY_SUFFIXES, TRACKER_SUFFIX, Files, archive_is_apart, load_memories, load_trackers, memory_files,
                     memory_keys_in, place_of, under)
from .overlay import Overlay
from ...storage.files import Unreadable, as_int, as_tags, decode_text, rel, walk_files

UNREADABLE_STAND_IN = b"\x00"


def after_corpus(root: Path, ov: Overlay, settings: Settings, unreadable: set[str]) -> tuple[Corpus, list[str]]:
    """The corpus after the run, and its primary memory files (`index_keys` says which the index lists)."""
    crux = settings.crux
    working = (crux.storage.memoriesDir, crux.storage.agentMemoriesDir)
    originals = [rel(root, p) for p in memory_files(root, crux)]
    originals += [rel(root, p) for p in walk_files(root, root / crux.trackingDir, (TRACKER_SUFFIX,))]
    final = _final_files(ov, originals, unreadable, lambda path: (
        (path.endswith(MEMORY_SUFFIXES) and any(under(path, w) for w in working))
        or (path.endswith(TRACKER_SUFFIX) and under(path, crux.trackingDir))
    ))

    def with_archive() -> Files:
        # Archived members answer to names too (`members.py`): the archive as it will be, this run's
        # included. Read only when a memory lists members (`load_memories`): else nothing asks.
        sources = crux.storage.compressionSourceArchive
        if not archive_is_apart(crux):
            return final
        archived = [rel(root, p) for p in walk_files(root, root / sources, MEMORY_SUFFIXES)]
        return final | _final_files(ov, archived, unreadable,
                                    lambda path: path.endswith(MEMORY_SUFFIXES) and under(path, sources))

    corpus = Corpus(layout="crux", root=str(root))
    primaries = load_memories(root, settings, corpus, memory_keys_in(final, crux), files=final, archive=with_archive)
    load_trackers(root, settings, corpus, files=final)
    corpus.findings = [f for f in corpus.findings if f.kind == FindingKind.PARSE_ERROR]
    return corpus, primaries


def _final_files(ov: Overlay, originals: list[str], unreadable: set[str], wanted: Callable[[str], bool]) -> dict[str, bytes]:
    """The bytes of each wanted file as it will be after the run: `originals` as the ops leave them,
    and the files the ops create; a file the reader could not read stands in as bytes it rejects."""
    final: dict[str, bytes] = {}
    for path in ov.final_paths(originals):
        if not wanted(path):
            continue
        try:
            data = UNREADABLE_STAND_IN if path in unreadable else ov.read(path)
        except Unreadable:  # unreadable since the plan read it (grown past the cap, say)
            data = UNREADABLE_STAND_IN
        if data is not None:
            final[path] = data
    return final


def old_index(data: bytes | None) -> Any:
    """The previous index's YAML value: None when there is none or it is not readable YAML."""
    try:
        return safe_load(decode_text(data)) if data else None
    except (yaml.YAMLError, Unreadable):
        return None


def old_entries(index: Any) -> dict[str, dict[str, Any]]:
    """The previous index's entries by file (`old_index`), in its order: for files the reader cannot
    read, and the order of entries that rank alike."""
    entries = index.get("memories") if isinstance(index, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, dict) and isinstance(e.get("file"), str):
            out.setdefault(e["file"].strip(), e)
    return out


def _stand_in(key: str, entry: dict[str, Any] | None, settings: Settings) -> Memory:
    """An index entry for an unreadable file: its previous entry as it was, else its path."""
    e = entry or {}
    text = lambda k: str(e[k]).strip() if isinstance(e.get(k), (str, int, float)) else ""  # noqa: E731
    return Memory(
        key=key,
        layout="crux",
        id=e["id"] if isinstance(e.get("id"), str) else None,
        title=text("title"),
        description=text("description"),
        type=text("type") or place_of(key, settings.crux).folder_type,
        strength=as_int(e.get("strength")),
        tags=as_tags(e.get("tags")),
    )


def index_memories(after: Corpus, primaries: list[str], previous: dict[str, dict[str, Any]], settings: Settings) -> list[Memory]:
    """One memory per primary file, as the index drift rule counts them.

    An unreadable file is still a file of the store: it keeps its previous entry (with the
    references of its tracker), or one made from its path.
    """
    by_key = after.by_key()
    by_twin = {m.extra["twin"]: m for m in after.memories if m.extra.get("twin")}
    out = []
    for key in primaries:
        if key in by_key:
            out.append(by_key[key])
        elif key in by_twin:
            out.append(by_twin[key].model_copy(update={"key": key}))
        else:
            out.append(_stand_in(key, previous.get(key), settings))
    return out
