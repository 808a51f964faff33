"""The LLM stages against a local OpenAI-compatible server with a fixed latency: how close to the ideal?

    python scripts/llm_bench.py [--memories 15000] [--latency 0.2] [--batch 8] [--concurrency 4]
                                [--table 4,8,16x4,8,16]

Builds a synthetic bank (pipeline.bench.synthetic_bank: word-order shuffles for the reorder stage,
same-subject pairs for conflicts, corroborated records for rules), starts tests/openai_server.py on
127.0.0.1 answering every stage's tool call validly (the stub's own verdict for the payload it was
sent, after `--latency` seconds; a counter of requests), and runs

    memconsolidate plan STORE --model openai/bench --api-base http://127.0.0.1:PORT/v1

in a fresh process with a fresh cache. It prints requests, concurrency, the ideal seconds
(requests / concurrency x latency), wall seconds of the LLM phase (first request to exit) and of the
whole run, their ratio to the ideal, the seconds before the first request, and the client's CPU per
request (the child's CPU after its first connection to the server, over the requests). Then the
same plan again, fully cached (CPU seconds, whether litellm was imported, requests made: 0), and the
`--model stub` plan on the same store, for the cached run's "at most 1.5x the stub's CPU".

The child reports through a wrapper (`python -c`): an audit hook notes the CPU and time of its
first socket connection, and at exit it writes its CPU and whether `litellm` is in sys.modules.
`--table` sweeps batch sizes x concurrency (fresh cache each) and prints the ratio for each.
Wall-clock figures: on a loaded machine, repeat and compare like with like.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import typing
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from openai_server import FakeOpenAI, _forced_tool_name, status_reply, tool_reply  # noqa: E402

from pipeline.bench import synthetic_bank  # noqa: E402

NOW = "2026-11-29"

# Runs in the child: the report the bench reads (no product code knows about it).
WRAPPER = r"""
import atexit, json, os, sys, time
_report = os.environ["LLM_BENCH_REPORT"]
_first = {}
def _hook(event, args):
    if event == "socket.connect" and "cpu" not in _first:
        _first["cpu"] = time.process_time()
        _first["t"] = time.monotonic()
sys.addaudithook(_hook)
def _write():
    with open(_report, "w") as f:
        json.dump({"cpu": time.process_time(), "first_cpu": _first.get("cpu"), "first_t": _first.get("t"),
                   "litellm": "litellm" in sys.modules, "instructor": "instructor" in sys.modules}, f)
