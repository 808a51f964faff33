"""The real path: make_client -> instructor -> litellm -> HTTP -> a fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import json
import logging
import unicodedata
from pathlib import Path

import pytest
from pydantic import BaseModel

from openai_server import (
    FakeOpenAI,
    Reply,
    content_reply,
    fake_openai,  # noqa: F401 - fixture
    hang_reply,
    status_reply,
    tool_reply,
    write_prompt,
)
from pipeline.config import LLMConfig
from pipeline.llm import BudgetExceeded, RetryPolicy, StageCallError, make_client

from openai_server import wait_until  # noqa: E402

KEY = "sk-test-SECRET123"
FAST = RetryPolicy(base_wait_s=0.01, max_wait_s=0.05, retry_after_cap_s=0.5)


class Pair(BaseModel):
    a: str
    b: str


class Verdict(BaseModel):
    same: bool
    why: str


GOOD = {"same": True, "why": "both say the same"}


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    write_prompt(folder, "reorder", version="1", text="Decide whether A and B mean the same.")
    return folder


def client_for(srv: FakeOpenAI, tmp_path: Path, prompts: Path, retry: RetryPolicy = FAST, api_key: str | None = KEY, **cfg):
    cfg.setdefault("model", srv.model())
    cfg.setdefault("api_base", srv.api_base)
    cfg.setdefault("cache_dir", str(tmp_path / "cache"))
    cfg.setdefault("timeout_s", 2.0)
    cfg.setdefault("concurrency", 1)
    client = make_client(LLMConfig(**cfg), api_key=api_key, prompts_dir=prompts, retry=retry)
    assert client is not None
    return client


def pairs(n: int) -> list[Pair]:
    return [Pair(a=f"alpha {i}", b=f"beta {i}") for i in range(n)]


def test_tool_call_reply_is_parsed_and_the_request_is_what_the_design_says(fake_openai, tmp_path, prompts):
    fake_openai.script(tool_reply(GOOD, prompt_tokens=30, completion_tokens=9))
    with client_for(fake_openai, tmp_path, prompts) as client:
        decomposed = unicodedata.normalize("NFD", "café")
        reply = client.structured("reorder", Pair(b="x", a=decomposed), Verdict)
        stats = client.stats
    assert reply == Verdict(**GOOD)
    assert (stats.llm_calls, stats.cache_hits, stats.prompt_tokens, stats.completion_tokens) == (1, 0, 30, 9)
    assert stats.cost_usd == 0.0  # a local model has no price
    (req,) = fake_openai.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"  # the key goes to the server, and only there
    assert req.body["model"] == "fake"
    assert req.body["tool_choice"]["function"]["name"] == "Verdict"  # tools mode: the default with api_base
    system, user = req.messages[0], req.messages[1]
    assert system["role"] == "system" and system["content"].startswith("Decide whether A and B mean the same.")
    # the payload as canonical JSON: sorted keys, NFC, no whitespace
    assert user == {"role": "user", "content": '{"a":"café","b":"x"}'}
    assert user["content"] == unicodedata.normalize("NFC", user["content"])


@pytest.mark.parametrize("mode", ["json", "md_json", "json_schema"])
def test_content_modes_parse_a_json_content_reply(fake_openai, tmp_path, prompts, mode):
    body = json.dumps(GOOD)
    fake_openai.script(content_reply(f"```json\n{body}\n```" if mode == "md_json" else body))
    with client_for(fake_openai, tmp_path, prompts, mode=mode) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict) == Verdict(**GOOD)
    (req,) = fake_openai.requests
    assert "tools" not in req.body
    if mode == "json":
        assert req.body["response_format"]["type"] == "json_object"
    if mode == "json_schema":
        assert req.body["response_format"]["type"] == "json_schema"


def recording_sleeps(policy: RetryPolicy = FAST) -> tuple[RetryPolicy, list[float]]:
    """`policy` with its waits recorded (and not slept): what the retry layer chose, with no clock."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return dataclasses.replace(policy, sleep=sleep), waits


