"""The store as it will be after the run, while the run is still being planned.

The crux writer decides one action after another; each decision must see the effect of the earlier
ones (a path vacated by an archive move is free, a path a move or write already claimed is not).
`Overlay` records the `Op`s in order and keeps the simulated bytes of every path they touch; the
disk is only read, never written. `journal.execute` replays the same ops, so what the writer checked
here (a move's source exists, its destination does not) holds when they run.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ...journal import Op, state

MEMORY_SUFFIXES = (".memory.crux.md", ".memory.md", ".refs.yml")


class Overlay:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.state: dict[str, bytes | None] = {}
        self.ops: list[Op] = []

    def read(self, path: str) -> bytes | None:
        if path in self.state:
            return self.state[path]
        p = self.root / path
        if not p.is_file():
            return None
        try:
            return p.read_bytes()
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        if path in self.state:
            return self.state[path] is not None
        return (self.root / path).exists() or (self.root / path).is_symlink()

    def move(self, src: str, dest: str) -> None:
        data = self.read(src)
        if data is None:
            raise ValueError(f"cannot move {src}: it does not exist")
        if self.exists(dest):
            raise ValueError(f"cannot move {src} to {dest}: the destination exists")
        self.state[src] = None
        self.state[dest] = data
        self.ops.append(Op("move", src, dest=dest))

    def write(self, path: str, data: bytes) -> None:
        current = self.read(path)
        if current == data:
            return  # no change: no op, so the journal does not list an untouched file
        # The first op on a path was computed from the bytes read here: the journal refuses the run
        # if the file changed since (an agent appended meanwhile), instead of overwriting it.
        expect = None if path in self.state else state(current)
        self.state[path] = data
        self.ops.append(Op("write", path, data=data, expect=expect))

    def free_variant(self, path: str, taken: set[str] | None = None) -> str:
        """`path`, or the first of `name-2`, `name-3`, ... (before the file's suffix) that is free."""
        taken = taken or set()
        if not self.exists(path) and path not in taken:
            return path
        p = PurePosixPath(path)
        name = p.name
        suffix = next((s for s in MEMORY_SUFFIXES if name.endswith(s)), p.suffix)
        stem = name[: len(name) - len(suffix)] if suffix else name
        n = 2
        while True:
            candidate = (p.parent / f"{stem}-{n}{suffix}").as_posix()
            if not self.exists(candidate) and candidate not in taken:
                return candidate
            n += 1

    def final_files(self, originals: list[str]) -> dict[str, bytes]:
        """Final bytes of `originals` plus every path the ops created (absent ones left out)."""
        out: dict[str, bytes] = {}
        for path in sorted(set(originals) | set(self.state)):
            data = self.read(path)
            if data is not None:
                out[path] = data
        return out