atexit.register(_write)
sys.argv = ["memconsolidate", *sys.argv[1:]]
from pipeline.cli import main
main()
"""


def stub_answers() -> dict[str, tuple[type, typing.Callable[[typing.Any], typing.Any]]]:
    """{output schema name (= the forced tool's name): (input model, the stub's function)}."""
    from pipeline.llm.stub import STUBS
    from pipeline.stages import register_stubs

    register_stubs()  # the runner imports (and so registers) only the stages that may apply
    table = {}
    for fn in STUBS.values():
        hints = typing.get_type_hints(fn)
        table[hints["return"].__name__] = (hints["payload"], fn)
    return table


def make_responder(latency: float):
    answers = stub_answers()

    def respond(body: dict) -> object:
        tool = _forced_tool_name(body)
        entry = answers.get(tool)
        if entry is None:
            return status_reply(400, body={"error": {"message": f"bench server: no answer for {tool}"}})
        model_in, fn = entry
        payload = model_in.model_validate_json(body["messages"][-1]["content"])
        return tool_reply(fn(payload).model_dump(mode="json"), delay=latency)

    return respond


def write_config(folder: Path, batch: int, concurrency: int) -> Path:
    path = folder / f"bench-b{batch}-c{concurrency}.toml"
    # prompt_set "": the default prompts, as for a hosted model (a loopback server otherwise gets the
    # local-server defaults: one item per call, one call at a time).
    path.write_text(f'[llm]\nbatch_size = {batch}\nconcurrency = {concurrency}\nprompt_set = ""\n', encoding="utf-8")
    return path


def run_child(args: list[str], report: Path) -> dict:
    env = {**os.environ, "LLM_BENCH_REPORT": str(report), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", WRAPPER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=str(REPO))
    out, err = proc.communicate()
    end = time.monotonic()
    if proc.returncode != 0:
        raise SystemExit(f"plan failed ({proc.returncode}): {err.decode()[-2000:]}")
    data = json.loads(report.read_text())
    data.update(start=start, end=end, wall=end - start, plan=json.loads(out))
    return data


def plan_sha(plan: dict) -> str:
    """The plan minus its counters (calls, cache hits differ between a fresh and a cached run)."""
    plan = {k: v for k, v in plan.items() if k not in ("stats",)}
    return hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()[:12]


def fresh_run(store: Path, work: Path, srv: FakeOpenAI, batch: int, concurrency: int, latency: float, tag: str) -> dict:
    cache = work / f"cache-{tag}"
    shutil.rmtree(cache, ignore_errors=True)  # a fresh cache: every call a miss
    srv.reset()
    cfg = write_config(work, batch, concurrency)
    args = ["plan", str(store), "--json", "--now", NOW, "--model", srv.model("bench"), "--api-base", srv.api_base,
            "--cache-dir", str(cache), "--config", str(cfg)]
    r = run_child(args, work / f"report-{tag}.json")
    requests = srv.count
    first = min(req.received_at for req in srv.requests) if srv.requests else r["end"]
    ideal = requests / concurrency * latency
    llm_wall = r["end"] - first
    per_req = (r["cpu"] - (r["first_cpu"] or r["cpu"])) / requests if requests else 0.0
    r.update(timeline(srv, first))
    r.update(requests=requests, ideal=ideal, llm_wall=llm_wall, ratio=llm_wall / ideal if ideal else 0.0,
             before_first=first - r["start"], cpu_per_request=per_req, args=args, max_in_flight=srv.max_in_flight)
    return r


def timeline(srv: FakeOpenAI, first: float) -> dict:
    """From the server's side: when the last reply went out, the mean number of requests in flight
    between the first request and the last reply, and the idle stretches (nothing in flight) > 0.3 s."""
    spans = sorted((q.received_at, q.answered_at or q.received_at) for q in srv.requests)
    if not spans:
        return {"last": first, "mean_in_flight": 0.0, "gaps": []}
    last = max(end for _, end in spans)
    busy = sum(end - start for start, end in spans)
    gaps, reach = [], spans[0][1]
    for start, end in spans[1:]:
        if start - reach > 0.3:
            gaps.append((round(reach - first, 2), round(start - reach, 2)))
        reach = max(reach, end)
    return {"last": last, "mean_in_flight": busy / max(1e-9, last - first), "gaps": gaps}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=15000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--table", default="", help="batch sizes x concurrencies, e.g. 4,8,16x4,8,16 (fresh cache each)")
    ap.add_argument("--keep", help="build the store and caches in this folder (kept)")
    a = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        store = work / "store"
        if not store.exists():
            synthetic_bank(store, a.memories)
        with FakeOpenAI() as srv:
            srv.responder = make_responder(a.latency)
            r = fresh_run(store, work, srv, a.batch, a.concurrency, a.latency, "main")
            print(f"store: synthetic bank of {a.memories} memories; server latency {a.latency * 1000:.0f} ms; "
                  f"batch {a.batch}, concurrency {a.concurrency}")
            print(f"requests              {r['requests']}  (most in flight at once: {r['max_in_flight']})")
            print(f"ideal s               {r['ideal']:.2f}")
            print(f"wall s (llm phase)    {r['llm_wall']:.2f}   ratio {r['ratio']:.2f}x the ideal")
            print(f"wall s (whole run)    {r['wall']:.2f}   first request to last reply {r['last'] - r['start'] - r['before_first']:.2f} s, "
                  f"mean in flight {r['mean_in_flight']:.2f}")
            print(f"idle stretches        {', '.join(f'{g}s at +{at}s' for at, g in r['gaps']) or 'none'}")
            print(f"s before 1st request  {r['before_first']:.2f}")
            print(f"client CPU/request    {r['cpu_per_request'] * 1000:.1f} ms   (run CPU {r['cpu']:.2f} s, "
                  f"{r['first_cpu'] or 0:.2f} s before the first request)")
            srv.reset()
            cached = run_child(r["args"], work / "report-cached.json")
            stub = run_child(["plan", str(store), "--json", "--now", NOW, "--model", "stub", "--no-cache"],
                             work / "report-stub.json")
            print(f"cached rerun          CPU {cached['cpu']:.2f} s, requests {srv.count}, litellm imported: "
                  f"{cached['litellm']}, instructor imported: {cached['instructor']}, "
                  f"same plan: {plan_sha(cached['plan']) == plan_sha(r['plan'])}")
            print(f"stub run              CPU {stub['cpu']:.2f} s   cached/stub {cached['cpu'] / stub['cpu']:.2f}x")
            print(f"plan sha (no stats)   {plan_sha(r['plan'])}")
            if a.table:
                batches, concs = (list(map(int, part.split(","))) for part in a.table.split("x"))
                print(f"\n{'batch':>5} {'conc':>4} {'reqs':>5} {'ideal s':>8} {'llm s':>7} {'ratio':>6} {'CPU ms/req':>10}")
                for b in batches:
                    for c in concs:
                        t = fresh_run(store, work, srv, b, c, a.latency, f"b{b}c{c}")
                        print(f"{b:>5} {c:>4} {t['requests']:>5} {t['ideal']:>8.2f} {t['llm_wall']:>7.2f} "
                              f"{t['ratio']:>6.2f} {t['cpu_per_request'] * 1000:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