def test_429_is_retried_honouring_retry_after(fake_openai, tmp_path, prompts):
    fake_openai.script(status_reply(429, retry_after=0.3), tool_reply(GOOD))
    policy, waits = recording_sleeps()
    with client_for(fake_openai, tmp_path, prompts, retry=policy) as client:
        reply = client.structured("reorder", pairs(1)[0], Verdict)
    assert reply.same is True
    assert fake_openai.count == 2
    assert waits == [0.3]  # the server's Retry-After, not the 0.01 s backoff


def test_retry_after_is_capped(fake_openai, tmp_path, prompts):
    fake_openai.script(status_reply(429, retry_after=120), tool_reply(GOOD))
    policy, waits = recording_sleeps()
    with client_for(fake_openai, tmp_path, prompts, retry=policy) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict).same is True
    assert waits == [0.5]  # capped at 0.5 s, not two minutes


def test_rate_limit_that_persists_stops_at_the_attempt_cap(fake_openai, tmp_path, prompts):
    fake_openai.script(*[status_reply(429, retry_after=0) for _ in range(6)])
    with client_for(fake_openai, tmp_path, prompts, max_attempts=3) as client:
        with pytest.raises(StageCallError) as err:
            client.structured("reorder", pairs(1)[0], Verdict)
    assert err.value.stage == "reorder"
    assert err.value.reason == "rate limited after 3 attempts"
    assert fake_openai.count == 3  # no hidden retries in litellm or the openai SDK


def test_500_is_retried_then_succeeds_and_persisting_500_stops_at_the_cap(fake_openai, tmp_path, prompts):
    fake_openai.script(status_reply(500), status_reply(503), tool_reply(GOOD))
    with client_for(fake_openai, tmp_path, prompts, max_attempts=3) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict).same is True
        assert fake_openai.count == 3
        fake_openai.reset()
        fake_openai.script(*[status_reply(500) for _ in range(5)])
        with pytest.raises(StageCallError, match="^reorder: server error 500 after 3 attempts$"):
            client.structured("reorder", pairs(2)[1], Verdict)
        assert fake_openai.count == 3


def test_attempt_cap_comes_from_settings(fake_openai, tmp_path, prompts):
    fake_openai.script(*[status_reply(502) for _ in range(5)])
    with client_for(fake_openai, tmp_path, prompts, max_attempts=2) as client:
        result = client.structured_many("reorder", pairs(1), Verdict)
    assert isinstance(result[0], StageCallError)
    assert result[0].reason == "server error 502 after 2 attempts"
    assert fake_openai.count == 2


def test_client_errors_are_not_retried_and_never_show_the_key(fake_openai, tmp_path, prompts, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}}
    fake_openai.script(status_reply(401, body=echo), status_reply(400, body=echo))
    with client_for(fake_openai, tmp_path, prompts) as client:
        results = client.structured_many("reorder", pairs(2), Verdict)
    assert [r.reason for r in results] == ["authentication failed (401)", "request rejected (400)"]
    assert fake_openai.count == 2  # one each: not retryable
    out, err = capfd.readouterr()
    everything = out + err + caplog.text + " ".join(str(r) for r in results)
    assert "SECRET123" not in everything


def test_an_invalid_reply_is_re_asked_and_the_second_answer_is_used(fake_openai, tmp_path, prompts):
    fake_openai.script(tool_reply({"same": "perhaps"}), tool_reply(GOOD))
    with client_for(fake_openai, tmp_path, prompts, max_reasks=1) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict) == Verdict(**GOOD)
        stats = client.stats
    assert fake_openai.count == 2
    # the re-ask tells the model what was wrong
    assert len(fake_openai.requests[1].messages) > len(fake_openai.requests[0].messages)
    # each request counts, as the budget counts it: the re-ask too
    assert (stats.llm_calls, stats.prompt_tokens, stats.completion_tokens) == (2, 22, 14)


