"""How a claude consolidation names its new file: the way its members are named, when they agree.

Real folders keep conventions a consolidation must not break. siglens names every memory by its
file name (`name: project-i18n-multilingual-r1` in `project-i18n-multilingual-r1.md`) and links
them by it (`[[project-i18n-multilingual-r1]]`); webeverything numbers its files (`105-feedback_
claim_ignores_git_state.md`, named `feedback_claim_ignores_git_state`), a number its scripts resolve,
and nests the type (`metadata: {type: feedback}`). A new file named "I18n multilingual" in
`i18n_multilingual.md`, with a top-level `type:`, would be the one memory of its folder that its
links and scripts cannot find. When every member follows one rule, the new file follows it too; when
they do not agree (names in Title Case, some files numbered), the new file is named from its title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...model import Memory
from ...rules.link_names import file_parts

@dataclass(frozen=True)
class Convention:
    """What the members of one consolidation share in how they are named and typed."""

    sep: str  # the separator of words in their file names: "-" or "_"
    type_prefix: str  # every file name starts with "<type><sep>": that text, else ""
    numbered: bool  # every file name is "<number>-<rest>"
    nested: dict[str, Any] | None  # the `metadata:` block they share (with `type`), when the type is nested
    width: int = 0  # the digits every member's number is zero-padded to ("007", "012": 3), else 0


def convention_of(members: list[Memory]) -> Convention | None:
    """The members' naming rule, or None when they do not all name themselves by their file name."""
    parts = [file_parts(m.key) for m in members]
    if not members or any(m.title.strip() != rest for m, (_, rest) in zip(members, parts)):
        return None
    rests = [rest for _, rest in parts]
    sep = separator_of(rests)
    type_ = members[0].type or ""
    prefix = f"{type_}{sep}" if type_ and all(r.startswith(f"{type_}{sep}") for r in rests) else ""
    numbers = [number for number, _ in parts if number is not None]
    numbered = len(numbers) == len(parts)
    widths = {len(n) for n in numbers}
    width = widths.pop() if numbered and len(widths) == 1 and any(n.startswith("0") for n in numbers) else 0
    return Convention(sep, prefix, numbered, _shared_metadata(members), width)


def separator_of(stems: list[str]) -> str:
    """The separator of words the file names use most: "-" (kebab-case) or "_" (snake_case, the
    default of Claude Code's own memory files, and the choice on a tie)."""
    dashes, underscores = sum(s.count("-") for s in stems), sum(s.count("_") for s in stems)
    return "-" if dashes > underscores else "_"


def file_separator(members: list[Memory]) -> str:
    """`separator_of` the members' file names (without their numbers): a new file named from its
    title, when the members' names are not their file names, still spells its file name as theirs
    (`ledger-snapshot-format.md` beside `ext-ledger-state-snapshot-format.md`)."""
    return separator_of([file_parts(m.key)[1] for m in members])


def _shared_metadata(members: list[Memory]) -> dict[str, Any] | None:
    """The nested `metadata:` keys every member has with the same value (type among them), when
    every member nests its type there and none has a top-level one; else None."""
    blocks = [m.meta.get("metadata") for m in members]
    if any(not isinstance(b, dict) or "type" not in b or "type" in m.meta for b, m in zip(blocks, members)):
        return None
    first: dict[str, Any] = blocks[0]  # type: ignore[assignment]  # checked just above
    return {k: v for k, v in first.items() if all(isinstance(b, dict) and k in b and b[k] == v for b in blocks)}


def stem_for(convention: Convention, slug: str) -> str:
    """The new file's name without number or `.md`, and so its `name`, from a slug of its title."""
    words = slug.replace("-", convention.sep).replace("_", convention.sep)
    return f"{convention.type_prefix}{words}" if convention.type_prefix and not words.startswith(convention.type_prefix) else words


# A file named by its date (`2026-01-05-standup.md`) is not numbered: its year is no file number.
_DATED = re.compile(r"\d{4}-\d{2}-\d{2}\b")


def next_number(keys: list[str], folder: str, archived: list[str] | tuple[str, ...] = ()) -> int:
    """One more than the highest file number in the folder, counting the files earlier runs
    archived there (`archived`: their names), whose undo would bring their numbers back."""
    prefix = "" if folder == "." else f"{folder}/"
    names = [k[len(prefix):] for k in keys if k.startswith(prefix) and "/" not in k[len(prefix):]] + list(archived)
    numbers = [int(number) for name in names if not _DATED.match(name) if (number := file_parts(name)[0]) is not None]
    return max(numbers, default=0) + 1
