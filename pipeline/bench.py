"""Scale benchmark: `python -m pipeline.bench 1000 10000 50000` (`--repeat 5`: five rounds a size and their median).

Generates a synthetic bank of N memories (with exact duplicates, word-order shuffles and
near-misses mixed in), then runs `memconsolidate plan --model none --json` (or `--model stub`) on
it in a fresh process, and in fresh processes just before and just after it the baseline: reading
the same JSONL file and json.loads-ing each of its lines (the two averaged). Per size it prints both CPU times (user + system, the figure that
survives a loaded machine), their ratio, the plan child's peak resident memory in MiB and in bytes
per memory, the number of actions and the plan's wall seconds. The target (issue 14): at 200k
memories, a ratio of at most 4 and at most 1.5 KB (1536 B) per memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_SUBJECTS = "deploy build cache queue worker api gateway database index backup release review migration test".split()
_VERBS = "runs fails retries publishes rotates expires restarts scales syncs locks".split()
_WHEN = "nightly hourly weekly on-fridays on-mondays at-noon after-merge before-release during-incidents".split()
_EXTRA = "quickly safely always never rarely twice with-backoff behind-flag in-staging in-production".split()


def synthetic_bank(root: Path, n: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    bank = root / "bench"
    bank.mkdir(parents=True)
    lines: list[str] = []
    for i in range(n):
        roll = rng.random()
        if lines and roll < 0.05:  # exact duplicate, different case and punctuation
            text = json.loads(rng.choice(lines))["text"].upper() + "!"
        elif lines and roll < 0.08:  # same words, different order
            words = json.loads(rng.choice(lines))["text"].split()
            rng.shuffle(words)
            text = " ".join(words)
        else:
            words = [rng.choice(_SUBJECTS), rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_WHEN),
                     rng.choice(_EXTRA), f"v{rng.randint(1, 400)}", f"n{i}"]
            text = " ".join(words)
        rec = {"id": f"r{i:06d}", "text": text, "entities": [], "tags": [rng.choice(_SUBJECTS)],
               "confidence": 0.8, "corroboration": rng.randint(1, 5), "pinned": rng.random() < 0.01,
               "source": "bench", "created_at": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T00:00:00Z",
               "updated_at": None, "invalid_at": None, "superseded_by": None, "revision": 1}
        lines.append(json.dumps(rec))
    (bank / "memories.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


# What the plan is measured against: the same process reading the same JSONL file and json.loads-ing
# each line, and nothing else (no record kept, so no collector and no memory growth is charged to it).
_BASELINE = """
import json, sys
with open(sys.argv[1], "rb") as fh:
    data = fh.read()
for line in data.split(b"\\n"):
    if line.strip():
        json.loads(line)
"""


@dataclass(frozen=True)
class Run:
    cpu: float  # user + system CPU seconds of the child, start-up and imports included
    wall: float
    peak_kib: int  # the child's peak resident set size (ru_maxrss, KiB on Linux)
    stdout: str


def measured(cmd: list[str]) -> Run:
    """Run `cmd` in a fresh child and take its own resource usage.

    `os.wait4` returns the rusage of that one child: the accounting `getrusage(RUSAGE_CHILDREN)`
    sums over every child waited for, so the plan's peak never mixes with the baseline's or with
    another size's.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[2] if len(cmd) > 2 else cmd[0]} failed: {err.read().decode(errors='replace').strip()}")
        return Run(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss, out.read().decode())


def time_plan(store: Path, model: str = "none") -> tuple[Run, int]:
    """The plan's run, and the number of actions it planned."""
    run = measured([sys.executable, "-m", "pipeline", "plan", str(store), "--model", model, "--json",
                    "--now", "2026-11-29", "--no-cache"])
    return run, len(json.loads(run.stdout)["actions"])


def time_baseline(store: Path) -> Run:
    return measured([sys.executable, "-c", _BASELINE, str(store / "bench" / "memories.jsonl")])


def paired(before: Run, after: Run) -> Run:
    """The baseline taken just before and just after the plan, averaged: on a machine whose load
    changes while the plan runs, the CPU a second costs changes too (shared cores and caches)."""
    return Run((before.cpu + after.cpu) / 2, (before.wall + after.wall) / 2, max(before.peak_kib, after.peak_kib), "")


HEADER = (f"{'memories':>9} {'plan CPU s':>10} {'read+loads CPU s':>16} {'ratio':>6} {'peak MiB':>9} "
          f"{'B/memory':>9} {'actions':>8} {'wall s':>7}")


def row(n: int, plan: Run, baseline: Run, actions: int) -> str:
    peak = plan.peak_kib * 1024
    return (f"{n:>9} {plan.cpu:>10.2f} {baseline.cpu:>16.2f} {plan.cpu / baseline.cpu:>6.2f} "
            f"{peak / 2**20:>9.1f} {peak / n:>9.0f} {actions:>8} {plan.wall:>7.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000, 50000])
    parser.add_argument("--model", default="none", help="none (the target) or stub (every stage, offline)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds per size (a row each), then their median ratio: on a shared machine one round can be off by a fifth")
    args = parser.parse_args(argv)
    print(HEADER)
    for n in args.sizes:
        ratios: list[float] = []
        with tempfile.TemporaryDirectory() as tmp:
            store = synthetic_bank(Path(tmp), n)
            for _ in range(max(1, args.repeat)):
                before = time_baseline(store)
                plan, actions = time_plan(store, args.model)
                after = time_baseline(store)
                baseline = paired(before, after)
                ratios.append(plan.cpu / baseline.cpu)
                print(row(n, plan, baseline, actions), flush=True)
        if len(ratios) > 1:
            print(f"{n:>9} median ratio {statistics.median(ratios):.2f} of {len(ratios)} rounds "
                  f"(lowest {min(ratios):.2f}, highest {max(ratios):.2f})", flush=True)


if __name__ == "__main__":
    main()
