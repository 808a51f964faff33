"""In-place text edits of a crux memory (`absolutize_dates`, `update_ref`): the memory and its twin
change together or not at all.

Fields: `body` is the live file's body, `twin_body` the twin's, `description` the live file's
front-matter description, and the twin's as well when it says the same (so the pair keeps
agreeing). The edits are recorded on the `Live` and written with its other changes
(`Run.edited`: replacements first, on the text as read, then front-matter keys, then notes).
"""

from __future__ import annotations

from ...model import Action
from ...storage.files import Unreadable, split_frontmatter
from ...storage.text_edits import EditRefused, Fields, merged, only_fields, replacements_of
from .state import Live, Run


def _description(run: Run, path: str) -> str | None:
    value = split_frontmatter(run.text_of(path)[0]).meta.get("description")
    return value.strip() if isinstance(value, str) else None


def _by_file(run: Run, live: Live, edits: Fields) -> dict[str, Fields]:
    only_fields(edits, {"body": 1, "description": 1, **({"twin_body": 1} if live.twin else {})}, live.path)
    files: dict[str, Fields] = {live.path: {k: v for k, v in edits.items() if k in ("body", "description")}}
    if live.twin:
        twin: Fields = {"body": edits["twin_body"]} if "twin_body" in edits else {}
        if "description" in edits and _description(run, live.twin) == _description(run, live.path):
            twin["description"] = edits["description"]
        files[live.twin] = twin
    return {f: e for f, e in files.items() if e}


def text_edit(run: Run, a: Action) -> None:
    """Record the action's replacements on its memory, after checking both files take them."""
    live = run.resolve(a.targets[0]) if len(a.targets) == 1 else "a text edit names exactly one memory"
    if isinstance(live, str):
        return run.skip(a, live)
    if live.retired_by:
        return run.skip(a, f"archived by {live.retired_by} in this run")
    if live.moved_by == "compress" or live.m.extra.get("created_by"):
        return run.skip(a, "its text was rewritten by an earlier action of this run: the next plan judges it again")
    try:
        edits = _by_file(run, live, replacements_of(a))
        combined = {f: merged(live.text_edits.get(f, {}), e) for f, e in edits.items()}
        for f, e in combined.items():  # every file takes them, or none is edited
            run.edited(f, live.updates, live.notes, e)
    except (EditRefused, Unreadable, UnicodeDecodeError, ValueError) as exc:
        return run.skip(a, str(exc))
    live.text_edits.update(combined)
    run.applied(a)
