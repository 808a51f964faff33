"""What a writer reads, and whether it is still what the plan judged.

A writer builds its ops on bytes it reads after the plan was made (the plan was shown at a prompt,
the model consulted, meanwhile an agent kept writing). Two promises follow:

- each file is read once per run, within the readers' limits (`files.read_bytes`), and every op
  built on it carries that state as `Op.expect`, so the journal refuses the run if the file changed
  before its copy;
- an action whose targets no longer hold what the plan read (`Action.target_hashes`) is skipped as
  "changed since the plan", never executed on content nobody judged. The one file an action takes
  whole (`Action.takes_appended_lines`: a rotation of the live session log) may have grown since by
  whole lines at its end, the bytes the plan read intact before them (`lines_added`): those lines
  go along with the file, and the action still holds.

Besides files, `target_hashes` may hold a folder's listing (`listing_key`: the folder's key ending in
`/`): which files an index rebuild indexes, so one added or removed since the plan is a change too.
Its state is `listing_state` of the names the layout's reader lists there; `DiskReads.state` gives
it now when the writer hands it that lister.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Callable, Collection, Iterable

from ..journal import state
from ..model import Action
from .files import Unreadable, read_bytes


Lister = Callable[[Path], Iterable[str]]  # a folder -> the names of the files its layout's reader lists there
LEFT_AS_IT_IS = "left as it is (the next plan judges it again)"  # how a skip for a change since the plan ends


def listing_key(folder: str) -> str:
    """The `target_hashes` key of a folder's listing (`./` for the store's own top folder)."""
    return f"{folder.rstrip('/') or '.'}/"


def is_listing(key: str) -> bool:
    return key.endswith("/")


def listing_state(names: Iterable[str]) -> str:
    """The state of a folder's listing: the sha256 of its names, sorted, as ASCII JSON (a name with a
    line break, or bytes that are not UTF-8, cannot make two listings read alike)."""
    return hashlib.sha256(json.dumps(sorted(names), ensure_ascii=True).encode("ascii")).hexdigest()


class DiskReads:
    """The store's files as this run read them: each once, bounded, never through a symlink out.
    Given the layout's `lister`, a folder's listing too (`listing_key`), each listed once."""

    def __init__(self, root: Path, max_bytes: int, lister: Lister | None = None) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.lister = lister
        self._seen: dict[str, bytes | None | str] = {}  # bytes, None (absent) or why unreadable
        self._listed: dict[str, str | None] = {}

    def bytes(self, key: str) -> bytes | None:
        """The file's bytes (None: absent); `Unreadable` when the readers would not read it."""
        if key not in self._seen:
            path = self.root / key
            if not (path.exists() or path.is_symlink()):
                self._seen[key] = None
            else:
                try:
                    self._seen[key] = read_bytes(self.root, path, self.max_bytes)
                except Unreadable as exc:
                    self._seen[key] = str(exc)
        got = self._seen[key]
        if isinstance(got, str):
            raise Unreadable(got)
        return got

    def lines_added(self, key: str, read_sha: str) -> builtins.bytes | None:  # `bytes` is the method here
        """`lines_added` of the file as read (None when unreadable or absent)."""
        try:
            data = self.bytes(key)
        except Unreadable:
            return None
        return None if data is None else lines_added(data, read_sha)

    def state(self, key: str) -> str | None:
        """The journal's state of the file as read (a sha, or ABSENT), or a folder's `listing_state`;
        None when unreadable (a listing: without a lister, or one that cannot be listed)."""
        if is_listing(key):
            return self._listing(key)
        try:
            return state(self.bytes(key))
        except Unreadable:
            return None

    def _listing(self, key: str) -> str | None:
        if key not in self._listed:
            try:
                self._listed[key] = None if self.lister is None else listing_state(self.lister(self.root / key))
            except OSError:
                self._listed[key] = None
        return self._listed[key]


# A line ends at CRLF, LF or CR, as agents and `text.lines.split_lines` see it.
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def reviewed_prefixes(data: bytes) -> Iterator[tuple[int, str]]:
    """(length, sha256) of each prefix of `data` that whole lines could have been appended after:
    what follows it is not empty, begins a line (the prefix is empty or ends with a line break, or
    what follows starts with one: the agent first ended an unterminated last line) and ends with a
    line break (no line still being written). Shortest first, hashed in one pass."""
    if not data.endswith((b"\n", b"\r")):
        return
    digest = hashlib.sha256()
    hashed, last = 0, -1
    breaks = (end for brk in _LINE_BREAK.finditer(data) for end in (brk.start(), brk.end()))
    for end in chain((0,), breaks):  # before each break (an unterminated line) and after it
        if last < end < len(data):
            digest.update(data[hashed:end])
            hashed = last = end
            yield end, digest.copy().hexdigest()


def lines_added(data: bytes, read_sha: str) -> bytes | None:
    """The whole lines appended to `data` after the bytes whose sha256 is `read_sha` (what a plan
    read), or None when `data` is not those bytes followed by whole lines (one of them edited, the
    file cut shorter, a line still being written at its end, or nothing added)."""
    found = next((length for length, digest in reviewed_prefixes(data) if digest == read_sha), None)
    return None if found is None else data[found:]


def changed_since_plan(
    action: Action,
    current: Callable[[str], str | None],
    unchecked: Collection[str] = (),
    added: Callable[[str, str], bytes | None] | None = None,
) -> str | None:
    """Why `action` must be skipped — a target whose content (`current(key)`, a sha) differs from
    what the plan judged — or None. Keys in `unchecked` are left to the writer (this run changed them).
    `added(key, read_sha)`: the lines appended since to the file the action takes whole
    (`DiskReads.lines_added`), which go along with it and so are no change of the action."""
    whole = action.takes_appended_lines()
    # Files first: a file that changed is the more telling reason (a rebuild's MEMORY.md edited, say).
    for key, want in sorted((action.target_hashes or {}).items(), key=lambda item: (is_listing(item[0]), item[0])):
        if key in unchecked or current(key) == want:
            continue
        if key == whole and added is not None and added(key, want) is not None:
            continue
        what = f"which files {key} holds" if is_listing(key) else key
        return f"{what} changed since the plan: {LEFT_AS_IT_IS}"
    return None
