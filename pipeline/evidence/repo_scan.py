"""The one walk of a repository that fills a `RepoIndex` (see `pipeline/rules/repo_index.py`).

Memory folders (the store's, and any `.claude/` tree or folder holding a MEMORY.md in the
repository) and the consult log are read for paths but not for identifiers: a memory would otherwise
always "find" the symbols it names itself, in its own copy.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..rules.refs import UNINDEXED_DIRS
from ..storage.walk import walk_down
from ..rules.repo_index import RepoIndex, ScanCaps

_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
BINARY_EXTENSIONS = frozenset(
    """png jpg jpeg gif webp ico bmp tiff svgz pdf zip gz tgz bz2 xz 7z tar jar war whl so dylib dll
    exe bin o a class pyc pyo woff woff2 ttf otf eot mp3 mp4 mov avi wav ogg webm sqlite db
    gguf onnx pt pth safetensors npy npz parquet""".split()
)


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
    memory_dirs: list[str] = []  # folders holding a MEMORY.md (relative to `top`)
    for dirpath, dirnames, filenames in walk_down(top):
        here = Path(dirpath)
        rel_dir = "" if here == top else here.relative_to(top).as_posix()
        dirnames[:] = sorted(d for d in dirnames if d not in UNINDEXED_DIRS)
        # Memories are no code: the store's own folders, and any agent's memory kept in the repository
        # (a `.claude/` tree, a folder holding a MEMORY.md), whose copy of a memory would otherwise
        # "find" every symbol that memory names.
        if "MEMORY.md" in filenames and rel_dir:  # (one at the top is the project's own document)
            memory_dirs.append(rel_dir)  # walked top-down: its sub-folders come after it
        skip_text = (any(_under(rel_dir, p) for p in no_text) or ".claude" in rel_dir.split("/")
                     or any(_under(rel_dir, d) for d in memory_dirs))
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
