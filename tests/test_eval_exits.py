"""`eval` exits honestly for any model: `[default.<stage>]` floors, a ceiling on errors, and a server
that fails every call (it answers 500, or refuses the connection) makes the run fail."""

import json
import os
import socket

from openai_server import _forced_tool_name, fake_openai, status_reply, tool_reply  # noqa: F401 - fixture

from helpers import REPO, run_cli
from pipeline.evaluate.thresholds import DEFAULT_MAX_ERROR_RATE, load_thresholds, thresholds_for, too_many_errors

REORDER = [json.loads(line) for line in (REPO / "evals" / "datasets" / "reorder.jsonl").read_text().splitlines() if line.strip()]
LABELS = {(c["a"], c["b"]): c["label"] for c in REORDER}


def _pairs(body) -> list[dict]:
    return json.loads(body["messages"][-1]["content"])["pairs"]


def _decide(body, verdict) -> object:
    assert _forced_tool_name(body).startswith("Reorder")
    decisions = [{"handle": p["handle"], "reasoning": "r", "same_meaning": verdict(p)} for p in _pairs(body)]
    return tool_reply({"decisions": decisions})


def _eval(srv, tmp_path, *extra: str, batch_size: int = 8):
    # One attempt per call, so a failing server fails fast; batches of 8 as a hosted model gets them
    # (a server on 127.0.0.1 would otherwise get one pair per call); the rest is the production path.
    config = tmp_path / "llm.toml"
    config.write_text(f"[llm]\nmax_attempts = 1\nbatch_size = {batch_size}\n")
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-eval-exits"}
    return run_cli("eval", "--model", "openai/fake", "--api-base", srv if isinstance(srv, str) else srv.api_base,
                   "--cache-dir", str(tmp_path / "cache"), "--config", str(config), *extra, env=env)


def test_a_model_without_its_own_table_gets_the_default_floors():
    table = load_thresholds()
    for stage in ("reorder", "conflict", "rule"):
        assert thresholds_for(table, "openai/qwen", stage) == table["default"][stage]
        assert thresholds_for(table, "openai/qwen", stage)["accuracy"] >= 0.5
    assert thresholds_for(table, "stub", "reorder") == table["stub"]["reorder"]  # its own table wins


def test_the_error_ceiling():
    assert DEFAULT_MAX_ERROR_RATE == 0.10
    assert too_many_errors(6, 60, {}) is None  # exactly 10 % is allowed
    line = too_many_errors(7, 60, {"accuracy": 0.5})
    assert line is not None and "7 of 60" in line and "10%" in line
    assert too_many_errors(60, 60, {"max_error_rate": 1.0}) is None


