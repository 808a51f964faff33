"""dream's report (STEP 6, with ARCHIVED where dream says DELETED), as text.

`dream_report` renders it for the whole run (`.memconsolidate/reports/<run-id>.md`, after the
generic applied/skipped/notes account) or for one memory folder (`.archive/<run-id>/REPORT.md`, next
to what was archived, so a user browsing the folder sees why) from what the writer recorded for
each folder (`FolderChange`) and the decisions. "Flagged for Review" lists the plan's
PARTIALLY_STALE findings, which apply passes in (the writer never re-runs the staleness pass: what
it reports is what the plan showed; a caller without a plan gets no such list). It writes nothing.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from ...actions import StaleFinding
from ...kinds import StaleClass
from ...model import Corpus, Finding
from ...printable import printable
from ...rules.refs import KNOWN_EXTENSIONS
from .decisions import Decisions
from .index_rebuild import NotWritten
from .paths import ARCHIVE_DIR, _in_folder, archive_path, folder_of
from .reader import INDEX
from .uneditable import reported_by_reader

PARTIALLY_STALE = StaleClass.PARTIALLY_STALE
EVERGREEN = StaleClass.EVERGREEN


@dataclass
class FolderChange:
    folder: str
    archived: list[tuple[str, str, str]] = field(default_factory=list)  # (key, dest, reason)
    noted: list[tuple[str, list[str]]] = field(default_factory=list)  # (key, other sides)
    index: str | None = None  # "rebuilt" summary, when MEMORY.md was rewritten
    index_whole: bool = True  # False: only the run's own edits (no rebuild_index/trim_budget applied)
    index_note: NotWritten | None = None  # why it was not rewritten


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _missing_refs(f: Finding) -> str:
    missing = (f.missing if isinstance(f, StaleFinding) else None) or []
    if not missing:
        return _cell(f.reason)
    shown = []
    for ref in missing:
        is_file = "/" in ref or ref.rsplit(".", 1)[-1] in KNOWN_EXTENSIONS
        shown.append(f"`{ref}` no longer exists" if is_file else f"symbol `{ref}` not found")
    return _cell("; ".join(shown))


def dream_report(
    corpus: Corpus,
    run_id: str,
    now: dt.date,
    changed: list[FolderChange],
    stale: dict[str, Finding],
    archived: set[str],
    d: Decisions,
    scope: str | None,
) -> str:
    """dream's consolidation report for the whole run (`scope` None) or for one memory folder."""

    def mine(key: str) -> bool:
        return scope is None or folder_of(key) == scope

    def shown(key: str) -> str:
        # Inside a folder's own report, paths are relative to that folder.
        if scope is None or scope == ".":
            return key
        return key[len(scope) + 1 :] if key.startswith(scope + "/") else key

    memories = [m for m in corpus.memories if mine(m.key)]
    reported = reported_by_reader(corpus)
    unreadable = sorted(t for t in reported if mine(t))
    classes = Counter(stale[m.key].class_ for m in memories if m.key in stale)
    reasons: Counter[str] = Counter()
    for fc in changed:
        for key, _, _ in fc.archived:
            reasons[_kind_of(d.retire[key])] += 1
    folders = [f for f in corpus.extra.get("memory_folders", [])]
    n_folders = 1 if scope is not None else len(folders)
    title = "## Dream Consolidation Report" + (f" — {scope}" if scope is not None else "")
    lines = [
        title,
        "",
        f"memconsolidate run {run_id}, {now.isoformat()}. Nothing was deleted: archived files are in "
        f"`{ARCHIVE_DIR}/{run_id}/` beside their MEMORY.md.",
        "",
        "| Metric | Count |",
        "|--------|-------|",
        f"| Memory directories scanned | {n_folders} |",
        f"| Total memory files scanned | {len(memories) + len(unreadable)} |",
        f"| Unreadable files (left untouched) | {len(unreadable)} |",
        f"| Stale entries pruned (archived) | {reasons['stale']} |",
        f"| Duplicates merged (archived) | {reasons['duplicate']} |",
        f"| Consolidated (archived) | {reasons['consolidated']} |",
        f"| Contradictions resolved | {sum(1 for f in d.resolved if mine(_in_folder(f, INDEX)))} |",
        f"| Partially stale (kept, flagged) | {classes[PARTIALLY_STALE]} |",
        f"| Evergreen (no external refs) | {classes[EVERGREEN]} |",
        f"| Surviving memories | {len([m for m in memories if m.key not in archived])} |",
        f"| MEMORY.md indexes rebuilt | {sum(1 for fc in changed if fc.index and fc.index_whole)} |",
        f"| MEMORY.md indexes edited (this run's entries only) | {sum(1 for fc in changed if fc.index and not fc.index_whole)} |",
        "",
        "### Changes Made",
        "",
        "| File | Action | Reason |",
        "|------|--------|--------|",
    ]
    rows = []
    for fc in changed:
        for key, dest, reason in fc.archived:
            rows.append((key, f"| `{shown(key)}` | ARCHIVED to `{shown(dest)}` | {_cell(reason)} |"))
        for key, others in fc.noted:
            rows.append((key, f"| `{shown(key)}` | NOTED | {_cell('conflicts with ' + ', '.join(others) + ' — kept both')} |"))
        index_key = _in_folder(fc.folder, INDEX)
        if fc.index:
            done = "REBUILT" if fc.index_whole else "EDITED"
            rows.append((index_key, f"| `{shown(index_key)}` | {done} | {_cell(fc.index)}; old copy in `{shown(archive_path(fc.folder, run_id, INDEX))}` |"))
        elif fc.index_note is not None and not fc.index_note.up_to_date:
            rows.append((index_key, f"| `{shown(index_key)}` | NOT REBUILT | {_cell(fc.index_note.reason)} |"))
    lines.extend(row for _, row in sorted(rows))
    if not rows:
        lines.append("| — | — | nothing changed |")
    flagged = sorted(
        (k, f) for k, f in stale.items() if mine(k) and k not in archived and f.class_ == PARTIALLY_STALE
    )
    lines += ["", "### Flagged for Review (PARTIALLY_STALE)", ""]
    if flagged:
        lines += ["| File | Missing References | Kept because |", "|------|-------------------|--------------|"]
        for key, f in flagged:
            kept = (f.kept_reason if isinstance(f, StaleFinding) else None) or "some references still resolve"
            lines.append(f"| `{shown(key)}` | {_missing_refs(f)} | {_cell(kept)} |")
    else:
        lines.append("None.")
    if unreadable:
        lines += ["", "### Unreadable (left untouched)", ""]
        lines += [f"- `{shown(k)}`: {_cell(reported[k])}" for k in unreadable]
    return "\n".join(printable(line) for line in lines) + "\n"


def _kind_of(reason: str) -> str:
    if reason.startswith("duplicate of"):
        return "duplicate"
    if reason.startswith("contradicted by"):
        return "conflict"
    if reason.startswith("consolidated into"):  # decisions._consolidate: its members are not stale
        return "consolidated"
    return "stale"
