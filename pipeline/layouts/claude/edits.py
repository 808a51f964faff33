"""In-place text edits of claude topic files (`absolutize_dates`, `update_ref`).

`body` is the text after the front matter, `description` the front-matter description (edited
through `set_keys`, so the other keys and the body stay). The front matter is read as the reader
reads it, YAML else `key: value` lines (`description: a: b`): the body of such a file is edited like
any other, its description only on its one line, in place (never rendered through YAML). A file gets one write per run: a note the
run appends (`--resolve keep-both`) and its replacements land in the same op, built on the bytes
as read. A file this run archives, an unreadable file or a symlink is never edited.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Collection, Mapping

from ...journal import Op
from ...model import Action, Memory
from ...storage.files import Unreadable
from ...storage.since_plan import DiskReads
from ...storage.text_edits import TEXT_EDIT_KINDS, EditRefused, Fields, edit_bytes, fold_write, merged, only_fields, replacements_of


def _problem(key: str, by_key: Mapping[str, Memory], unreadable: Collection[str], retired: Collection[str], root: Path) -> str | None:
    if key in unreadable:
        return f"{key}: unreadable file: left untouched"
    if key not in by_key:
        return f"{key}: not a memory file of this store"
    if (root / key).is_symlink():
        return f"{key}: a symlink: left untouched"
    if key in retired:
        return f"{key} is archived by another action of this run"
    return None


def apply_text_edits(
    actions: list[Action], by_key: Mapping[str, Memory], unreadable: Collection[str], retired: Collection[str],
    root: Path, disk: DiskReads, ops: list[Op],
) -> dict[int, str | None]:
    """Outcome by action index (None: applied) of every text-edit action; writes folded into `ops`."""
    outcome: dict[int, str | None] = {}
    pending: dict[str, Fields] = {}
    for i, a in enumerate(actions):
        if a.kind not in TEXT_EDIT_KINDS:
            continue
        key = a.targets[0] if len(a.targets) == 1 else ""
        why = _problem(key, by_key, unreadable, retired, root) if key else "a text edit names exactly one memory"
        if why is None:
            try:
                edits = merged(pending.get(key, {}), replacements_of(a))
                only_fields(edits, {"body": 1, "description": 1}, key)
                data = disk.bytes(key)
                if data is None:
                    raise EditRefused(f"{key} is gone")
                edit_bytes(data, edits, True, key, lenient=True)  # it takes them all, or the action is skipped
                pending[key] = edits
            except (EditRefused, Unreadable) as exc:
                why = str(exc)
        outcome[i] = why
    for key in sorted(pending):
        data = disk.bytes(key)
        assert data is not None
        fold_write(ops, key, data, partial(_edit, edits=pending[key], key=key))
    return outcome


def _edit(data: bytes, edits: Fields, key: str) -> bytes:
    return edit_bytes(data, edits, True, key, lenient=True)