def test_a_server_that_answers_500_to_everything_fails_every_stage(fake_openai, tmp_path):
    fake_openai.responder = lambda body: status_reply(500)
    # every case of a stage in one batch: a failed call costs the same whatever its size, and this
    # is about every call failing, not about how many there are
    res = _eval(fake_openai, tmp_path, batch_size=100)
    assert res.returncode == 1, res.stdout + res.stderr
    assert fake_openai.count > 0
    for stage in ("reorder", "conflict", "rule", "metadata", "split"):
        assert f"{stage} (openai/fake): too many errors" in res.stderr
    assert "reorder (openai/fake): below threshold: accuracy 0.0 < 0.5217" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_server_that_refuses_connections_fails(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = _eval(f"http://127.0.0.1:{port}/v1", tmp_path, "--stage", "conflict")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "conflict (openai/fake): too many errors: 66 of 66 cases" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_model_no_better_than_the_seeds_fails_on_the_default_floor(fake_openai, tmp_path):
    fake_openai.responder = lambda body: _decide(body, lambda p: True)  # "same" for every pair: no errors
    res = _eval(fake_openai, tmp_path, "--stage", "reorder", "--json")
    assert res.returncode == 1
    report = json.loads(res.stdout)
    assert report["errors"] == 0 and report["thresholds"] == {"accuracy": 0.5217}
    assert "reorder (openai/fake): below threshold: accuracy" in res.stderr
    assert "too many errors" not in res.stderr


def test_a_good_model_passes_unless_it_errors_on_more_than_a_tenth(fake_openai, tmp_path):
    fake_openai.responder = lambda body: _decide(body, lambda p: LABELS[(p["a"], p["b"])])
    res = _eval(fake_openai, tmp_path, "--stage", "reorder", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["metrics"]["accuracy"] == 1.0

    # The same model, but the batch holding the first case fails: 8 of 69 cases (11.6 %) unanswered.
    first = (REORDER[0]["a"], REORDER[0]["b"])

    def one_batch_fails(body):
        if any((p["a"], p["b"]) == first for p in _pairs(body)):
            return status_reply(500)
        return _decide(body, lambda p: LABELS[(p["a"], p["b"])])

    fake_openai.responder = one_batch_fails
    res = _eval(fake_openai, tmp_path, "--stage", "reorder", "--no-cache")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "reorder (openai/fake): too many errors: 8 of 69 cases (12%), more than the 10% allowed" in res.stderr
    assert "below threshold" not in res.stderr  # 61 of 69 right is above the floor: the errors alone fail it


import pytest


@pytest.mark.parametrize(
    "stage, line, says",
    [
        ("reorder", '{"id": "r1", "stage": "reorder"}', "line 1: a must be a string"),
        ("reorder", '{"id": "r1", "stage": "reorder", "a": "x", "b": "y", "label": "yes"}', "line 1: label must be true or false"),
        ("reorder", '{"id": ["x"], "stage": "reorder", "a": "x", "b": "y", "label": true}', "line 1: a case needs at least id and stage"),
        ("rule", '{"id": "u1", "stage": "rule", "text": null, "label": true}', "line 1: text must be a string"),
        ("split", '{"id": "s1", "stage": "split", "cap": "x", "sections": "nope"}', "line 1: not a split case (cap: "),
        ("split", '{"id": "s1", "stage": "split", "cap": 5, "sections": [], "gold": []}', "line 1: not a split case (sections: "),
        ("split", '{"id": "s1", "stage": "split", "cap": 5, "sections": [{"heading": "h"}], "gold": [[0]]}',
         "line 1: not a split case (sections.0.body: field required)"),
        ("split", '{"id": "s1", "stage": "split", "cap": true, "sections": [{"heading": "h", "body": "b"}], "gold": [[0]]}',
         "line 1: not a split case (cap: "),
        ("metadata", '{"id": "m1", "stage": "metadata", "members": [1, 2]}', "line 1: not a metadata case (members.0: "),
        ("metadata", '{"id": "m1", "stage": "metadata", "members": [{"body": "x", "tags": "ops"}]}',
         "line 1: not a metadata case (members.0.tags: "),
        ("reorder", '{"id": "r1", "stage": "reorder", "a": ' + "[" * 100000 + "]" * 100000 + "}", "line 1: not valid JSON"),
    ],
)
def test_a_dataset_case_of_the_wrong_shape_is_a_usage_error_on_one_line(tmp_path, stage, line, says):
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(line + "\n")
    res = run_cli("eval", "--stage", stage, "--dataset", str(dataset), "--model", "stub")
    assert res.returncode == 2, res.stderr
    assert says in res.stderr and len(res.stderr.strip().splitlines()) == 1 and "internal error" not in res.stderr


def test_a_dataset_that_is_not_utf8_is_a_usage_error(tmp_path):
    dataset = tmp_path / "d.jsonl"
    dataset.write_bytes(b'{"id": "r1", "stage": "reorder", "a": "\xff"}\n')
    res = run_cli("eval", "--stage", "reorder", "--dataset", str(dataset), "--model", "stub")
    assert res.returncode == 2 and "not UTF-8" in res.stderr, res.stderr


def test_a_bug_in_a_content_stage_is_not_blamed_on_the_dataset(monkeypatch):
    """Shapes are checked as the cases are read; a KeyError the stage itself raises on a well-formed
    case is a bug to see (the CLI's internal error), not "a case is not a split case"."""
    from pipeline.config import Settings
    from pipeline.evaluate import content, run_eval

    def broken(cases, client, settings):
        return {}["a key the stage forgot"]

    monkeypatch.setitem(content.CONTENT_STAGES, "split", broken)
    with pytest.raises(KeyError, match="a key the stage forgot"):
        run_eval("split", None, Settings.model_validate({"llm": {"model": "stub"}}), client=None)
