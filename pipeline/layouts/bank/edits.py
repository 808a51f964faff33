"""In-place text edits of bank records (`absolutize_dates`, `update_ref`), the bank's way: never a
rewrite of history. The replaced text goes into a new revision of the same id (appended, the
revision number one higher, `updated_at` the run's date); the revision it replaces stays in the
file, below it in order, so undo is the journal cutting the append and the history keeps both.

`body` is the record's `text`; offsets are into the text as the plan read it (every edit of one
record in this run is put in together, on that text).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from ...changes import ChangeSet
from ...model import Action
from ...storage.text_edits import EditRefused, Fields, merged, only_fields, replace_in, replacements_of


class Bank(Protocol):
    records: dict[str, dict[str, Any]]

    def live(self, rid: str) -> bool: ...

    def revise(self, rid: str, **changes: Any) -> None: ...


def text_edit(action: Action, bank_of: Callable[[str], Bank], pending: dict[str, Fields], out: ChangeSet) -> None:
    try:
        if len(action.targets) != 1 or "/" not in action.targets[0]:
            raise EditRefused("a text edit names exactly one record, as <bank>/<id>")
        key = action.targets[0]
        name, _, rid = key.partition("/")
        bank = bank_of(name)
        if not bank.live(rid):
            raise EditRefused(f"{key} is no longer live (superseded or invalid)")
        read = bank.records.get(rid, {}).get("text")
        if not isinstance(read, str):
            raise EditRefused(f"{key} has no text")
        edits = merged(pending.get(key, {}), replacements_of(action))
        only_fields(edits, {"body": 1}, key)
        text = replace_in(read, edits["body"], key)
    except EditRefused as exc:
        out.skipped.append((action, str(exc)))
        return
    pending[key] = edits
    bank.revise(rid, text=text)
    out.applied.append(action)
