"""What a writer reads, and whether it is still what the plan judged.

A writer builds its ops on bytes it reads after the plan was made (the plan was shown at a prompt,
the model consulted, meanwhile an agent kept writing). Two promises follow:

- each file is read once per run, within the readers' limits (`files.read_bytes`), and every op
  built on it carries that state as `Op.expect`, so the journal refuses the run if the file changed
  before its copy;
- an action whose targets no longer hold what the plan read (`Action.target_hashes`) is skipped as
  "changed since the plan", never executed on content nobody judged. The one file an action takes
  whole (`Action.takes_appended_lines`: a rotation of the live session log) may have grown since by
  whole lines at its end, the bytes the plan read intact before them (the action holds how many,
  and their sha256: `lines_added` looks at the one place they end): those lines go along with the
  file, and the action still holds.

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
from bisect import bisect_left
from collections import deque
from pathlib import Path
from typing import Callable, Collection, Iterable

from ..journal import state
from ..actions import WholeRead
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

    def lines_added(self, read: WholeRead) -> builtins.bytes | None:  # `bytes` is the method here
        """`lines_added` of the file as read (None when unreadable or absent)."""
        try:
            data = self.bytes(read.key)
        except Unreadable:
            return None
        return None if data is None else lines_added(data, read)

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
_BREAK_BYTES = (b"\n", b"\r")


def lines_added(data: bytes, read: WholeRead) -> bytes | None:
    """The whole lines appended to `data` after the bytes the plan read (`read`: how many, and their
    sha256), or None when `data` is not those bytes followed by whole lines (one of them edited, the
    file cut shorter, a line still being written at its end, or nothing added). When the last line
    read had no line break, the break that ends it is not a line added: it is left out."""
    if not (0 <= read.length < len(data) and data.endswith(_BREAK_BYTES) and _begins_a_line(data, read.length)):
        return None
    if hashlib.sha256(memoryview(data)[: read.length]).hexdigest() != read.sha:
        return None
    added = data[read.length :]
    if read.length and data[read.length - 1 : read.length] not in _BREAK_BYTES:
        ending = _LINE_BREAK.match(added)
        added = added[ending.end() :] if ending else added  # (always there: `_begins_a_line`)
    return added


def _begins_a_line(data: bytes, at: int) -> bool:
    """Whether what follows the first `at` bytes starts a line, or the line break ending the line
    they end with (an agent's first append may end an unterminated last line, never write on it)."""
    before, after = data[at - 1 : at], data[at : at + 1]
    if before == b"\r" and after == b"\n":
        return False  # inside a CRLF: the CR read was the start of a line break the agent completed
    return at == 0 or before in _BREAK_BYTES or after in _BREAK_BYTES


def recent_reads(data: bytes, most_lines: int) -> list[tuple[int, str]]:
    """(length, sha256) of each prefix of `data` after which `lines_added` finds at most `most_lines`
    lines (or only the break ending the last line before), those with the fewest lines after first:
    what a plan may have read of the file, when only a code of that read is known (a pin)."""
    if not data.endswith(_BREAK_BYTES):
        return []
    last, every = _last_breaks(data, most_lines + 1)  # each a line added, or ending the last line read
    starts = [m.start() for m in last]
    lengths = {n for m in last for n in (m.start(), m.end())} | ({0} if every else set())
    reads: list[tuple[int, str]] = []
    digest, hashed = hashlib.sha256(), 0
    for length in sorted(n for n in lengths if n < len(data)):
        added = len(starts) - bisect_left(starts, length)  # the breaks after the read, all in `last`
        ends_a_line = length > 0 and data[length - 1 : length] not in _BREAK_BYTES
        if added - ends_a_line > most_lines:
            continue
        digest.update(memoryview(data)[hashed:length])  # one pass over the file for every read
        hashed = length
        reads.append((length, digest.copy().hexdigest()))
    return reads[::-1]


def _last_breaks(data: bytes, count: int) -> tuple[list[re.Match[bytes]], bool]:
    """The last `count` line breaks of `data`, and whether they are all it has: found in a window at
    its end, widened until it holds them (a big log's breaks are not all listed)."""
    window = 128 * count
    while True:
        start = max(0, len(data) - window)
        if data[start - 1 : start + 1] == b"\r\n":
            start -= 1  # never inside a CRLF, where its LF would read as a line break of its own
        found = deque(_LINE_BREAK.finditer(data, start), maxlen=count + 1)
        if start == 0 or len(found) > count:
            return list(found)[-count:], start == 0 and len(found) <= count
        window *= 4


def changed_since_plan(
    action: Action,
    current: Callable[[str], str | None],
    unchecked: Collection[str] = (),
    added: Callable[[WholeRead], bytes | None] | None = None,
) -> str | None:
    """Why `action` must be skipped — a target whose content (`current(key)`, a sha) differs from
    what the plan judged — or None. Keys in `unchecked` are left to the writer (this run changed them).
    `added(read)`: the lines appended since to the file the action takes whole, as the plan read it
    (`DiskReads.lines_added`), which go along with it and so are no change of the action."""
    whole = action.takes_appended_lines()
    # Files first: a file that changed is the more telling reason (a rebuild's MEMORY.md edited, say).
    for key, want in sorted((action.target_hashes or {}).items(), key=lambda item: (is_listing(item[0]), item[0])):
        if key in unchecked or current(key) == want:
            continue
        if whole is not None and key == whole.key and added is not None and added(whole) is not None:
            continue
        what = f"which files {key} holds" if is_listing(key) else key
        return f"{what} changed since the plan: {LEFT_AS_IT_IS}"
    return None
