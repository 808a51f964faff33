"""`memconsolidate eval`: the contract JSON, baselines, thresholds, errors counted as wrong, stale recordings."""

import json

from pipeline.evaluate.baselines import dream_contradiction, dream_duplicate, iii_token_set
from pipeline.evaluate.metrics import binary

from helpers import REPO, run_cli


def test_stub_eval_json_contract_and_baselines():
    res = run_cli("eval", "--stage", "reorder", "--model", "stub", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert {"stage", "model", "n", "metrics", "false_positives", "false_negatives", "errors", "baselines"} <= set(out)
    assert out["stage"] == "reorder" and out["model"] == "stub" and out["n"] >= 60
    assert set(out["metrics"]) == {"accuracy", "precision", "recall", "f1"}
    assert {"dream_overlap_60", "iii_token_set", "majority"} <= set(out["baselines"])
    # the seeds' rules call every reordering a duplicate: they are no better than a coin here
    assert out["baselines"]["iii_token_set"]["accuracy"] < 0.6
    assert out["metrics"]["accuracy"] > out["baselines"]["dream_overlap_60"]["accuracy"]


def test_all_stages_with_the_stub_pass_their_thresholds():
    res = run_cli("eval", "--model", "stub")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "below threshold" not in res.stdout


def test_a_threshold_above_the_score_fails(tmp_path):
    strict = tmp_path / "t.toml"
    strict.write_text("[stub.reorder]\naccuracy = 1.01\n")
    res = run_cli("eval", "--stage", "reorder", "--model", "stub", "--thresholds", str(strict))
    assert res.returncode == 1
    assert "below threshold: accuracy" in res.stderr


def test_stale_recordings_fail_naming_the_stage(tmp_path):
    import os

    env = {**os.environ, "MEMCONSOLIDATE_RECORDINGS": str(tmp_path / "empty")}
    res = run_cli("eval", "--stage", "conflict", "--model", "mock", env=env)
    assert res.returncode == 1
    assert "conflict: the mock's recordings are missing or stale" in res.stderr
    assert "--stage conflict --record" in res.stderr


def test_committed_recordings_replay_in_ci():
    res = run_cli("eval", "--model", "mock", "--json")
    assert res.returncode == 0, res.stderr
    reports = {r["stage"]: r for r in json.loads(res.stdout)}
    assert {"reorder", "conflict", "rule"} <= set(reports)
    assert "no recorded reply" not in res.stderr


def test_errors_count_as_wrong():
    cases = [{"id": "a", "label": True}, {"id": "b", "label": False}, {"id": "c", "label": True}]
    report = binary(cases, {"a": True, "b": None})
    assert report["errors"] == 2
    assert report["metrics"]["accuracy"] == round(1 / 3, 4)
    assert report["false_positives"] == ["b"] and report["false_negatives"] == ["c"]


def test_seed_baselines_behave_like_the_seeds():
    assert dream_duplicate("Alice manages Bob daily", "Bob manages Alice daily")
    assert iii_token_set("The deploy runs on Fridays", "On Fridays the deploy runs")
    assert not iii_token_set("always publishes", "never publishes")
    # dream's contradiction rule needs 40-60 % overlap plus a negation pair
    assert dream_contradiction("always use tabs for yaml indentation", "never use tabs in python code")
    assert not dream_contradiction("always use tabs", "always use tabs")


def test_bad_dataset_is_a_usage_error(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text("{not json\n")
    res = run_cli("eval", "--stage", "reorder", "--dataset", str(bad), "--model", "stub")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert (REPO / "evals" / "datasets" / "reorder.jsonl").exists()


def test_the_mocks_floors_catch_a_stage_that_reads_replies_differently(monkeypatch):
    """The recordings are a real model's answers and the mock's floors sit just under what they
    score, so a stage that misreads the same replies (here: the reorder verdict taken the wrong way
    round) fails `eval --model mock`, where the old floors (0.04) let anything through."""
    from pipeline.evaluate import judges

    honest = judges.BINARY_JUDGES["reorder"]

    def misread(client, cases, batch_size):
        answers, errors = honest(client, cases, batch_size)
        return {k: (None if v is None else not v) for k, v in answers.items()}, errors

    assert run_cli("eval", "--stage", "reorder", "--model", "mock").returncode == 0
    monkeypatch.setitem(judges.BINARY_JUDGES, "reorder", misread)
    res = run_cli("eval", "--stage", "reorder", "--model", "mock")
    assert res.returncode == 1
    assert "below threshold" in res.stderr
