"""What a writer reads, and whether it is still what the plan judged.

A writer builds its ops on bytes it reads after the plan was made (the plan was shown at a prompt,
the model consulted, meanwhile an agent kept writing). Two promises follow:

- each file is read once per run, within the readers' limits (`files.read_bytes`), and every op
  built on it carries that state as `Op.expect`, so the journal refuses the run if the file changed
  before its copy;
- an action whose targets no longer hold what the plan read (`Action.target_hashes`) is skipped as
  "changed since the plan", never executed on content nobody judged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Collection

from ..journal import state
from ..model import Action
from .files import Unreadable, read_bytes


class DiskReads:
    """The store's files as this run read them: each once, bounded, never through a symlink out."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._seen: dict[str, bytes | None | str] = {}  # bytes, None (absent) or why unreadable

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

    def state(self, key: str) -> str | None:
        """The journal's state of the file as read (a sha, or ABSENT); None when unreadable."""
        try:
            return state(self.bytes(key))
        except Unreadable:
            return None


def changed_since_plan(action: Action, current: Callable[[str], str | None], unchecked: Collection[str] = ()) -> str | None:
    """Why `action` must be skipped — a target whose content (`current(key)`, a sha) differs from
    what the plan judged — or None. Keys in `unchecked` are left to the writer (this run changed them)."""
    for key, want in sorted((action.target_hashes or {}).items()):
        if key not in unchecked and current(key) != want:
            return f"{key} changed since the plan: left as it is (the next plan judges it again)"
    return None
