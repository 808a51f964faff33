"""In-place text edits of claude topic files (`absolutize_dates`, `update_ref`).

`body` is the text after the front matter, `description` the front-matter description (edited
through `set_keys`, so the other keys and the body stay). The front matter is read as the reader
reads it, YAML else `key: value` lines (`description: a: b`): the body of such a file is edited like
any other, its description only on its one line, in place (never rendered through YAML). A file gets one write per run: a note the
run appends (`--resolve keep-both`) and its replacements land in the same op, built on the bytes
as read. A file this run archives, an unreadable file or a symlink is never edited (`uneditable.memory_left`).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Collection

from ...journal import Op
from ...model import Action
from ...storage.files import Unreadable
from ...storage.since_plan import DiskReads
from ...storage.text_edits import TEXT_EDIT_KINDS, EditRefused, Fields, edit_bytes, fold_write, merged, only_fields, replacements_of


def apply_text_edits(
    actions: list[Action], unmovable: Callable[[str], str | None], retired: Collection[str], disk: DiskReads, ops: list[Op],
) -> dict[int, str | None]:
    """Outcome by action index (None: applied) of every text-edit action; writes folded into `ops`.
    `unmovable`: why a memory is never edited (`uneditable.memory_left`, which the plan asks too)."""
    outcome: dict[int, str | None] = {}
    pending: dict[str, Fields] = {}
    for i, a in enumerate(actions):
        if a.kind not in TEXT_EDIT_KINDS:
            continue
        key = a.targets[0] if len(a.targets) == 1 else ""
        why = _problem(key, unmovable, retired) if key else "a text edit names exactly one memory"
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


def _problem(key: str, unmovable: Callable[[str], str | None], retired: Collection[str]) -> str | None:
    if (why := unmovable(key)) is not None:
        return f"{key}: {why}"
    if key in retired:
        return f"{key} is archived by another action of this run"
    return None


def _edit(data: bytes, edits: Fields, key: str) -> bytes:
    return edit_bytes(data, edits, True, key, lenient=True)
