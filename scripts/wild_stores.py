"""Plan every real Claude Code store in ../shared/real-stores/wild/ as a long-lived checkout would
see it, and print one line per store: memories read, parse errors, and actions by kind.

A fresh checkout gives every file today's mtime, which hides age-driven judgements (staleness, the
14-day guard). Each store is copied to a temporary folder (never into the project) and its files'
mtimes set to `--age-days` before `--now`.

    python scripts/wild_stores.py [--model stub] [--now 2026-12-01] [--age-days 200] [--json]
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WILD = Path(__file__).resolve().parents[1].parent / "shared" / "real-stores" / "wild"


def aged_copy(src: Path, dest: Path, when: float) -> None:
    shutil.copytree(src, dest, symlinks=True)
    for folder, dirs, files in os.walk(dest):
        for name in files + dirs:
            p = Path(folder) / name
            if not p.is_symlink():
                os.utime(p, (when, when))


def plan(store: Path, model: str, now: str) -> dict:
    cmd = [sys.executable, "-m", "pipeline", "plan", str(store), "--json", "--model", model, "--now", now]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if out.returncode:
        return {"failed": out.stderr.strip().splitlines()[-1:] or [f"exit {out.returncode}"]}
    return json.loads(out.stdout)


def summarize(name: str, p: dict) -> dict:
    if "failed" in p:
        return {"store": name, "failed": p["failed"]}
    kinds: collections.Counter[str] = collections.Counter()
    for a in p.get("actions", []):
        kinds[a["kind"] + ("" if a.get("needs_user") else "*")] += 1
    findings = collections.Counter(f["kind"] for f in p.get("findings", []))
    return {
        "store": name,
        "memories": p.get("memories", 0),
        "parse_error": findings.get("parse_error", 0),
        "actions": dict(sorted(kinds.items())),
        "errors": len(p.get("errors", [])),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="stub")
    ap.add_argument("--now", default="2026-12-01")
    ap.add_argument("--age-days", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--wild", type=Path, default=WILD)
    args = ap.parse_args()
    when = (dt.datetime.fromisoformat(args.now) - dt.timedelta(days=args.age_days)).timestamp()
    rows = []
    with tempfile.TemporaryDirectory(prefix="wild-") as tmp:
        for src in sorted(p for p in args.wild.iterdir() if p.is_dir()):
            dest = Path(tmp) / src.name
            aged_copy(src, dest, when)
            rows.append(summarize(src.name, plan(dest, args.model, args.now)))
    if args.json:
        for row in rows:
            print(json.dumps(row, sort_keys=True))
        return
    total: collections.Counter[str] = collections.Counter()
    print("actions: kind* = automatic (needs_user false)")
    for row in rows:
        if "failed" in row:
            print(f"{row['store']:24} FAILED {row['failed']}")
            continue
        total.update(row["actions"])
        acts = ", ".join(f"{k} {v}" for k, v in row["actions"].items()) or "-"
        print(f"{row['store']:24} memories {row['memories']:4}  parse_error {row['parse_error']:2}  {acts}")
    print("total: " + (", ".join(f"{k} {v}" for k, v in sorted(total.items())) or "-"))


if __name__ == "__main__":
    main()
