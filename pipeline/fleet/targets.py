"""Which stores a fleet command works on: paths, a `--stores` file, `--discover DIR`.

Discovery asks the layout registry, never a list of its own: a folder is a store when a layout
whose markers sit at a store's root (crux, zylos, bank) detects it. A catch-all layout (claude: a
MEMORY.md anywhere below) detects every folder above one of its stores too, so a folder is its
store only if no visible subfolder is detected as well: the repository holding `.claude/`, or a
memory folder itself (a home folder whose repositories hold stores of their own has its
`.claude/` found as one more store). Discovery never descends into a store (a store inside a store would be
worked on twice, under two locks), nor into `.git`, `.memconsolidate` or the other folders the
readers skip, and never follows a symlinked folder (it could leave DIR or loop).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import UsageError
from ..storage.files import SKIP_DIRS, Unreadable, read_chunks


@dataclass
class Targets:
    paths: list[str]  # absolute, resolved, unique, in the order given or found
    warnings: list[str] = field(default_factory=list)


# A path a line: a list of a million stores stays well below it. A bigger "list" is not one (a
# link to /dev/zero would grow in memory until the machine ran out).
MAX_STORES_FILE_BYTES = 64 << 20


def read_stores_file(file: str) -> list[str]:
    """One path a line; blank lines and `#` comments skipped; relative paths are relative to the
    file's folder (so the list means the same from any working directory), or to the current
    folder for a list that is no file in a folder (`--stores /dev/stdin`, `--stores <(find ...)`)."""
    try:
        with open(file, "rb") as fh:
            data = b"".join(read_chunks(fh, MAX_STORES_FILE_BYTES + 1))
            in_a_folder = stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
        if len(data) > MAX_STORES_FILE_BYTES:
            raise UsageError(f"--stores {file} is over {MAX_STORES_FILE_BYTES >> 20} MiB: not a list of stores")
        text = data.decode("utf-8-sig")  # a list saved by an editor that starts it with a byte-order mark
    except (OSError, Unreadable, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read --stores {file}: {getattr(exc, 'strerror', None) or exc}") from None
    # A pipe's path names no folder: /dev/stdin resolves to /proc/PID/fd/pipe:[N].
    base = Path(file).resolve().parent if in_a_folder else Path.cwd()
    out = []
    for line in text.splitlines():
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        out.append(str(base / os.path.expanduser(entry)))
    return out


def _layouts() -> tuple[list[Any], list[Any]]:
    from ..layouts.registry import _detection_order

    rooted: list[Any] = []
    catch_all: list[Any] = []
    for layout in _detection_order():
        (catch_all if layout.catch_all else rooted).append(layout)
    return rooted, catch_all


def _subdirs(folder: Path, warn: Callable[[str], None]) -> list[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        warn(f"cannot list {folder}: {exc.strerror or exc}")
        return []
    return [Path(e.path) for e in entries if e.name not in SKIP_DIRS and e.is_dir(follow_symlinks=False)]


def _detects(layout, folder: Path) -> bool:
    try:
        return bool(layout.detect(folder))
    except OSError:
        return False


def discover(root: str, warn: Callable[[str], None]) -> list[str]:
    top = Path(root).expanduser()
    if not top.is_dir():
        raise UsageError(f"--discover needs a directory: {root}")
    rooted, catch_all = _layouts()
    found: list[str] = []

    def visit(folder: Path) -> None:
        if any(_detects(layout, folder) for layout in rooted):
            found.append(str(folder.resolve()))
            return
        children = _subdirs(folder, warn)
        # Not pruned when a catch-all layout does not detect a folder: claude's does not see a bare
        # memory folder (MEMORY.md at its root) from the folder above it.
        here = [layout for layout in catch_all if _detects(layout, folder)]
        if here and not any(_detects(layout, c) for layout in here for c in children if not c.name.startswith(".")):
            found.append(str(folder.resolve()))
            return
        for child in children:
            visit(child)

    visit(top)
    return found


def collect(paths: Iterable[str], stores_file: str | None, discover_dir: str | None) -> Targets:
    """Every target once, resolved; refuses overlapping targets (one store inside another)."""
    warnings: list[str] = []
    given = list(paths)
    if stores_file:
        given += read_stores_file(stores_file)
    if discover_dir:
        given += discover(discover_dir, warnings.append)
    if not given:
        raise UsageError("no stores: give paths, --stores FILE or --discover DIR")
    seen: dict[str, None] = {}
    for entry in given:
        seen.setdefault(_target(entry), None)
    ordered = list(seen)
    _refuse_nested(ordered)
    return Targets(paths=ordered, warnings=warnings)


def _target(entry: str) -> str:
    """A target's resolved path. One that cannot be resolved (a symlink loop, a NUL byte) stays a
    target as given, as a missing path does: it is reported as a failed store, not a usage error."""
    path = Path(entry).expanduser()
    try:
        return str(path.resolve())
    except (OSError, RuntimeError, ValueError):  # Python 3.11 raises RuntimeError on a symlink loop
        return os.path.abspath(path)


def refuse_inside_a_store(where: Path, stores: Iterable[str], what: str, instead: str) -> None:
    """A file the fleet writes for itself (its state file, the plans of `--plans-dir`; `where`,
    resolved as it will be written) inside a store it works on would be a file of that store no
    journal knows: undo could not give the store back as it was, and `plan` promises not to write
    to a store at all. Exit 2, naming `what` and the option to pass `instead`."""
    for store in sorted(stores):
        if where.is_relative_to(Path(store)):
            raise UsageError(f"{what} would lie inside the store {store}: pass {instead} outside the stores")


def _refuse_nested(paths: list[str]) -> None:
    chosen = set(paths)
    for inner in paths:
        for outer in map(str, Path(inner).parents):
            if outer in chosen:
                raise UsageError(f"stores overlap: {inner} is inside {outer} (each store is worked on alone, under its own lock)")
