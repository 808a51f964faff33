"""CPU of `plan --model stub` against `plan --model none` on the same store (issue 14, item 2).

    .venv/bin/python scripts/stub_bench.py            # crux 1000 and bank 50000, 3 runs each
    .venv/bin/python scripts/stub_bench.py --crux 1000 --bank 0 --runs 5

Each plan runs in a fresh process; its CPU is the child's user + sys seconds. Prints the median
per model and the ratio stub / none (the aim: at most 1.5).

The conflict search's inner loops run in C when the install built them (pipeline/rules/native.py);
MEMCONSOLIDATE_PURE_PYTHON=1 before the command measures their Python forms instead.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline.bench import synthetic_bank

_TOPICS = """checkout payments webhook search cache deploy release migration backup queue worker gateway ledger
    invoice billing auth session upload thumbnail export import scheduler mailer notifier metrics tracing
    logging flags pricing catalog inventory""".split()
_VERBS = "retry cache log deploy pin rotate mock poll index compress encrypt archive validate batch throttle".split()
_OBJECTS = """requests tokens images sessions events invoices reports schemas jobs rates keys logs receipts
    webhooks certificates snapshots queries payloads headers cookies""".split()
_WHERE = "in production|in staging|in CI|on the gateway|in the worker|behind the flag|on Fridays|at night".split("|")
_TOOLS = "Postgres Redis Kafka S3 Terraform Grafana Sentry Celery nginx Envoy".split()
_TYPES = ("learning", "idea", "core", "goal")


def _body(rng: random.Random, i: int, title: str, topic: str, verb: str, obj: str) -> str:
    """A few sentences in the shape real crux memories have: the rule, why, numbers, a path, a list."""
    tool = rng.choice(_TOOLS)
    return (
        f"# {title}\n\n{title[0].upper()}{title[1:]}. The {topic} service talks to {tool}; "
        f"it keeps {rng.randint(1, 9)} replicas and retries {rng.randint(2, 6)} times with backoff.\n\n"
        f"Why: incident INC-{1000 + i} showed {obj} piling up when {verb} was skipped.\n\n"
        f"- see `src/{topic}/{obj}.py`\n- the {topic} runbook lists the {obj} limits\n"
        f"- owner: the {rng.choice(_TOPICS)} team\n"
    )


def crux_store(root: Path, n: int, seed: int = 11) -> Path:
    """A crux store of n memories: notes on thirty topics, some negated, with numbers, paths and
    lists, so the conflict search finds same-subject pairs as it does in a real store."""
    rng = random.Random(seed)
    (root / ".crux").mkdir(parents=True)
    config = {"flags": [{"enableMemories": "true"}, {"enableMemoryCompression": "false"}, {"enableMemoryConsolidation": "true"}],
              "cruxMemories": {"sizeUnit": "lines", "compressionMinLines": 500, "maxMemorySize": 1000,
                               "maxConsolidatedSize": 200, "compressionTarget": 33}}
    (root / ".crux" / "crux-memories.json").write_text(json.dumps(config), encoding="utf-8")
    for i in range(n):
        topic, verb, obj, where = rng.choice(_TOPICS), rng.choice(_VERBS), rng.choice(_OBJECTS), rng.choice(_WHERE)
        polarity = rng.choice(("Always", "Never", "Do not", ""))
        title = f"{polarity} {verb} {topic} {obj} {where}".strip()
        type_ = _TYPES[i % len(_TYPES)]
        day = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
        path = root / "memories" / type_ / f"{topic}-{verb}-{obj}-{i}.memory.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f'---\nid: "m{i:05d}"\ntitle: "{title}"\ndescription: "{title}."\ntype: "{type_}"\nstrength: {rng.randint(1, 5)}\n'
            f'created: {day}\nmodified: {day}\nsource: "bench"\ntags: [{topic}, {obj}]\n---\n\n{_body(rng, i, title, topic, verb, obj)}',
            encoding="utf-8",
        )
    return root


def plan_cpu(store: Path, model: str) -> float:
    """User + sys CPU seconds of one `plan` in a fresh process (bytecode caching on, as installed:
    with PYTHONDONTWRITEBYTECODE every run would also compile the modules it imports)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(
        [sys.executable, "-m", "pipeline", "plan", str(store), "--model", model, "--json", "--now", "2026-11-29", "--no-cache"],
        capture_output=True, text=True, env=env,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"plan --model {model} failed: {res.stderr.strip()[-300:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(label: str, store: Path, runs: int) -> None:
    cpu: dict[str, list[float]] = {m: [] for m in ("none", "stub")}
    for model in cpu:
        plan_cpu(store, model)  # warm-up: bytecode written, files in the page cache
    for _ in range(runs):
        for model in cpu:  # interleaved, so a load spike on the machine hits both alike
            cpu[model].append(plan_cpu(store, model))
    none, stub = statistics.median(cpu["none"]), statistics.median(cpu["stub"])
    runs_text = " ".join(f"{m}=[{', '.join(f'{x:.2f}' for x in xs)}]" for m, xs in cpu.items())
    print(f"{label:<12} none {none:7.2f} s  stub {stub:7.2f} s  ratio {stub / none:5.2f}   ({runs_text})", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crux", type=int, default=1000, help="crux memories (0: skip)")
    parser.add_argument("--bank", type=int, default=50000, help="bank memories (0: skip)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.crux:
            compare(f"crux {args.crux}", crux_store(Path(tmp) / "crux", args.crux), args.runs)
        if args.bank:
            compare(f"bank {args.bank}", synthetic_bank(Path(tmp) / "bank", args.bank), args.runs)


if __name__ == "__main__":
    main()