def test_a_reply_that_stays_invalid_fails_soft(fake_openai, tmp_path, prompts):
    fake_openai.script(tool_reply("{not json"), tool_reply({"same": "perhaps"}), tool_reply(GOOD))
    with client_for(fake_openai, tmp_path, prompts, max_reasks=1) as client:
        results = client.structured_many("reorder", pairs(2), Verdict)
        stats = client.stats
    assert isinstance(results[0], StageCallError)
    assert results[0].reason == "reply invalid after 2 attempts: same, why"
    assert results[1] == Verdict(**GOOD)  # the next call is unaffected
    assert fake_openai.count == 3  # invalid replies are re-asked by instructor, never retried by tenacity
    assert (stats.llm_calls, stats.prompt_tokens, stats.completion_tokens) == (3, 33, 21)  # failed requests count


def test_a_reply_without_the_tool_call_fails_soft(fake_openai, tmp_path, prompts):
    fake_openai.script(content_reply("I think they are the same."), content_reply("Still prose."))
    with client_for(fake_openai, tmp_path, prompts, max_reasks=1) as client:
        with pytest.raises(StageCallError, match=r"^reorder: reply invalid after 2 attempts"):
            client.structured("reorder", pairs(1)[0], Verdict)


def test_a_hang_past_the_timeout_fails_soft_in_bounded_time(fake_openai, tmp_path, prompts):
    fake_openai.script(hang_reply(30), hang_reply(30), hang_reply(30))
    # timeout_per_1k_chars_s=0: the bound is timeout_s alone (a server on 127.0.0.1 gets the local
    # defaults, 60 s per 1000 characters sent, which would make each attempt wait seconds)
    with client_for(fake_openai, tmp_path, prompts, timeout_s=0.4, timeout_per_1k_chars_s=0, max_attempts=2,
                    max_reasks=0) as client:
        result = client.structured_many("reorder", pairs(1), Verdict)[0]
        # Bounded by the client's own timeout, not by the server: both requests are still hanging
        # (30 s each) when the call has returned. Had the client waited them out, the reason
        # would be the 500 the hang ends with; the default 60 s timeout would do exactly that.
        assert fake_openai.in_flight == 2
    assert isinstance(result, StageCallError)
    assert result.reason == "timeout after 2 attempts"
    assert fake_openai.count == 2


def test_a_timeout_is_retried(fake_openai, tmp_path, prompts):
    fake_openai.script(hang_reply(30), tool_reply(GOOD))
    # the retry must itself finish within the timeout, however loaded the machine: 2 s, not 0.4
    # (and nothing per character sent, which would make the first, hanging, attempt wait seconds)
    with client_for(fake_openai, tmp_path, prompts, timeout_s=2.0, timeout_per_1k_chars_s=0) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict).same is True
    assert fake_openai.count == 2


def test_latency_within_the_timeout_is_fine_and_calls_run_concurrently(fake_openai, tmp_path, prompts):
    def responder(body):
        # The first three answers wait until all three requests are in (never more than 10 s), so
        # they overlap however slowly a loaded machine sends them; then 0.1 s of latency each.
        wait_until(lambda: fake_openai.in_flight >= 3 or fake_openai.count > 3, timeout=10)
        return tool_reply({"same": "alpha 0" in json.dumps(body["messages"][-1]), "why": "echo"}, delay=0.1)

    fake_openai.responder = responder
    with client_for(fake_openai, tmp_path, prompts, concurrency=3, timeout_s=30.0) as client:
        results = client.structured_many("reorder", pairs(6), Verdict)
    assert [r.same for r in results] == [True, False, False, False, False, False]  # in payload order
    assert fake_openai.count == 6
    # concurrent (three requests were being answered at one moment) and bounded (never more)
    assert fake_openai.max_in_flight == 3


def test_second_run_makes_zero_requests_and_no_cache_asks_again(fake_openai, tmp_path, prompts):
    fake_openai.responder = lambda body: tool_reply(GOOD)
    with client_for(fake_openai, tmp_path, prompts) as client:
        first = client.structured_many("reorder", pairs(3), Verdict)
        assert client.stats.llm_calls == 3
    assert fake_openai.count == 3
    with client_for(fake_openai, tmp_path, prompts) as client:  # a new process would see the same
        second = client.structured_many("reorder", pairs(3), Verdict)
        stats = client.stats
    assert second == first
    assert fake_openai.count == 3  # zero new requests
    assert (stats.llm_calls, stats.cache_hits, stats.prompt_tokens) == (0, 3, 0)
    with client_for(fake_openai, tmp_path, prompts, no_cache=True) as client:
        client.structured_many("reorder", pairs(3), Verdict)
        assert client.stats.cache_hits == 0
    assert fake_openai.count == 6


