"""The real-model path made to fit the model (issue 12 item 3, issue 13 items 1-2): sampling sent,
per-provider defaults, timeouts that scale and batches that shrink, unanswered items reported,
refusals not retried, fast honest failures for keys, URLs, unreachable servers and unknown models.

Every server here is a local one on 127.0.0.1 (tests/openai_server.py); nothing reaches the network.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from openai_server import FakeOpenAI, _forced_tool_name, fake_openai, hang_reply, status_reply, tool_reply  # noqa: F401 - fixture

from helpers import FIXTURES, NOW, REPO, copy_store, run_cli
from pipeline.config import LLMConfig
from pipeline.errors import UsageError
from pipeline.llm import StageCallError, make_client
from pipeline.llm.defaults import check_api_base, defaults_for, precheck_model
from pipeline.llm.retry import RetryPolicy
from pipeline.stages.base import ask_in_batches
from pipeline.stages.reorder import ReorderInput, ReorderOutput, ReorderPair

KEY = "sk-test-SECRET-realpath-7"
FAST = RetryPolicy(base_wait_s=0.01, max_wait_s=0.05, retry_after_cap_s=0.5)


def offered(body) -> list[int]:
    payload = json.loads(body["messages"][-1]["content"])
    return [i["handle"] for i in payload.get("pairs") or payload.get("items") or []]


def same_for_all(body):
    return tool_reply({"decisions": [{"handle": h, "reasoning": "moved", "same_meaning": True} for h in offered(body)]})


def client(srv: FakeOpenAI, tmp_path, **cfg):
    config = LLMConfig(model=srv.model(), api_base=srv.api_base, cache_dir=str(tmp_path / "cache"), **cfg)
    return make_client(config, api_key=KEY, retry=FAST)


def ask(c, n: int, batch: int, notes: list[str] | None = None):
    cases = [(f"k{i}", f"alpha {i} beta", f"beta {i} alpha") for i in range(n)]

    def payload(h, chunk):
        return ReorderInput(pairs=[ReorderPair(handle=h.handle(k), a=a, b=b) for k, a, b in chunk])

    return ask_in_batches(c, "reorder", cases, lambda x: x[0], batch, payload, ReorderOutput, lambda r: r.decisions, notes)


# --- sampling and per-provider defaults -------------------------------------------------------


def test_temperature_zero_and_max_tokens_are_sent_by_default_and_configurable(fake_openai, tmp_path):
    fake_openai.responder = same_for_all
    with client(fake_openai, tmp_path) as c:
        ask(c, 1, 1)
    with client(fake_openai, tmp_path, temperature=0.3, max_tokens=77) as c:
        ask(c, 1, 1)
    first, second = (r.body for r in fake_openai.requests)
    assert first["temperature"] == 0 and first["max_tokens"] == defaults_for("openai/fake", fake_openai.api_base).max_tokens
    assert second["temperature"] == 0.3 and second["max_tokens"] == 77
    assert fake_openai.count == 2  # the sampling settings are part of the cache key


def test_a_local_server_gets_one_request_at_a_time_and_one_item_per_call(fake_openai, tmp_path):
    local = LLMConfig(model="openai/qwen", api_base="http://127.0.0.1:8090/v1")
    hosted = LLMConfig(model="openai/gpt-4.1-mini")
    assert (local.concurrency, local.batch_size) == (1, 1)
    assert (hosted.concurrency, hosted.batch_size) == (8, 8)  # measured: pipeline/provider_defaults.py
    assert LLMConfig(model="ollama_chat/qwen2.5").concurrency == 1
    assert LLMConfig(model="openai/qwen", api_base="http://127.0.0.1:8090/v1", concurrency=3, batch_size=5).batch_size == 5
    fake_openai.responder = lambda body: tool_reply(same_for_all(body).payload, delay=0.05)
    with client(fake_openai, tmp_path) as c:
        answers, errors = ask(c, 4, c.concurrency and 4)
        c.structured_many("reorder", [ReorderInput(pairs=[ReorderPair(handle=1, a=f"x {i}", b=f"{i} x")]) for i in range(4)], ReorderOutput)
    assert fake_openai.max_in_flight == 1 and not errors and len(answers) == 4


def test_the_timeout_grows_with_the_prompt(fake_openai, tmp_path):
    with client(fake_openai, tmp_path, timeout_s=10, timeout_per_1k_chars_s=30) as c:
        small = c.request("reorder", ReorderInput(pairs=[ReorderPair(handle=1, a="a b", b="b a")]), ReorderOutput)
        big = c.request("reorder", ReorderInput(pairs=[ReorderPair(handle=1, a="word " * 1000, b="word " * 1000)]), ReorderOutput)
        chars = sum(len(m["content"]) for m in big.messages)
        assert c.backend.timeout_for(big) == pytest.approx(10 + 30 * chars / 1000)
        assert c.backend.timeout_for(big) > c.backend.timeout_for(small) + 250


# --- failures that shrink ---------------------------------------------------------------------


def test_a_batch_that_times_out_is_asked_again_in_halves(fake_openai, tmp_path):
    # The server is too slow for more than one pair at a time.
    fake_openai.responder = lambda body: hang_reply(1.5) if len(offered(body)) > 1 else same_for_all(body)
    with client(fake_openai, tmp_path, timeout_s=0.4, timeout_per_1k_chars_s=0, max_attempts=1, max_reasks=0, concurrency=4) as c:
        answers, errors = ask(c, 4, 4)
    sizes = sorted(len(offered(r.body)) for r in fake_openai.requests)
    assert sizes == [1, 1, 1, 1, 2, 2, 4]  # the batch of 4, its halves, their halves
    assert errors == [] and sorted(answers) == ["k0", "k1", "k2", "k3"]


def test_items_left_unanswered_are_reported(fake_openai, tmp_path):
    def first_only(body):
        hs = offered(body)
        return tool_reply({"decisions": [{"handle": hs[0], "reasoning": "x", "same_meaning": False}]})

    fake_openai.responder = first_only
    notes: list[str] = []
    with client(fake_openai, tmp_path, concurrency=1) as c:
        answers, errors = ask(c, 3, 3, notes)
    assert [len(offered(r.body)) for r in fake_openai.requests] == [3]
    assert sorted(answers) == ["k0"] and errors == []
    assert notes == ["the model left 2 of 3 items unanswered: no proposal for them"]


def test_unanswered_items_reach_the_plans_errors(fake_openai, tmp_path):
    def answers_nothing(body):
        return tool_reply({"decisions": []})

    fake_openai.responder = answers_nothing
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    res = run_cli("plan", str(store), "--json", "--now", NOW, "--model", fake_openai.model(), "--api-base", fake_openai.api_base,
                  "--cache-dir", str(tmp_path / "cache"), env={**os.environ, "OPENAI_API_KEY": KEY})
    assert res.returncode == 0, res.stderr
    errors = json.loads(res.stdout)["errors"]
    assert errors and {e["stage"] for e in errors} <= {"reorder", "conflicts", "rules"}
    assert all("unanswered" in e["message"] for e in errors)


def test_a_server_refusing_the_request_is_not_retried_and_says_why(fake_openai, tmp_path):
    message = ("1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
               "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}\n\n  File \"/srv/app.py\", line 376")
    fake_openai.responder = lambda body: status_reply(500, body={"error": {"message": message, "type": "internal_server_error"}})
    with client(fake_openai, tmp_path, max_attempts=3, mode="json_schema") as c:
        result = c.structured_many("reorder", [ReorderInput(pairs=[ReorderPair(handle=1, a="a b", b="b a")])], ReorderOutput)[0]
    assert fake_openai.count == 1
    assert isinstance(result, StageCallError)
    assert result.reason == "server refused the request (500): body.response_format.type: Input should be 'text' or 'json_object'"


def test_a_plain_server_error_is_still_retried(fake_openai, tmp_path):
    fake_openai.responder = lambda body: status_reply(500, body={"error": {"message": "out of memory", "type": "server_error"}})
    with client(fake_openai, tmp_path, max_attempts=2) as c:
        result = c.structured_many("reorder", [ReorderInput(pairs=[ReorderPair(handle=1, a="a b", b="b a")])], ReorderOutput)[0]
    assert fake_openai.count == 2 and isinstance(result, StageCallError) and result.reason == "server error 500 after 2 attempts"


# --- rules the model promotes from plain facts ------------------------------------------------


def test_a_rule_promoted_from_what_the_rules_call_a_fact_needs_the_user(fake_openai, tmp_path):
    def everything_is_a_rule(body):
        tool = _forced_tool_name(body)
        payload = json.loads(body["messages"][-1]["content"])
        if tool.startswith("Rule"):
            ds = [{"handle": i["handle"], "reasoning": "r", "standing_rule": True, "rule": i["text"]} for i in payload["items"]]
        else:
            ds = []
        return tool_reply({"decisions": ds})

    fake_openai.responder = everything_is_a_rule
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    res = run_cli("plan", str(store), "--json", "--now", NOW, "--model", fake_openai.model(), "--api-base", fake_openai.api_base,
                  "--cache-dir", str(tmp_path / "cache"), env={**os.environ, "OPENAI_API_KEY": KEY})
    assert res.returncode == 0, res.stderr
    rules = {a["targets"][0]: a for a in json.loads(res.stdout)["actions"] if a["kind"] == "promote_rule" and a["source"] == "llm:rules"}
    assert rules["ops/o001"]["needs_user"] and "plain fact" in rules["ops/o001"]["reason"]  # "Backups run nightly at 02:00."
    assert rules["ops/o007"]["needs_user"] is False  # "Never restart the database during business hours."


# --- failing fast and honestly (issue 13 items 1-2) -------------------------------------------


def test_a_missing_api_key_is_named_before_any_call(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UsageError, match=r"^model openai/gpt-4.1-mini needs credentials: set OPENAI_API_KEY in the environment$"):
        make_client(LLMConfig(model="openai/gpt-4.1-mini", no_cache=True))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    make_client(LLMConfig(model="openai/gpt-4.1-mini", no_cache=True)).close()


def test_a_missing_api_key_exits_2_with_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    res = run_cli("plan", str(store), "--now", NOW, "--model", "openai/gpt-4.1-mini", env=env)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [res.stderr.strip()] and "OPENAI_API_KEY" in res.stderr


@pytest.mark.parametrize("url", ["http//127.0.0.1:8090/v1", "127.0.0.1:8090", "http://127.0.0.1:99999/v1", "ftp://host/v1", "http:///v1", "http://h:port/v1"])
def test_a_malformed_api_base_is_rejected(url):
    with pytest.raises(ValueError, match="not a valid URL"):
        check_api_base(url)
    with pytest.raises(UsageError, match="not a valid URL"):
        make_client(LLMConfig(model="openai/qwen", api_base=url, no_cache=True))


def test_a_well_formed_api_base_is_kept():
    assert check_api_base("http://127.0.0.1:8090/v1") == "http://127.0.0.1:8090/v1"
    assert check_api_base("https://proxy.example.com") == "https://proxy.example.com"


def test_a_malformed_api_base_exits_2(tmp_path):
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    res = run_cli("plan", str(store), "--now", NOW, "--model", "openai/qwen", "--api-base", "http//127.0.0.1:8090")
    assert res.returncode == 2 and "not a valid URL" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_server_opens_the_circuit_for_the_rest_of_the_run(tmp_path, capsys):
    config = LLMConfig(model="openai/qwen", api_base=f"http://127.0.0.1:{_closed_port()}/v1", no_cache=True, max_attempts=2)
    payloads = [ReorderInput(pairs=[ReorderPair(handle=1, a=f"a {i}", b=f"{i} a")]) for i in range(3)]
    with make_client(config, api_key=KEY, retry=FAST) as c:
        first = c.structured_many("reorder", payloads[:1], ReorderOutput)[0]
        later = c.structured_many("conflicts", payloads[1:], ReorderOutput)
        calls = c.stats.llm_calls
    assert first.reason == "connection error after 2 attempts"
    assert all(r.reason.startswith("not called: openai/qwen at http://127.0.0.1:") for r in later)
    assert calls == 2  # the first call's two attempts, nothing after them
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "unreachable" in warnings[0] and "no more model calls" in warnings[0]


def test_an_unreachable_server_puts_the_stages_not_run_in_the_plan(tmp_path):
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    cfg = tmp_path / "c.toml"
    cfg.write_text("[llm]\nmax_attempts = 1\n")
    res = run_cli("plan", str(store), "--json", "--now", NOW, "--model", "openai/qwen", "--api-base",
                  f"http://127.0.0.1:{_closed_port()}/v1", "--config", str(cfg), "--no-cache")
    assert res.returncode == 0, res.stderr
    errors = {e["stage"]: e["message"] for e in json.loads(res.stdout)["errors"]}  # the plan lists them by stage
    assert errors.pop("reorder").startswith("connection error after 1 attempt")  # the first stage, where the call failed
    assert sorted(errors) == ["conflicts", "rules"]
    assert all(m.startswith("not run: openai/qwen at http://127.0.0.1:") for m in errors.values())
    assert res.stderr.count("warning:") == 1


def test_an_unknown_model_is_rejected_without_importing_litellm():
    code = (
        "import sys\n"
        "from pipeline.config import LLMConfig\nfrom pipeline.errors import UsageError\nfrom pipeline.llm import make_client\n"
        "try:\n    make_client(LLMConfig(model='no-such-model-xyz', no_cache=True))\nexcept UsageError as e:\n    print(e)\n"
        "precheck = __import__('pipeline.llm.defaults', fromlist=['x']).precheck_model\n"
        "precheck('openai/gpt-4.1-mini', None); precheck('anthropic/claude-sonnet-4-5', None); precheck('gpt-4.1-mini', None)\n"
        "print('litellm' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "unknown model 'no-such-model-xyz': litellm cannot tell its provider; write it as provider/name, e.g. "
        "openai/gpt-4.1-mini, ollama_chat/qwen2.5, or openai/<name> with --api-base",
        "False",
    ]


def test_precheck_leaves_unsure_cases_to_litellm():
    precheck_model("nosuchprovider/x", "http://127.0.0.1:1/v1")  # behind an api_base: litellm decides
    with pytest.raises(ValueError, match="unknown model"):
        precheck_model("nosuchprovider/x", None)


def test_local_models_read_the_local_prompts_where_a_stage_has_one(tmp_path):
    from openai_server import write_prompt

    from pipeline.llm import load_prompt

    write_prompt(tmp_path, "reorder", version="1", text="Default.")
    (tmp_path / "reorder.local.md").write_text("---\nstage: reorder\nversion: 1-local\n---\nWorked examples.\n")
    write_prompt(tmp_path, "rules", version="1", text="Rules default.")
    assert load_prompt("reorder", tmp_path, "local").text == "Worked examples."
    assert load_prompt("reorder", tmp_path, None).text == "Default."
    assert load_prompt("rules", tmp_path, "local").text == "Rules default."  # no local file: the stage's own
    assert LLMConfig(model="openai/qwen", api_base="http://127.0.0.1:8090/v1").prompt_set == "local"
    assert LLMConfig(model="openai/gpt-4.1-mini").prompt_set == ""
    assert LLMConfig(model="mock").prompt_set == "local"  # the prompts the recordings were made with (by a local model)
    for stage in ("reorder", "conflicts", "rules"):  # the shipped local prompts parse
        assert load_prompt(stage, None, "local").version.endswith("-local")
