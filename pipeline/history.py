"""The runs a store remembers (`memconsolidate runs`, `status`) and the size of its state folder."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .journal import run_views
from .config import STATE_DIR
from .storage.walk import walk_down


@dataclass
class RunEntry:
    run_id: str
    created: str  # ISO time, UTC
    status: str  # committed | undone | prepared (unfinished) | rolled_back (failed, nothing changed)
    applied: list[str] = field(default_factory=list)  # the kinds of the actions it applied
    files: int = 0  # files it changed
    model: str | None = None
    undo_of: str | None = None  # set for the run that undid another

    @property
    def undoable(self) -> bool:
        return self.status == "committed" and self.undo_of is None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "undoable": self.undoable}


def run_history(root: Path) -> list[RunEntry]:
    """Every run of ours the state folder holds (signed journals only), oldest first."""
    entries = []
    for view in run_views(root):
        r = view.record
        if r is None:
            continue
        applied = r.info.get("applied")
        entries.append(RunEntry(
            run_id=r.run_id, created=r.created, status=r.status,
            applied=[str(k) for k in applied] if isinstance(applied, list) else [],
            files=len(r.touched), model=r.info.get("model"), undo_of=r.info.get("undo_of"),
        ))
    return sorted(entries, key=lambda e: (e.created, e.run_id))


def state_size(root: Path) -> int | None:
    """Bytes under the store's state folder (files themselves; symlinks are not followed); None when
    the state folder is itself a symlink (the walk would follow it, wherever it leads)."""
    if (root / STATE_DIR).is_symlink():
        return None
    total = 0
    for folder, dirs, files in walk_down(root / STATE_DIR):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total