def test_the_cache_is_shared_with_another_process(fake_openai, tmp_path, prompts):
    import subprocess
    import sys

    fake_openai.responder = lambda body: tool_reply(GOOD)
    with client_for(fake_openai, tmp_path, prompts) as client:
        client.structured_many("reorder", pairs(2), Verdict)
    assert fake_openai.count == 2
    # Another interpreter (its own hash seed, its own diskcache connection) asks the same two
    # payloads: both are served from the cache. It only ever reads the cache, so it stands a
    # small module in for litellm (make_client asks litellm for the provider; importing the real
    # one costs seconds); a miss there would call into the stand-in and fail the call.
    code = f"""
import json, sys, types
stand_in = types.ModuleType("litellm")
stand_in.get_llm_provider = lambda model, api_base=None: (model.split("/", 1)[1], model.split("/", 1)[0], None, api_base)
sys.modules["litellm"] = stand_in
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_llm_server import Pair, Verdict, pairs, FAST
from pipeline.config import LLMConfig
from pipeline.llm import make_client
config = LLMConfig(model={fake_openai.model()!r}, api_base={fake_openai.api_base!r}, cache_dir={str(tmp_path / "cache")!r})
with make_client(config, prompts_dir={str(prompts)!r}, retry=FAST) as client:
    replies = client.structured_many("reorder", pairs(2), Verdict)
    print(json.dumps([type(r).__name__ for r in replies]))
    print(client.stats.model_dump_json())
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    names, stats = run.stdout.strip().splitlines()
    assert json.loads(names) == ["Verdict"] * 2
    assert json.loads(stats)["cache_hits"] == 2 and json.loads(stats)["llm_calls"] == 0
    assert fake_openai.count == 2  # the other process asked nothing
    # and here, with a new payload beside them: only the new payload is asked
    with client_for(fake_openai, tmp_path, prompts) as client:
        assert all(isinstance(r, Verdict) for r in client.structured_many("reorder", pairs(3), Verdict))
        assert (client.stats.cache_hits, client.stats.llm_calls) == (2, 1)
    assert fake_openai.count == 3


def test_failures_are_not_cached(fake_openai, tmp_path, prompts):
    fake_openai.script(status_reply(500), tool_reply(GOOD))
    with client_for(fake_openai, tmp_path, prompts, max_attempts=1) as client:
        assert isinstance(client.structured_many("reorder", pairs(1), Verdict)[0], StageCallError)
        assert client.structured("reorder", pairs(1)[0], Verdict).same is True
    assert fake_openai.count == 2


def test_cache_key_covers_prompt_version_model_and_schema(fake_openai, tmp_path, prompts):
    class Verdict2(BaseModel):
        same: bool
        why: str
        confidence: float = 0.5

    fake_openai.responder = lambda body: tool_reply(GOOD)
    with client_for(fake_openai, tmp_path, prompts) as client:
        client.structured("reorder", pairs(1)[0], Verdict)
        client.structured("reorder", pairs(1)[0], Verdict2)  # another schema
    assert fake_openai.count == 2
    with client_for(fake_openai, tmp_path, prompts, model=fake_openai.model("other")) as client:
        client.structured("reorder", pairs(1)[0], Verdict)  # another model
    assert fake_openai.count == 3
    write_prompt(prompts, "reorder", version="2", text="Decide whether A and B mean the same.")
    with client_for(fake_openai, tmp_path, prompts) as client:
        client.structured("reorder", pairs(1)[0], Verdict)  # a new prompt version
    assert fake_openai.count == 4
    with client_for(fake_openai, tmp_path, prompts) as client:
        client.structured("reorder", pairs(1)[0], Verdict)
        assert client.stats.cache_hits == 1
    assert fake_openai.count == 4


def test_no_secret_anywhere_in_the_cache_or_recordings(fake_openai, tmp_path, prompts):
    fake_openai.responder = lambda body: tool_reply(GOOD)
    # A key in the server address's query string (some proxies want that) must not leak either.
    base_with_credentials = fake_openai.api_base + "?api_key=q-SECRET789"
    cache = tmp_path / "cache"
    recordings = tmp_path / "recordings"
    config = LLMConfig(model=fake_openai.model(), api_base=base_with_credentials, cache_dir=str(cache), concurrency=1)
    for _ in range(2):
        client = make_client(config, api_key=KEY, prompts_dir=prompts, retry=FAST, record=True, recordings=recordings)
        assert client is not None
        with client:
            assert all(isinstance(r, Verdict) for r in client.structured_many("reorder", pairs(3), Verdict))
        fake_openai.script(status_reply(401, body={"error": {"message": f"bad key {KEY}"}}))
        with make_client(config.model_copy(update={"no_cache": True}), api_key=KEY, prompts_dir=prompts, retry=FAST) as failing:
            failing.structured_many("reorder", pairs(1), Verdict)
    files = [p for p in [*cache.rglob("*"), *recordings.rglob("*")] if p.is_file()]
    assert any(p.suffix == ".db" for p in files) and (recordings / "reorder.jsonl").is_file()
    for path in files:
        data = path.read_bytes()
        for secret in (b"SECRET123", b"SECRET789"):
            assert secret not in data, (path, secret)
    assert (cache / "replies-v1").stat().st_mode & 0o777 == 0o700
    assert len((recordings / "reorder.jsonl").read_text().splitlines()) == 3  # the second run adds no duplicates


def test_call_budget_stops_calls_before_they_are_made(fake_openai, tmp_path, prompts):
    fake_openai.responder = lambda body: tool_reply(GOOD)
    with client_for(fake_openai, tmp_path, prompts, max_calls=2) as client:
        results = client.structured_many("reorder", pairs(4), Verdict)
        assert [type(r).__name__ for r in results] == ["Verdict", "Verdict", "BudgetExceeded", "BudgetExceeded"]
        assert results[2].reason == "call budget reached (max_calls=2)"
        assert isinstance(client.exhausted, BudgetExceeded)
        assert client.stats.llm_calls == 2
        # cached replies are free: still served after the budget is spent
        assert client.structured("reorder", pairs(4)[0], Verdict).same is True
        with pytest.raises(BudgetExceeded):
            client.structured("reorder", Pair(a="new", b="one"), Verdict)
    assert fake_openai.count == 2


def test_cost_budget_stops_calls_once_spent(fake_openai, tmp_path, prompts):
    # A priced model name served by the fake server: litellm prices the echoed "gpt-4o-mini" usage.
    fake_openai.responder = lambda body: tool_reply(GOOD, prompt_tokens=1000, completion_tokens=1000)
    with client_for(fake_openai, tmp_path, prompts, model="openai/gpt-4o-mini", max_cost=0.0001) as client:
        results = client.structured_many("reorder", pairs(3), Verdict)
        stats = client.stats
    assert isinstance(results[0], Verdict)
    assert isinstance(results[1], BudgetExceeded) and isinstance(results[2], BudgetExceeded)
    assert "cost budget reached" in results[1].reason
    assert stats.cost_usd > 0.0001
    assert fake_openai.count == 1


def test_connection_refused_fails_soft(tmp_path, prompts):
    srv = FakeOpenAI()
    base = srv.api_base
    srv.close()  # nothing listens on that port any more
    config = LLMConfig(model="openai/fake", api_base=base, cache_dir=str(tmp_path / "c"), max_attempts=2)
    with make_client(config, api_key=KEY, prompts_dir=prompts, retry=FAST) as client:
        result = client.structured_many("reorder", pairs(1), Verdict)[0]
    assert isinstance(result, StageCallError)
    assert result.reason == "connection error after 2 attempts"


def test_reply_script_helpers_build_openai_shapes():
    # guards the fake server itself: the shapes the tests above rely on
    from openai_server import _completion

    tool = _completion({"model": "m", "tool_choice": {"type": "function", "function": {"name": "X"}}}, tool_reply({"k": 1}))
    assert tool["choices"][0]["message"]["tool_calls"][0]["function"] == {"name": "X", "arguments": '{"k": 1}'}
    text = _completion({"model": "m"}, content_reply("hi"))
    assert text["choices"][0]["message"]["content"] == "hi"
    assert isinstance(status_reply(429, retry_after=2), Reply) and status_reply(429, retry_after=2).headers == {"Retry-After": "2"}


# --- litellm's own mock_response: the production path with no HTTP at all -------------------------


def mocked(tmp_path: Path, prompts: Path, mode: str = "json", **kwargs):
    # timeout_per_1k_chars_s=0: a timeout (mock_timeout) waits 0.5 s, not that plus 5 s per 1000 characters
    config = LLMConfig(model="openai/gpt-4o-mini", mode=mode, no_cache=True, max_attempts=2, timeout_s=0.5,
                       timeout_per_1k_chars_s=0)
    client = make_client(config, api_key=KEY, prompts_dir=prompts, retry=FAST, litellm_kwargs=kwargs)
    assert client is not None
    return client


def test_litellm_mock_response_parses_and_is_priced(tmp_path, prompts):
    with mocked(tmp_path, prompts, mock_response=json.dumps(GOOD)) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict) == Verdict(**GOOD)
        stats = client.stats
    assert stats.llm_calls == 1 and stats.prompt_tokens > 0 and stats.cost_usd > 0  # a priced model


def test_litellm_mock_tool_call_in_tools_mode(tmp_path, prompts):
    call = {"id": "c1", "type": "function", "function": {"name": "Verdict", "arguments": json.dumps(GOOD)}}
    with mocked(tmp_path, prompts, mode="tools", mock_response="", mock_tool_calls=[call]) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict) == Verdict(**GOOD)


@pytest.mark.parametrize(
    ("injected", "reason"),
    [
        ("litellm.RateLimitError", "rate limited after 2 attempts"),
        ("litellm.InternalServerError", "server error 500 after 2 attempts"),
        ("litellm.ContextWindowExceededError", "request rejected (400)"),
    ],
)
def test_litellm_injected_errors_are_classified(tmp_path, prompts, injected, reason):
    with mocked(tmp_path, prompts, mock_response=injected) as client:
        result = client.structured_many("reorder", pairs(1), Verdict)[0]
    assert isinstance(result, StageCallError) and result.reason == reason


def test_litellm_mock_timeout_is_a_timeout(tmp_path, prompts):
    with mocked(tmp_path, prompts, mock_response=json.dumps(GOOD), mock_timeout=True) as client:
        result = client.structured_many("reorder", pairs(1), Verdict)[0]
    assert isinstance(result, StageCallError) and result.reason == "timeout after 2 attempts"


def test_litellm_params_are_part_of_the_cache_key_but_secrets_are_not(tmp_path, prompts, monkeypatch):
    from pipeline.llm.client import public_params

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert public_params({"temperature": 0, "extra_headers": {"Authorization": "x"}, "api_key": "k"}) == {"temperature": 0}
    with FakeOpenAI() as srv:
        srv.responder = lambda body: tool_reply(GOOD)
        for temperature in (0, 0, 0.5):
            config = LLMConfig(model=srv.model(), api_base=srv.api_base, cache_dir=str(tmp_path / "cache"))
            with make_client(config, prompts_dir=prompts, retry=FAST, litellm_kwargs={"temperature": temperature}) as client:
                client.structured("reorder", pairs(1)[0], Verdict)
        assert srv.count == 2
        assert srv.requests[0].body["temperature"] == 0 and srv.requests[1].body["temperature"] == 0.5
        # no key given and none in the environment: a local server still gets a (dummy) one
        assert srv.requests[0].headers["authorization"] == "Bearer no-key-needed"
