"""The benchmark scripts' own code paths, run with stand-ins for what they compare against."""

from __future__ import annotations

import datetime as dt
import importlib.util

from helpers import REPO


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dateparser_side_of_the_relative_dates_bench_runs_with_its_masks():
    bench = _script("bench_relative_dates")
    written = dt.date(2026, 11, 29)

    def search_dates(text, **_):  # dateparser's shape: (phrase, datetime) for each hit
        return [(p, dt.datetime(2026, 11, 28)) for p in ("yesterday", "Yesterday") if p in text]

    (rep,) = bench.dateparser_scan("We deployed yesterday.", written, search_dates)
    assert (rep.phrase, rep.replacement) == ("yesterday", "on 2026-11-28")
    # Inside code the masks keep a hit out, as the grammar's own side does.
    assert bench.dateparser_scan("Run `deploy --since yesterday` first.", written, search_dates) == []


def test_the_llm_bench_server_knows_every_stage_stub_in_a_fresh_process():
    """Its server answers each stage's tool call with the stub's answer; the runner now imports a
    stage only where it may apply, so the script registers them all itself (in a process of its
    own: in this one another test may have imported the stages already)."""
    import subprocess
    import sys

    from pipeline.stages import STAGES

    code = "import sys; sys.path.insert(0, 'scripts'); import llm_bench; print(len(llm_bench.stub_answers()))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout) == len(STAGES)
