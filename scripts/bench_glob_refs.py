"""How long staleness takes to check glob refs (`src/**/*.py`) on a large repository index.

Builds an in-memory index of `--files` paths (no disk), then classifies `--refs` memories that each
name one glob ref (`--patterns` distinct patterns among them), with today's index and with the
old lookup (the whole tree re-sorted and scanned per reference), and prints both times.

    python scripts/bench_glob_refs.py [--files 100000] [--refs 400] [--patterns 40]
"""

from __future__ import annotations

import argparse
import time

from pipeline.rules.refs import Refs
from pipeline.rules.repo_index import RepoIndex, glob_regex
from pipeline.rules.staleness import classify


class OldIndex(RepoIndex):
    """The lookup before issue 11: every glob ref sorted and scanned the whole tree."""

    def has_path(self, ref: str) -> bool:
        path = ref.rstrip("/")
        if any(c in path for c in "*?["):
            pattern = glob_regex(path)
            return any(pattern.match(p) for p in sorted(self.files | self.dirs))
        return super().has_path(ref)


def tree(n: int) -> tuple[frozenset[str], frozenset[str]]:
    files, dirs = set(), set()
    for i in range(n):
        top = f"pkg{i % 50}"
        sub = f"{top}/mod{i % 997}"
        dirs.update({top, sub})
        files.add(f"{sub}/file{i}.{('py', 'ts', 'rs', 'md')[i % 4]}")
    return frozenset(files), frozenset(dirs)


def run(cls: type[RepoIndex], files, dirs, refs: list[Refs]) -> float:
    index = cls(root="/bench", files=files, dirs=dirs)
    start = time.perf_counter()
    for r in refs:
        classify(r, index)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--refs", type=int, default=400)
    ap.add_argument("--patterns", type=int, default=40)
    args = ap.parse_args()
    files, dirs = tree(args.files)
    # half the patterns match something, half match nothing (the slow case: a full scan)
    patterns = [f"pkg{i % 50}/**/*.{'py' if i % 2 else 'java'}" for i in range(args.patterns)]
    refs = [Refs(files=(patterns[i % len(patterns)],), symbols=()) for i in range(args.refs)]
    new = run(RepoIndex, files, dirs, refs)
    old = run(OldIndex, files, dirs, refs)
    print(f"{args.files} files, {args.refs} glob refs, {len(set(patterns))} patterns")
    print(f"old (sort + scan per ref): {old:.3f} s")
    print(f"new (once per pattern, prefix range): {new:.3f} s   ({old / new:.0f}x faster)")


if __name__ == "__main__":
    main()
