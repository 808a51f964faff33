"""One scan of a repository into an index that answers "does this path / symbol exist?".

dream greps the repository once per symbol; on a real repository and a few hundred memories that is
hours. Here the repository is walked once: every relative file path and folder, and every identifier
found in its text files, go into sets. Lookups are then pure set membership.

The scan is I/O and lives only here (`scan_repos`); `RepoIndex` and its lookups are pure.
Memory folders and the consult log are read for paths but not for identifiers: a memory would
otherwise always "find" the symbols it names itself.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .refs import UNINDEXED_DIRS

_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
BINARY_EXTENSIONS = frozenset(
    """png jpg jpeg gif webp ico bmp tiff svgz pdf zip gz tgz bz2 xz 7z tar jar war whl so dylib dll
    exe bin o a class pyc pyo woff woff2 ttf otf eot mp3 mp4 mov avi wav ogg webm sqlite db
    gguf onnx pt pth safetensors npy npz parquet""".split()
)


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


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass
class _Acc:
    prefix: str  # path of this root relative to the walked root, with a trailing "/" ("" for itself)
    files: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)
    identifiers: set[bytes] = field(default_factory=set)
    links: dict[str, str] = field(default_factory=dict)
    complete: bool = True


def _link_target(top: Path, path: Path) -> str | None:
    """A symlinked folder's target relative to `top`, when it is one and stays inside it."""
    if not path.is_symlink():
        return None
    try:
        real = path.resolve(strict=True)
        top_real = top.resolve()
    except (OSError, RuntimeError):
        return None  # dangling or a loop
    if real == top_real or top_real not in real.parents:
        return None
    return real.relative_to(top_real).as_posix()


def _is_text_candidate(name: str) -> bool:
    return name.rsplit(".", 1)[-1].lower() not in BINARY_EXTENSIONS if "." in name else True


def _identifiers_of(path: str, size: int) -> set[bytes] | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(size + 1)
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    return set(_IDENTIFIER.findall(data))


def _under(rel: str, prefix: str) -> bool:
    return prefix == "" or rel == prefix or rel.startswith(prefix + "/")


def _walk(top: Path, roots: list[Path], no_text: set[str], caps: ScanCaps) -> dict[str, RepoIndex]:
    """Walk `top` once, filling the index of `top` and of every root nested inside it."""
    accs = [_Acc(prefix="" if r == top else r.relative_to(top).as_posix() + "/") for r in roots]
    text_bytes = 0
    entries = 0
    stopped = False
    for dirpath, dirnames, filenames in os.walk(top):
        here = Path(dirpath)
        rel_dir = "" if here == top else here.relative_to(top).as_posix()
        dirnames[:] = sorted(d for d in dirnames if d not in UNINDEXED_DIRS)
        skip_text = any(_under(rel_dir, p) for p in no_text)
        for name in dirnames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            target = _link_target(top, here / name)
            for acc in accs:
                if rel.startswith(acc.prefix):
                    acc.dirs.add(rel[len(acc.prefix) :])
                    if target is not None and target.startswith(acc.prefix):
                        acc.links[rel[len(acc.prefix) :]] = target[len(acc.prefix) :]
        for name in sorted(filenames):
            entries += 1
            if entries > caps.max_entries:
                stopped = True
                break
            rel = f"{rel_dir}/{name}" if rel_dir else name
            owners = [acc for acc in accs if rel.startswith(acc.prefix)]
            for acc in owners:
                acc.files.add(rel[len(acc.prefix) :])
            if skip_text or rel in no_text or not _is_text_candidate(name):
                continue
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue  # symlinks (may leave the repository), sockets, devices
            if st.st_size > caps.max_file_bytes:
                continue
            if text_bytes + st.st_size > caps.max_text_bytes:
                for acc in owners:
                    acc.complete = False
                continue
            idents = _identifiers_of(full, st.st_size)
            if idents is None:
                continue
            text_bytes += st.st_size
            for acc in owners:
                acc.identifiers |= idents
        if stopped:
            break
    result = {}
    for root, acc in zip(roots, accs):
        result[str(root)] = RepoIndex(
            root=str(root),
            files=frozenset(acc.files),
            dirs=frozenset(acc.dirs),
            identifiers=frozenset(i.decode("ascii") for i in acc.identifiers),
            complete=acc.complete and not stopped,
            links=tuple(sorted(acc.links.items())),
        )
    return result


def scan_repos(
    roots: Iterable[str | Path], no_text: Iterable[str | Path] = (), caps: ScanCaps = ScanCaps()
) -> dict[str, RepoIndex]:
    """Index every repository root; a root nested inside another is filled from the same walk.

    `no_text`: absolute paths (folders or files) listed but not read for identifiers.
    """
    resolved = sorted({Path(r).resolve() for r in roots})
    excluded = [Path(p).resolve() for p in no_text]
    result: dict[str, RepoIndex] = {}
    for top in resolved:
        if any(other != top and _within(top, other) for other in resolved):
            continue
        nested = [r for r in resolved if _within(r, top)]
        no_text_rel = {p.relative_to(top).as_posix() for p in excluded if _within(p, top) and p != top}
        if any(p == top for p in excluded):
            no_text_rel.add("")
        result.update(scan_tree(top, nested, no_text_rel, caps))
    return result


def scan_tree(top: Path, roots: list[Path], no_text: set[str], caps: ScanCaps) -> dict[str, RepoIndex]:
    """The one walk of a repository (tests count calls to this)."""
    if not top.is_dir():
        return {str(r): RepoIndex(root=str(r), complete=False) for r in roots}
    return _walk(top, roots, no_text, caps)
