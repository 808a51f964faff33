"""Which stores a fleet command works on: paths, a `--stores` file, `--discover DIR`.

Discovery asks the layout registry, never a list of its own: a folder is a store when a layout
whose markers sit at a store's root (crux, zylos, bank) detects it. A catch-all layout (claude: a
MEMORY.md anywhere below) detects every folder above one of its stores too, so a folder is its
store only if no visible subfolder is detected as well: the repository holding `.claude/`, or a
memory folder itself (a home folder whose repositories hold stores of their own has its
`.claude/` found as one more store). Discovery never descends into a store (a store inside a store would be
worked on twice, under two locks), nor into `.git`, `.memconsolidate` or the other folders the
readers skip, and never follows a symlinked folder (it could leave DIR or loop). A store of a
rooted layout inside a claude store is left out with a warning that names it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import UsageError
from ..storage.files import SKIP_DIRS, TooLarge, Unreadable, read_capped


@dataclass
class Targets:
    paths: list[str]  # absolute, resolved, unique, in the order given or found


# A path a line: a list of a million stores stays well below it. A bigger "list" is not one (a
# link to /dev/zero would grow in memory until the machine ran out).
MAX_STORES_FILE_BYTES = 64 << 20


def read_stores_file(file: str) -> list[str]:
    """One path a line; blank lines and `#` comments skipped; relative paths are relative to the
    file's folder (so the list means the same from any working directory), or to the current
    folder for a list that is no file in a folder (`--stores /dev/stdin`, `--stores <(find ...)`)."""
    try:
        with open(file, "rb") as fh:
            in_a_folder = stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
            text = read_capped(fh, MAX_STORES_FILE_BYTES).decode("utf-8-sig")  # an editor may start it with a BOM
    except TooLarge:
        raise UsageError(f"--stores {file} is over {MAX_STORES_FILE_BYTES >> 20} MiB: not a list of stores") from None
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


class _Discovery:
    """One `--discover` walk: the stores found, in the order met, and what it tells the user."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.rooted, self.catch_all = _layouts()
        self.warn = warn
        self.found: list[str] = []
        self._too_deep = False
        # A catch-all layout walks all below a folder: asked of a folder as a child, then as itself.
        self._seen: dict[tuple[str, Path], bool] = {}

    def detects(self, layout: Any, folder: Path) -> bool:
        key = (layout.name, folder)
        if key not in self._seen:
            self._seen[key] = self._detect(layout, folder)
        return self._seen[key]

    def _detect(self, layout: Any, folder: Path) -> bool:
        try:
            return bool(layout.detect(folder))
        except OSError:
            return False
        except RecursionError:
            # A catch-all layout walks the tree below; one whose walk recurses (claude's did, with
            # Python 3.11's os.walk, before storage/walk.py; a plugin's may) fails on a tree nested
            # thousands deep. The folders below are looked at one by one instead.
            if not self._too_deep:
                self._too_deep = True
                self.warn(f"{folder.resolve()}: its folders nest too deep to tell at once whether it is a {layout.name} "
                          "store: each folder below is looked at instead (slow)")
            return False

    def rooted_store(self, folder: Path) -> Any:
        return next((layout for layout in self.rooted if self.detects(layout, folder)), None)

    def walk(self, top: Path) -> None:
        # A stack, not recursion: a tree nested deeper than Python's recursion limit is walked too.
        stack = [top]
        while stack:
            folder = stack.pop()
            if self.rooted_store(folder) is not None:
                self.found.append(str(folder.resolve()))
                continue
            children = _subdirs(folder, self.warn)
            # Not pruned when a catch-all layout does not detect a folder: claude's does not see a bare
            # memory folder (MEMORY.md at its root) from the folder above it.
            here = [layout for layout in self.catch_all if self.detects(layout, folder)]
            if here and not any(self.detects(layout, c) for layout in here for c in children if not c.name.startswith(".")):
                self.found.append(str(folder.resolve()))
                self._left_inside(folder, here[0].name)
                continue
            stack.extend(reversed(children))

    def _left_inside(self, store: Path, layout: str) -> None:
        """Say which stores of a rooted layout lie inside the catch-all store `store` (a bank store in
        a repository that also holds `.claude/`): they overlap it, so the fleet cannot take them too,
        and leaving them out without a word made them look consolidated every night."""
        stack = list(reversed(_subdirs(store, self.warn)))
        while stack:
            folder = stack.pop()
            inner = self.rooted_store(folder)
            if inner is None:
                stack.extend(reversed(_subdirs(folder, self.warn)))
                continue
            self.warn(f"{folder.resolve()}: a {inner.name} store inside the {layout} store {store.resolve()}, left out "
                      "(stores overlap: run it on its own)")


def discover(root: str, warn: Callable[[str], None]) -> list[str]:
    top = Path(root).expanduser()
    if not top.is_dir():
        raise UsageError(f"--discover needs a directory: {root}")
    walk = _Discovery(warn)
    walk.walk(top)
    return walk.found


def collect(paths: Iterable[str], stores_file: str | None, discover_dir: str | None, warn: Callable[[str], None]) -> Targets:
    """Every target once, resolved; refuses overlapping targets (one store inside another). What
    discovery has to say is said as it is found: also when no store is found at all (exit 2)."""
    given = list(paths)
    if stores_file:
        given += read_stores_file(stores_file)
    if discover_dir:
        given += discover(discover_dir, warn)
    if not given:
        raise UsageError("no stores: give paths, --stores FILE or --discover DIR")
    seen: dict[str, None] = {}
    for entry in given:
        seen.setdefault(_target(entry), None)
    ordered = list(seen)
    _refuse_nested(ordered)
    return Targets(paths=ordered)


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
