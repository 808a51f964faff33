"""Stores per minute for `fleet plan` on each engine, and each engine's per-store overhead.

    python scripts/fleet_bench.py [--stores 200] [--workers 2] [--model stub] [--repeat 2] [--engines local,ray]

Builds `--stores` copies of the bundled fixtures (the four layouts in turn) in a temporary folder,
then plans them all with each engine through the engine API (what `fleet plan` runs, minus
printing). Each task is timed inside its worker, so

    overhead per store = (wall x workers - sum of the tasks' own seconds) / stores

is what the engine adds to each store (wall seconds of a worker slot; `task CPU s` is the task's
own CPU, the figure a loaded machine does not inflate): starting and feeding workers, moving specs and records,
for Ray its scheduler and object store. Ray's start-up (`ray.init`) is timed separately and not
in its stores per minute (a cluster is started once, not per fleet run). Wall-clock figures:
on a loaded machine, repeat and compare like with like.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAYOUTS = ("bank", "claude", "crux", "zylos")


def timed_task(path, spec, budget):
    from pipeline.fleet.task import run_task

    start, cpu = time.perf_counter(), time.process_time()
    record = run_task(path, spec, budget)
    record["seconds"] = time.perf_counter() - start
    record["cpu"] = time.process_time() - cpu  # the worker's CPU: what the machine's load does not change
    return record


def build(top: Path, n: int) -> list[str]:
    paths = []
    for i in range(n):
        layout = LAYOUTS[i % len(LAYOUTS)]
        dst = top / f"{layout}-{i:04d}"
        shutil.copytree(REPO / "fixtures" / layout, dst, symlinks=True)
        paths.append(str(dst))
    return paths


def measure(engine, paths: list[str], spec, workers: int) -> dict[str, float]:
    records: list[dict] = []
    start = time.perf_counter()
    engine.run(paths, spec, None, records.append, task=timed_task)
    wall = time.perf_counter() - start
    bad = [r for r in records if r["status"] != "ok"]
    if bad:
        raise SystemExit(f"{len(bad)} store(s) not ok, e.g. {bad[0]}")
    busy = sum(r["seconds"] for r in records)
    cpu = sum(r["cpu"] for r in records) / len(paths)
    return {"wall": wall, "per_minute": len(paths) / wall * 60, "task_s": busy / len(paths), "cpu_s": cpu, "overhead_s": (wall * workers - busy) / len(paths)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stores", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--model", default="stub")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--engines", default="local,ray")
    args = ap.parse_args()


    from pipeline.cli_options import Options
    from pipeline.fleet.engines import get_engine
    from pipeline.fleet.task import TaskSpec

    spec = TaskSpec(command="plan", options=Options(now="2026-11-29", model=args.model, no_cache=True))
    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as tmp:
        paths = build(Path(tmp), args.stores)
        print(f"{args.stores} stores ({', '.join(LAYOUTS)} in turn), model {args.model}, {args.workers} workers", flush=True)
        print(f"{'engine':<7} {'run':>3} {'wall s':>8} {'stores/min':>11} {'task s/store':>13} {'task CPU s':>11} {'overhead s/store':>17}")
        for name in args.engines.split(","):
            if name == "ray":
                import ray

                start = time.perf_counter()
                ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
                ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
                print(f"ray     start-up (ray.init, local instance): {time.perf_counter() - start:.1f} s", flush=True)
            engine = get_engine(name, workers=args.workers)
            for run in range(1, args.repeat + 1):
                m = measure(engine, paths, spec, args.workers)
                print(f"{name:<7} {run:>3} {m['wall']:>8.1f} {m['per_minute']:>11.1f} {m['task_s']:>13.3f} {m['cpu_s']:>11.3f} {m['overhead_s']:>17.3f}", flush=True)
            if name == "ray":
                ray.shutdown()


if __name__ == "__main__":
    main()
