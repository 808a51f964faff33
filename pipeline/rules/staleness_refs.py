"""What one file reference's absence means, and the `update_ref` edit for one that moved (issue 11, items 8-9).

Pure: a `RepoIndex` (today's tree) and an optional `GitHistory` (everything the tree ever held) in,
a verdict out. A ref is only ever MISSING when it was anchored in this repository and, when there is
history, history shows it once existed here.

Only git's own rename records make a ref MOVED. Where they lead to a path deleted since, the ref is
MISSING (history knows what became of it). A file that merely shares the ref's name elsewhere is a
hint (SAME_NAME), never a move: a project may hold two unrelated `developer.md`. It counts as
missing, and its `update_ref` says what it is, a file of the same name, for the user to judge.
The name looked for is the one the file last had: the ref's own for a file deleted without a
rename, the last path's of its chain of renames for one renamed and then deleted (a move git could
not see, such as a rewrite into another folder, ends a chain the same way). A file of that name
git records as renamed from another path is that other file, no hint (specrails-core's
`templates/agents/sr-developer.md`, renamed from the template `developer.md`, is not the deleted
`.claude/agents/sr-developer.md` generated from it).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ..actions import UpdateRefAction
from ..model import Memory
from .repo_index import RepoIndex, glob_regex
from .staleness_history import GitHistory

PRESENT = "present"
MISSING = "missing"
MOVED = "moved"
NEVER = "never"  # never in this repository's history: unverifiable, not missing
SAME_NAME = "same_name"  # deleted, no rename recorded; one file of the same name elsewhere: a hint


class RefStatus(NamedTuple):
    verdict: str  # PRESENT, MISSING, MOVED, NEVER or SAME_NAME
    # MOVED: where git's renames lead; SAME_NAME: the one file of the same name; MISSING: where git's
    # renames led before that path was deleted too ("" when it was simply deleted)
    where: str = ""
    # SAME_NAME only: where git's renames led before that path was deleted ("" when the ref itself
    # was deleted without a rename)
    renamed: str = ""


# "the Haskell cardano-node codebase", "(another repository)", "repo `other-thing`": the memory
# describes a codebase that is not this one, so its bare names and relative paths are not ours.
_OTHER_PROJECT = re.compile(
    r"\b(?:another|other|different|external|separate|upstream|third-party)\s+(?:project|repo|repository|codebase)s?\b",
    re.IGNORECASE,
)
_NAMED_CODEBASE = re.compile(r"\bthe\s+(?:[A-Za-z]+\s+)?`?([\w]+(?:[.-][\w]+)+)`?\s+(?:codebase|repository|repo|source tree)\b", re.IGNORECASE)
_REPO_NAMED = re.compile(r"\brepo(?:sitory)?\s+`([\w.-]+)`", re.IGNORECASE)
# An absolute or home path in prose (`/Users/me/code/other`, `~/src/thing`): somewhere else on a disk.
_ABSOLUTE = re.compile(r"(?:(?<=[\s`'\"(\[])|^)(~/|/(?:Users|home|opt|srv|var|mnt|workspace|root|tmp|usr)/)[\w.@+-]+", re.MULTILINE)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)


def names_other_project(text: str, repo_root: str | None) -> str | None:
    """Why this memory is about another project or place (a phrase for the reason), or None."""
    text = _URL.sub(" ", text)
    own = (repo_root or "").rstrip("/")
    own_name = own.rsplit("/", 1)[-1].lower()
    for m in _ABSOLUTE.finditer(text):
        start = m.start(1)
        end = text.find(" ", start)
        path = text[start: end if end >= 0 else len(text)].strip("`'\").,;:")
        if own and (path == own or path.startswith(own + "/")):
            continue
        return f"names a path outside the repository ({path})"
    other = _OTHER_PROJECT.search(text)
    if other:
        return f"names another project ({other.group(0)!r})"
    for pattern in (_NAMED_CODEBASE, _REPO_NAMED):
        for m in pattern.finditer(text):
            name = m.group(1).lower()
            if name != own_name and not own_name.startswith(name) and not name.startswith(own_name or "\x00"):
                return f"names another project ({m.group(0)!r})"
    return None


def ref_status(ref: str, index: RepoIndex, history: GitHistory | None) -> RefStatus:
    """The verdict on one repo-anchored ref, and the path it points to (see RefStatus)."""
    if index.has_path(ref):
        return RefStatus(PRESENT)
    if history is None:
        return RefStatus(MISSING)  # nothing tells deleted from never-there: the prune then needs the user
    path = ref.rstrip("/")
    if any(c in path for c in "*?["):
        pattern = glob_regex(path)
        return RefStatus(MISSING) if any(pattern.match(p) for p in history.ever) else RefStatus(NEVER)
    if "/" not in ref:
        return RefStatus(MISSING) if history.existed_name(path) else RefStatus(NEVER)
    if not history.existed(path):
        return RefStatus(NEVER)
    if ref.endswith("/") or path in history.ever_dirs:
        target = history.folder_renamed_to(path)
        if target is None:
            return RefStatus(MISSING)
        return RefStatus(MOVED, target + "/") if index.has_path(target + "/") else RefStatus(MISSING, target + "/")
    renamed = history.renamed_to(path)
    if renamed is None:
        return _same_name(path, index, history)
    if index.has_path(renamed):
        return RefStatus(MOVED, renamed)
    # Git recorded where the file went, and that path was deleted since: the file's name there
    # decides the hint (not the ref's, which an unrelated file added on its own may bear).
    hint = _same_name(renamed, index, history)
    return hint._replace(renamed=renamed) if hint.verdict == SAME_NAME else RefStatus(MISSING, renamed)


def _same_name(path: str, index: RepoIndex, history: GitHistory) -> RefStatus:
    """`path` deleted, git saw no rename of it: one file of its (uncommon) name elsewhere is a hint,
    unless git records that file as another one renamed."""
    name = path.rsplit("/", 1)[-1]
    elsewhere = index.paths_named(name)
    if len(elsewhere) == 1 and not generic_name(name) and not history.came_by_rename(elsewhere[0]):
        return RefStatus(SAME_NAME, elsewhere[0])
    return RefStatus(MISSING)


# File names every project has many of: one elsewhere says nothing about where this one went.
_GENERIC_STEMS = frozenset(
    """readme index main mod lib __init__ init app utils util types config setup test tests package
    makefile dockerfile license changelog contributing layout page route routes server client api
    constants helpers styles settings schema models handler handlers""".split()
)


def generic_name(name: str) -> bool:
    return name.split(".", 1)[0].lower() in _GENERIC_STEMS


_WORDISH = re.compile(r"[\w/-]")


def _occurrences(text: str, ref: str) -> list[int]:
    """Offsets where `ref` stands as a whole path (optionally after `./`), not inside a longer one."""
    out = []
    start = text.find(ref)
    while start >= 0:
        end = start + len(ref)
        before = text[:start]
        if before.endswith("./"):
            before = before[:-2]
        ok_before = not before or not (_WORDISH.match(before[-1]) or before[-1] == ".")
        after = text[end:end + 2]
        ok_after = not after or not (_WORDISH.match(after[0]) or (after[0] == "." and len(after) > 1 and after[1].isalnum()))
        if ok_before and ok_after:
            out.append(start)
        start = text.find(ref, start + 1)
    return out


def ref_replacements(m: Memory, moved: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """The shared in-place edit payload: every whole occurrence of a moved ref, in description and body."""
    edits: list[dict[str, Any]] = []
    for field in ("description", "body"):
        text = getattr(m, field)
        for old, new in moved:
            for start in _occurrences(text, old):
                edits.append({"field": field, "start": start, "end": start + len(old), "before": old, "after": new})
    edits.sort(key=lambda e: (e["field"], e["start"]))
    return edits


class SameName(NamedTuple):
    """A missing ref whose only lead is the one file bearing, today, the name it last had."""

    ref: str  # as the memory writes it
    at: str  # the file of the same name
    renamed: str = ""  # where git's renames took it before that path was deleted; "" when never renamed

    def fate(self) -> str:
        """What git's history says became of the file."""
        if self.renamed:
            return f"renamed to {self.renamed}, since deleted"
        return "deleted, with no rename in this repository's history"

    def lead(self) -> str:
        return f"a file of the same name exists at {self.at}"


