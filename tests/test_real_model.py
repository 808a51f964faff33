"""A smoke run of the real path against a real model: outside CI, never in the default run.

    MEMCONSOLIDATE_REAL_MODEL=openai/qwen@http://127.0.0.1:8090/v1 python -m pytest -m real_model

evaluates every judging stage (dev and holdout) and plans every fixture through the tool's normal
command line, then prints the per-stage table with the seeds' baselines beside it and fails if a
stage is below its floor, errors on more than its share of cases, or a plan lists stage errors.
`scripts/local-model.sh serve` starts a local model for it. Knobs (all optional):

- MEMCONSOLIDATE_REAL_MODEL: `<litellm model>[@<api base>]` (unset: every test here is skipped);
- MEMCONSOLIDATE_REAL_MODEL_CASES=N: score N cases per stage and split (half of each label, in
  file order) instead of all of them, for a slow model;
- MEMCONSOLIDATE_REAL_MODEL_CONFIG=FILE: a `--config` TOML for every command (timeouts,
  concurrency, batch size for the model at hand);
- MEMCONSOLIDATE_REAL_MODEL_TIMEOUT: seconds one command may take (default 7200).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, REPO, copy_store

pytestmark = pytest.mark.real_model

SPEC = os.environ.get("MEMCONSOLIDATE_REAL_MODEL", "").strip()
if not SPEC:
    pytest.skip("MEMCONSOLIDATE_REAL_MODEL is not set (openai/<name>@http://127.0.0.1:PORT/v1)", allow_module_level=True)

_m = re.fullmatch(r"(?P<model>[^@\s]+)(?:@(?P<base>https?://\S+))?", SPEC)
if not _m:
    pytest.fail(f"MEMCONSOLIDATE_REAL_MODEL={SPEC!r}: expected <model>[@http(s)://host:port/v1]", pytrace=False)
MODEL, API_BASE = _m["model"], _m["base"]
CASES = int(os.environ.get("MEMCONSOLIDATE_REAL_MODEL_CASES") or 0)
CONFIG = os.environ.get("MEMCONSOLIDATE_REAL_MODEL_CONFIG")
TIMEOUT = float(os.environ.get("MEMCONSOLIDATE_REAL_MODEL_TIMEOUT") or 7200)
FIXTURE_NAMES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
JUDGING = ["reorder", "conflict", "rule"]
SPLITS = ["datasets", "holdout"]

# What the runs saw, for the closing table (tests in this module run in file order).
EVALS: dict[tuple[str, str], dict] = {}
PLANS: dict[str, dict] = {}
MODEL_ERRORS: dict[str, list[str]] = {}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    """One fresh cache for the session: numbers are measured, not replayed from an older run."""
    return tmp_path_factory.mktemp("real-model-cache")


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    """The command line with the model flags; the result carries `.seconds` it took (reported only)."""
    cmd = [sys.executable, "-m", "pipeline", *args, "--model", MODEL, "--cache-dir", str(cache)]
    if API_BASE:
        cmd += ["--api-base", API_BASE]
    if CONFIG:
        cmd += ["--config", CONFIG]
    start = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    res.seconds = round(time.monotonic() - start)  # type: ignore[attr-defined]
    return res


def say(capsys, line: str) -> None:
    with capsys.disabled():
        print(f"\n[real model] {line}", flush=True)


def subset(stage: str, split: str, folder: Path) -> Path:
    path = REPO / "evals" / split / f"{stage}.jsonl"
    if not CASES:
        return path
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    pos = [c for c in cases if c["label"]][: (CASES + 1) // 2]
    neg = [c for c in cases if not c["label"]][: CASES // 2]
    keep = {c["id"] for c in pos + neg}
    out = folder / f"{split}-{stage}.jsonl"
    out.write_text("".join(json.dumps(c) + "\n" for c in cases if c["id"] in keep), encoding="utf-8")
    return out


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("stage", JUDGING)
def test_eval_every_judging_stage(stage, split, tmp_path, cache_dir, capsys):
    res = cli("eval", "--stage", stage, "--dataset", str(subset(stage, split, tmp_path)), "--json", cache=cache_dir)
    assert res.returncode in (0, 1), res.stderr[-2000:]  # 1 = below a floor: reported at the end
    report = json.loads(res.stdout)
    assert report["stage"] == stage and report["n"] > 0
    report["exit"] = res.returncode
    report["seconds"] = res.seconds
    tag = f"{stage} ({MODEL}): "
    report["gate"] = [line.split(tag, 1)[1] for line in res.stderr.splitlines() if tag in line]
    EVALS[(stage, split)] = report
    MODEL_ERRORS[f"{stage}/{split}"] = [line.split("model error: ", 1)[1] for line in res.stderr.splitlines() if "model error: " in line]
    say(capsys, eval_line(stage, split, report) + "".join(f"\n    model error: {e}" for e in MODEL_ERRORS[f"{stage}/{split}"]))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_plan_every_fixture(name, tmp_path, cache_dir, capsys):
    store = copy_store(FIXTURES / name, tmp_path / name)  # plan never writes, but a copy costs nothing
    res = cli("plan", str(store), "--json", "--now", NOW, cache=cache_dir)
    assert res.returncode == 0, res.stderr[-2000:]
    plan = json.loads(res.stdout)
    assert plan["schema"] == "memconsolidate.plan/1" and plan["model"] == MODEL
    assert plan["stats"]["llm_calls"] + plan["stats"]["cache_hits"] > 0, "no stage asked the model"
    plan["seconds"] = res.seconds
    PLANS[name] = plan
    say(capsys, plan_line(name, plan))


HEAD = f"{'stage':<9} {'split':<9} {'n':>3} {'acc':>6} {'prec':>6} {'rec':>6} {'f1':>6} {'err':>4} {'secs':>5}  best baseline (acc)      gate"


def eval_line(stage: str, split: str, r: dict) -> str:
    m = r["metrics"]
    name, best = max(r["baselines"].items(), key=lambda kv: kv[1]["accuracy"])
    gate = "ok" if r["exit"] == 0 else "; ".join(r["gate"]) or "failed"
    return (f"{stage:<9} {split:<9} {r['n']:>3} {m['accuracy']:>6.3f} {m['precision']:>6.3f} {m['recall']:>6.3f} "
            f"{m['f1']:>6.3f} {r['errors']:>4} {r['seconds']:>5}  {name + ' ' + format(best['accuracy'], '.3f'):<24} {gate}")


def plan_line(name: str, plan: dict) -> str:
    s = plan["stats"]
    return (f"plan {name}: {len(plan['actions'])} action(s), {s['llm_calls']} call(s), {s['prompt_tokens']}+"
            f"{s['completion_tokens']} tokens, {plan['seconds']} s, {len(plan['errors'])} stage error(s)"
            + "".join(f"\n    {e['stage']}: {e['message']}" for e in plan["errors"]))


def table() -> str:
    lines = [f"real model {MODEL}" + (f" at {API_BASE}" if API_BASE else "") + (f", {CASES} cases per stage and split" if CASES else ""), HEAD]
    lines += [eval_line(stage, split, r) for (stage, split), r in EVALS.items()]
    lines += [plan_line(name, plan) for name, plan in PLANS.items()]
    lines += [f"eval {where}: model error: {e}" for where, errs in MODEL_ERRORS.items() for e in errs]
    return "\n".join(lines)


def test_the_real_model_meets_the_floors(capsys):
    text = table()
    with capsys.disabled():
        print("\n" + text)
    assert EVALS and PLANS, "the runs above did not complete"
    failed = [f"{stage}/{split}" for (stage, split), r in EVALS.items() if r["exit"] != 0]
    plan_errors = [name for name, plan in PLANS.items() if plan["errors"]]
    assert not failed and not plan_errors, f"below the bar: evals {failed}, plans with stage errors {plan_errors}"
