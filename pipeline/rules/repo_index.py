"""One scan of a repository into an index that answers "does this path / symbol exist?".

dream greps the repository once per symbol; on a real repository and a few hundred memories that is
hours. Here the repository is walked once: every relative file path and folder, and every identifier
found in its text files, go into sets. Lookups are then pure set membership.

`RepoIndex` and its lookups are pure; the scan that fills it is I/O and lives in
`pipeline/evidence/repo_scan.py`, run once by the plan before the rules.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

@dataclass(frozen=True)
class ScanCaps:
    max_file_bytes: int = 1024 * 1024  # larger files are listed but their text is not read
    max_text_bytes: int = 256 * 1024 * 1024  # total text read per repository
    max_entries: int = 1_000_000  # files and folders listed per repository


@dataclass(frozen=True)
class RepoIndex:
    root: str
    files: frozenset[str] = frozenset()
    dirs: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()
    # False when a cap stopped the scan: then "not found" proves nothing and nothing counts as missing.
    complete: bool = True
    # In-repository symlinks (link path -> target path, both repo-relative): a ref through one resolves.
    links: tuple[tuple[str, str], ...] = ()
    top_dirs: frozenset[str] = field(init=False)
    basenames: frozenset[str] = field(init=False)
    # One answer per glob pattern: 400 glob refs on a 100k-file tree must not walk it 400 times.
    _globs: dict[str, bool] = field(init=False, repr=False, compare=False)
    _by_name: dict[str, list[str]] | None = field(init=False, repr=False, compare=False)
    _sorted: list[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "top_dirs", frozenset(d for d in self.dirs if "/" not in d))
        names = {p.rsplit("/", 1)[-1] for p in self.files} | {d.rsplit("/", 1)[-1] for d in self.dirs}
        object.__setattr__(self, "basenames", frozenset(names))
        object.__setattr__(self, "_globs", {})
        object.__setattr__(self, "_by_name", None)
        object.__setattr__(self, "_sorted", None)

    def paths_named(self, name: str) -> list[str]:
        """Every file whose last segment is `name`, sorted (built once, on first use)."""
        if self._by_name is None:
            by_name: dict[str, list[str]] = {}
            for p in sorted(self.files):
                by_name.setdefault(p.rsplit("/", 1)[-1], []).append(p)
            object.__setattr__(self, "_by_name", by_name)
        assert self._by_name is not None
        return list(self._by_name.get(name, []))

    def has_path(self, ref: str) -> bool:
        """A repo-relative path, folder (trailing `/`), glob, or bare file name exists."""
        path = ref.rstrip("/")
        if not path:
            return False
        if any(c in path for c in "*?["):
            if path not in self._globs:
                self._globs[path] = self._glob_matches(path)
            return self._globs[path]
        if "/" not in ref:
            return path in self.basenames
        if ref.endswith("/"):
            return path in self.dirs or self.resolve_link(path) in self.dirs
        return path in self.files or path in self.dirs or self._through_link(path)

    def _glob_matches(self, path: str) -> bool:
        """Match one pattern against the paths sharing its literal prefix (the tree is sorted once)."""
        if self._sorted is None:
            object.__setattr__(self, "_sorted", sorted(self.files | self.dirs))
        paths: list[str] = self._sorted or []
        cut = min(path.find(c) for c in "*?[" if c in path)
        prefix = path[:cut]
        pattern = glob_regex(path)
        lo = bisect.bisect_left(paths, prefix)
        for p in itertools.islice(paths, lo, None):
            if not p.startswith(prefix):
                return False
            if pattern.match(p):
                return True
        return False

    def resolve_link(self, path: str) -> str:
        """`path` with its longest symlinked folder prefix replaced by the link's target (once per hop)."""
        links = dict(self.links)
        for _hop in range(8):  # a bounded number of hops: a cycle of links never loops
            parts = path.split("/")
            for i in range(len(parts), 0, -1):
                prefix = "/".join(parts[:i])
                if prefix in links:
                    path = "/".join([links[prefix], *parts[i:]]).strip("/")
                    break
            else:
                return path
        return path

    def _through_link(self, path: str) -> bool:
        if not self.links:
            return False
        real = self.resolve_link(path)
        return real != path and (real in self.files or real in self.dirs)

    def has_symbol(self, name: str) -> bool:
        return name in self.identifiers


def glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)))
        i += 1
    return re.compile("".join(out) + r"\Z")
