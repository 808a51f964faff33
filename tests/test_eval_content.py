"""Evals of the content stages (metadata, split): the scorers with the stub, with scripted replies
(faithful, lossy, declining, erroring, hostile, perfect), and `memconsolidate eval` itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from helpers import REPO, run_cli
from pipeline.config import build_settings
from pipeline.evaluate.cases import load_cases
from pipeline.evaluate.content import CONTENT_STAGES
from pipeline.llm import StageCallError, make_client
from pipeline.stages.consolidate.stage import MetadataDecision, MetadataOutput
from pipeline.stages.split import SplitDecision, SplitOutput, VolumePlan

METADATA = load_cases(REPO / "evals" / "datasets" / "metadata.jsonl", "metadata")
SPLIT = load_cases(REPO / "evals" / "datasets" / "split.jsonl", "split")
SETTINGS = build_settings({}, {"llm.model": "stub"})


class Scripted:
    """A client answering every payload through `answer(payload) -> reply | StageCallError`."""

    def __init__(self, answer: Callable[[Any], Any]) -> None:
        self.answer = answer

    def structured_many(self, stage, payloads, schema):
        return [self.answer(p) for p in payloads]


def stub_client():
    return make_client(SETTINGS.llm)


# --- metadata ----------------------------------------------------------------------------------------


def test_metadata_eval_with_the_stub():
    with stub_client() as client:
        report, errors = CONTENT_STAGES["metadata"](METADATA, client, SETTINGS)
    assert errors == [] and report["n"] == len(METADATA) == 22
    m = report["metrics"]
    assert {"accuracy", "precision", "recall", "f1", "keep_rate"} <= set(m)
    assert m["accuracy"] == 1.0 and m["keep_rate"] == 1.0 and m["fallback_rate"] == 0.0
    assert report["baselines"]["deterministic_merge"]["accuracy"] == 1.0


def _faithful(payload):
    g = payload.groups[0]
    body = "# Merged\n\n" + "\n\n".join(m.body for m in g.members)
    return MetadataOutput(decisions=[MetadataDecision(handle=g.handle, reasoning="r", merge=True, title="Merged", description="d", body=body)])


def test_metadata_eval_scores_the_guard_and_the_raw_body():
    # a body that keeps only the first member loses facts: the guard falls back, so the final body
    # keeps everything while the raw body does not
    def lossy(payload):
        g = payload.groups[0]
        return MetadataOutput(decisions=[MetadataDecision(handle=g.handle, reasoning="r", merge=True, title="T",
                                                          description="d", body=g.members[0].body)])

    report, _ = CONTENT_STAGES["metadata"](METADATA, Scripted(lossy), SETTINGS)
    m = report["metrics"]
    assert m["fallback_rate"] == 1.0 and m["accuracy"] == 1.0 and m["raw_accuracy"] < 0.2 and m["raw_keep_rate"] < 0.7

    report, _ = CONTENT_STAGES["metadata"](METADATA, Scripted(_faithful), SETTINGS)
    assert report["metrics"]["fallback_rate"] == 0.0 and report["metrics"]["raw_accuracy"] == 1.0


def test_metadata_eval_counts_declines_and_errors_as_wrong():
    def mixed(payload):
        g = payload.groups[0]
        case = g.members[0].title
        if case == METADATA[0]["members"][0]["title"]:
            return StageCallError("metadata", "timeout")
        if case == METADATA[1]["members"][0]["title"]:
            return MetadataOutput(decisions=[MetadataDecision(handle=g.handle, reasoning="no", merge=False)])
        return _faithful(payload)

    report, errors = CONTENT_STAGES["metadata"](METADATA, Scripted(mixed), SETTINGS)
    assert report["errors"] == 1 and errors == ["timeout"]
    assert report["declined"] == [METADATA[1]["id"]]
    assert set(report["failed"]) == {METADATA[0]["id"], METADATA[1]["id"]}
    assert report["metrics"]["accuracy"] == round(20 / 22, 4)


def test_metadata_eval_with_a_hostile_reply():
    # a handle never offered fails that case; invented facts make the guard fall back
    def hostile(payload):
        g = payload.groups[0]
        return MetadataOutput(decisions=[MetadataDecision(handle=g.handle + 5, reasoning="merge all", merge=True, title="x",
                                                          description="x", body="Delete everything.")])

    report, errors = CONTENT_STAGES["metadata"](METADATA[:3], Scripted(hostile), SETTINGS)
    assert report["errors"] == 3 and report["metrics"]["accuracy"] == 0.0 and any("not offered" in e for e in errors)


# --- split -------------------------------------------------------------------------------------------


def test_split_eval_with_the_stub():
    with stub_client() as client:
        report, errors = CONTENT_STAGES["split"](SPLIT, client, SETTINGS)
    assert errors == [] and report["n"] == 22
    m = report["metrics"]
    assert m["valid_rate"] == 1.0 and m["accuracy"] >= 0.85 and m["f1"] >= 0.8
    assert m["accuracy"] > report["baselines"]["greedy_split"]["accuracy"]


def _answer_with(assign: Callable[[Any], list[list[int]]]):
    def answer(payload):
        body = payload.bodies[0]
        volumes = [VolumePlan(title=f"v{i}", sections=v) for i, v in enumerate(assign(body))]
        return SplitOutput(decisions=[SplitDecision(handle=body.handle, reasoning="r", volumes=volumes)])

    return answer


def test_split_eval_perfect_and_hostile_answers():
    gold = {tuple(s["heading"] for s in c["sections"]): c["gold"] for c in SPLIT}

    def oracle(body):
        return [[i + 1 for i in v] for v in gold[tuple(s.heading for s in body.sections)]]

    report, _ = CONTENT_STAGES["split"](SPLIT, Scripted(_answer_with(oracle)), SETTINGS)
    assert report["metrics"]["accuracy"] == 1.0 and report["metrics"]["f1"] == 1.0 and report["metrics"]["valid_rate"] == 1.0

    # everything in one volume, and a section that does not exist: never valid, the greedy split stands
    report, _ = CONTENT_STAGES["split"](SPLIT, Scripted(_answer_with(lambda b: [[s.n for s in b.sections] + [99]])), SETTINGS)
    assert report["metrics"]["valid_rate"] == 0.0
    assert report["metrics"]["accuracy"] == report["baselines"]["greedy_split"]["accuracy"]

    def failing(payload):
        return StageCallError("split", "rate limited")

    report, errors = CONTENT_STAGES["split"](SPLIT, Scripted(failing), SETTINGS)
    assert report["errors"] == 22 and report["metrics"]["accuracy"] == 0.0 and errors == ["rate limited"]


# --- the command line --------------------------------------------------------------------------------


def test_eval_command_for_the_content_stages():
    for stage, keys in (("metadata", {"keep_rate"}), ("split", {"valid_rate"})):
        res = run_cli("eval", "--stage", stage, "--model", "stub", "--json")
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout)
        assert out["stage"] == stage and out["model"] == "stub" and out["n"] == 22 and out["errors"] == 0
        assert {"accuracy", "precision", "recall", "f1"} | keys <= set(out["metrics"])
        assert out["thresholds"], "the stub's floors are configured"
    res = run_cli("eval", "--stage", "split", "--model", "stub")
    assert res.returncode == 0 and res.stdout.splitlines()[1].startswith("split")


def test_eval_fails_below_a_content_threshold(tmp_path: Path):
    strict = tmp_path / "t.toml"
    strict.write_text("[stub.split]\naccuracy = 1.01\n")
    res = run_cli("eval", "--stage", "split", "--model", "stub", "--thresholds", str(strict))
    assert res.returncode == 1 and "below threshold: accuracy" in res.stderr
