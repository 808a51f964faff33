"""Scale benchmark: `python -m pipeline.bench 1000 10000 50000`.

Generates a synthetic bank of N memories (with exact duplicates, word-order shuffles and
near-misses mixed in), then times `memconsolidate plan --model none --json` (or `--model stub`) on
it in a fresh process and reports wall seconds and the child's peak resident memory (each size in
its own process, so the peaks do not mix).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
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


def time_plan(store: Path, model: str = "none") -> tuple[float, float, int]:
    """Wall seconds, peak RSS of the child in MiB, and the number of actions planned."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "pipeline", "plan", str(store), "--model", model, "--json", "--now", "2026-11-29", "--no-cache"],
        capture_output=True, text=True,
    )
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"plan failed: {res.stderr.strip()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before) / 1024, len(json.loads(res.stdout)["actions"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000, 50000])
    parser.add_argument("--model", default="none", help="none (the target) or stub (every stage, offline)")
    args = parser.parse_args(argv)
    print(f"{'memories':>9} {'seconds':>8} {'peak MiB':>9} {'actions':>8}")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = synthetic_bank(Path(tmp), n)
            seconds, peak, actions = time_plan(store, args.model)
        print(f"{n:>9} {seconds:>8.2f} {peak:>9.1f} {actions:>8}", flush=True)


if __name__ == "__main__":
    main()
