"""The store as it will be after the run, while the run is still being planned.

The crux writer decides one action after another; each decision must see the effect of the earlier
ones (a path vacated by an archive move is free, a path a move or write already claimed is not).
`Overlay` records the `Op`s in order and keeps the simulated bytes of every path they touch; the
disk is only read, never written. `journal.execute` replays the same ops, so what the writer checked
here (a move's source exists, its destination does not) holds when they run.

Each file is read from the disk once per run, within the readers' limits (`files.read_bytes`: the
size cap, no symlink leaving the store), and every op carries the state of the bytes it was built
from (`Op.expect`): the journal refuses the run if the file changed since, so an agent's write
between this read and the journal's copy is never replaced or carried off by a move and then
overwritten.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ...journal import Op, state
from ...storage.since_plan import DiskReads, Lister

MEMORY_SUFFIXES = (".memory.crux.md", ".memory.md", ".refs.yml")


class Overlay:
    def __init__(self, root: Path, max_bytes: int, lister: Lister | None = None) -> None:
        self.root = root
        self.disk = DiskReads(root, max_bytes, lister)
        self.state: dict[str, bytes | None] = {}
        self.ops: list[Op] = []

    def original(self, path: str) -> bytes | None:
        """The file's bytes on disk before the run (None: absent), read once; `Unreadable` if the
        readers would not read it."""
        return self.disk.bytes(path)

    def read(self, path: str) -> bytes | None:
        """The bytes `path` holds at this point of the run (None: absent); `Unreadable` as above."""
        if path in self.state:
            return self.state[path]
        return self.original(path)

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
        self.ops.append(Op("move", src, dest=dest, expect=state(data)))

    def write(self, path: str, data: bytes) -> None:
        current = self.read(path)
        if current == data:
            return  # no change: no op, so the journal does not list an untouched file
        # Built on `current` (the disk's bytes, or what an earlier op of the run left there): the
        # journal refuses the run if the file does not hold exactly that when it runs.
        self.state[path] = data
        self.ops.append(Op("write", path, data=data, expect=state(current)))

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

    def final_paths(self, originals: list[str]) -> list[str]:
        """`originals` plus every path the ops created, as far as they will exist after the run."""
        return [p for p in sorted(set(originals) | set(self.state)) if self.exists(p)]