def ref_leads(moved: tuple[tuple[str, str], ...] = (), same_name: tuple[SameName, ...] = ()) -> dict[str, list[dict[str, str]]]:
    """The `moved` (`{"ref", "to"}`) and `same_name` (`{"ref", "at"}`) fields, the empty ones left
    out: a `stale` finding and the `update_ref` proposals made from it carry them alike."""
    leads: dict[str, list[dict[str, str]]] = {}
    if moved:
        leads["moved"] = [{"ref": old, "to": new} for old, new in moved]
    if same_name:
        leads["same_name"] = [{"ref": h.ref, "at": h.at} for h in same_name]
    return leads


def _edit_refs(m: Memory, refs: tuple[tuple[str, str], ...], reason: str, leads: dict[str, Any]) -> UpdateRefAction | None:
    """An `update_ref` the user approves putting each (old, new) of `refs` in, or None when the
    memory's text holds none of them."""
    replacements = ref_replacements(m, refs)
    if not replacements:
        return None
    return UpdateRefAction(targets=[m.key], reason=reason, needs_user=True, replacements=replacements, **leads)


def update_ref_action(m: Memory, moved: tuple[tuple[str, str], ...]) -> UpdateRefAction | None:
    """Point a memory's moved refs at where git's renames took the files: an edit the user approves, never a prune."""
    shown = ", ".join(f"{old} -> {new}" for old, new in moved)
    return _edit_refs(m, moved, f"moved in this repository's history: {shown}", ref_leads(moved=moved))


def same_name_action(m: Memory, hints: tuple[SameName, ...]) -> UpdateRefAction | None:
    """A separate proposal for refs whose only lead is a file of the same name: approving a recorded
    rename must never approve a guess with it, and the reason says exactly what the lead is."""
    shown = "; ".join(f"{h.ref}: {h.fate()}; {h.lead()}" for h in hints)
    return _edit_refs(m, tuple((h.ref, h.at) for h in hints), shown, ref_leads(same_name=hints))
