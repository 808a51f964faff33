"""A repository's git history, read once per run, so staleness can tell deleted from moved from never-there.

A file a memory names that is absent today means three different things (issue 11, item 9):

- it existed and was deleted: missing (the memory may be stale);
- it was renamed or moved (git's rename detection, followed through a chain of renames, to a path
  that exists today): moved, an `update_ref` proposal, never a prune; renamed to a path since
  deleted, it is gone: missing. A deleted file whose last name merely lives at one other path
  today is no move, only a hint for the user (`staleness_refs.SAME_NAME`);
- it never existed in this repository: the memory is about some other codebase, unverifiable.

Without history none of that can be told, so the rule never prunes on its own then.

`GitHistory`, `parse_log` and the lookups are pure; the read (`read_history`, one read-only `git log`
per repository) is in `pipeline/evidence/git_history.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

_STATUS_LETTERS = frozenset("ACDMRTUXB")


@dataclass(frozen=True)
class GitHistory:
    """Every path the repository's history (HEAD) ever held, and where renamed ones went."""

    ever: frozenset[str] = frozenset()  # repo-relative files that existed in some commit
    renames: tuple[tuple[str, str], ...] = ()  # (old, new) in the order git reported them (newest first)
    ever_dirs: frozenset[str] = field(init=False)
    _rename_map: dict[str, str] = field(init=False, repr=False, compare=False)
    _renamed_into: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        dirs: set[str] = set()
        for p in self.ever:
            parts = p.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:i]))
        object.__setattr__(self, "ever_dirs", frozenset(dirs))
        mapping: dict[str, str] = {}
        for old, new in reversed(self.renames):  # oldest first: a later rename of `new` wins
            mapping[old] = new
        object.__setattr__(self, "_rename_map", mapping)
        object.__setattr__(self, "_renamed_into", frozenset(new for _, new in self.renames))

    def existed(self, path: str) -> bool:
        return path in self.ever or path in self.ever_dirs

    def existed_name(self, name: str) -> bool:
        """A bare file name that some path in history ended with."""
        return any(p.rsplit("/", 1)[-1] == name for p in self.ever)

    def renamed_to(self, path: str) -> str | None:
        """Where git's rename detection says `path` went, following a chain of renames."""
        seen = {path}
        current = self._rename_map.get(path)
        while current is not None and current in self._rename_map and current not in seen:
            seen.add(current)
            current = self._rename_map[current]
        return current

    def came_by_rename(self, path: str) -> bool:
        """Git recorded `path` as where some file was renamed to: it is that file."""
        return path in self._renamed_into

    def folder_renamed_to(self, folder: str) -> str | None:
        """The one folder every renamed file of `folder` went to, if there is exactly one."""
        prefix = folder.rstrip("/") + "/"
        targets = set()
        for old, new in self.renames:
            if old.startswith(prefix):
                rest = old[len(prefix):]
                if new.endswith("/" + rest):
                    targets.add(new[: -len(rest) - 1])
                else:
                    return None
        return targets.pop() if len(targets) == 1 else None


def parse_log(raw: bytes) -> GitHistory:
    """`git log -z --name-status -M --format=%x01%H` output into a GitHistory."""
    ever: set[str] = set()
    renames: list[tuple[str, str]] = []
    tokens = [t.decode("utf-8", "surrogateescape") for t in raw.split(b"\x00")]
    i = 0
    while i < len(tokens):
        tok = tokens[i].lstrip("\n")
        i += 1
        if not tok or tok.startswith("\x01"):
            continue
        letter, score = tok[0], tok[1:]
        if letter not in _STATUS_LETTERS or (score and not score.isdigit()):
            continue
        if letter in "RC":
            old = tokens[i] if i < len(tokens) else ""
            new = tokens[i + 1] if i + 1 < len(tokens) else ""
            i += 2
            ever.update(p for p in (old, new) if p)
            if letter == "R" and old and new:
                renames.append((old, new))
            continue
        path = tokens[i] if i < len(tokens) else ""
        i += 1
        if path:
            ever.add(path)
    return GitHistory(ever=frozenset(ever), renames=tuple(renames))
