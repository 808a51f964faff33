"""Every request the provider sees goes through the budget: a call's transient retries (429, 5xx,
timeouts) and instructor's re-asks of a schema-invalid reply count against `--max-calls`, the
fleet's shared budget and its `--rpm`, as the call's first request does; one the budget refuses is
never sent. A fake OpenAI server on 127.0.0.1 counts what was sent."""

from __future__ import annotations

import json
import os

from test_llm_server import GOOD, Verdict, client_for, pairs, prompts, recording_sleeps  # noqa: F401 - prompts is a fixture

from fleet_helpers import CountingMeter, lines
from helpers import FIXTURES, NOW, copy_store, run_cli
from openai_server import fake_openai, status_reply, tool_reply  # noqa: F401 - fake_openai is a fixture
from pipeline.fleet.budget import Ledger, Limits, _Shared, start_state
from pipeline.llm import BudgetExceeded
from pipeline.llm.meter import installed

INVALID = {"why": "no verdict"}  # `same` is missing: instructor re-asks


# --- the client: a transient retry and a re-ask are requests the budget counts --------------------


def test_a_retried_call_counts_each_request_against_max_calls(fake_openai, tmp_path, prompts):
    # 429, then a reply: two requests for the first call, and a budget of 2 leaves none for a second.
    fake_openai.script(status_reply(429, retry_after=0))
    fake_openai.responder = lambda body: tool_reply(GOOD)
    policy, _ = recording_sleeps()
    with client_for(fake_openai, tmp_path, prompts, retry=policy, max_calls=2) as client:
        results = client.structured_many("reorder", pairs(2), Verdict)
        stats = client.stats
    assert isinstance(results[0], Verdict)
    assert isinstance(results[1], BudgetExceeded) and results[1].reason == "call budget reached (max_calls=2)"
    assert fake_openai.count == 2 and stats.llm_calls == 2


def test_a_retry_the_budget_refuses_is_never_sent_and_stops_the_call_as_a_refusal(fake_openai, tmp_path, prompts):
    fake_openai.responder = lambda body: status_reply(503)
    policy, waits = recording_sleeps()
    with client_for(fake_openai, tmp_path, prompts, retry=policy, max_calls=1, max_attempts=3) as client:
        result = client.structured_many("reorder", pairs(1), Verdict)[0]
        assert isinstance(client.exhausted, BudgetExceeded)
    assert isinstance(result, BudgetExceeded) and result.reason == "call budget reached (max_calls=1)"
    assert fake_openai.count == 1 and len(waits) == 1  # the backoff was waited, the retry then refused


def test_a_re_asked_invalid_reply_counts_as_two_requests(fake_openai, tmp_path, prompts):
    fake_openai.script(tool_reply(INVALID), tool_reply(GOOD))
    with client_for(fake_openai, tmp_path, prompts, max_reasks=1) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict) == Verdict(**GOOD)
        assert client.stats.llm_calls == 2
    assert fake_openai.count == 2
    # with a budget of one request, the re-ask is refused: its invalid reply's tokens still count
    fake_openai.reset()
    fake_openai.script(tool_reply(INVALID, prompt_tokens=40, completion_tokens=5), tool_reply(GOOD))
    with client_for(fake_openai, tmp_path, prompts, max_reasks=1, max_calls=1, no_cache=True) as client:
        result = client.structured_many("reorder", pairs(1), Verdict)[0]
        stats = client.stats
    assert isinstance(result, BudgetExceeded) and result.reason == "call budget reached (max_calls=1)"
    assert fake_openai.count == 1 and (stats.llm_calls, stats.prompt_tokens, stats.completion_tokens) == (1, 40, 5)


def test_the_shared_meter_is_asked_before_every_request_and_its_refusal_of_a_retry_sends_nothing(fake_openai, tmp_path, prompts):
    fake_openai.script(status_reply(429, retry_after=0), tool_reply(INVALID))
    fake_openai.responder = lambda body: tool_reply(GOOD)
    policy, _ = recording_sleeps()
    meter = CountingMeter(allow=10**6)
    with installed(meter), client_for(fake_openai, tmp_path, prompts, retry=policy, max_reasks=1) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict) == Verdict(**GOOD)
    assert fake_openai.count == meter.reserved == 3  # 429, the retry (invalid), its re-ask
    fake_openai.reset()
    fake_openai.script(status_reply(429, retry_after=0))
    refusing = CountingMeter(allow=1)
    with installed(refusing), client_for(fake_openai, tmp_path, prompts, retry=policy, no_cache=True) as client:
        result = client.structured_many("reorder", pairs(1), Verdict)[0]
    assert isinstance(result, BudgetExceeded) and result.reason == "the fleet says no"
    assert fake_openai.count == 1


def test_a_retry_waits_for_its_rate_limit_slot(fake_openai, tmp_path, prompts):
    # The clock stands still: the ledger gives the first request the slot now and the next one
    # 60/rpm seconds later, which the client sleeps (asyncio). The retry's backoff is not slept
    # (recorded only), so only that slot can space the two requests.
    fake_openai.script(status_reply(429, retry_after=0))
    fake_openai.responder = lambda body: tool_reply(GOOD)
    policy, _ = recording_sleeps()
    ledger = Ledger(Limits(rpm=120), start_state(Limits(), _Shared()), clock=lambda: 0.0)
    with installed(ledger), client_for(fake_openai, tmp_path, prompts, retry=policy) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict) == Verdict(**GOOD)
    first, retry = fake_openai.requests
    assert ledger.snapshot()["calls"] == 2
    assert retry.received_at - first.received_at >= 0.45  # the slot 0.5 s on (asyncio's clock may round)


def test_a_wait_for_a_slot_is_neither_a_timeout_nor_a_reason_not_to_re_ask(fake_openai, tmp_path, prompts):
    # rpm 30, the clock standing still, a slot already taken: the first request waits 2 s for its
    # slot, its re-ask 2 s more, each longer than every request's timeout (0.5 s). A request's hard
    # bound starts when it is sent, and instructor re-asks only within the timeout after it started:
    # the first wait comes before it starts.
    fake_openai.script(tool_reply(INVALID), tool_reply(GOOD))
    ledger = Ledger(Limits(rpm=30), start_state(Limits(), _Shared()), clock=lambda: 0.0)
    ledger.reserve("another store")
    with installed(ledger), client_for(fake_openai, tmp_path, prompts, timeout_s=0.5, timeout_per_1k_chars_s=0) as client:
        assert client.structured("reorder", pairs(1)[0], Verdict) == Verdict(**GOOD)
    assert fake_openai.count == 2 and ledger.snapshot()["calls"] == 3


# --- the command line: a store alone, and a fleet with a shared budget and rpm --------------------


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test"}


def _config(tmp_path, text: str = "[llm]\nmax_attempts = 2\nmax_reasks = 0\n"):
    config = tmp_path / "llm.toml"
    config.write_text(text)
    return config


def test_plan_max_calls_bounds_what_the_server_sees_when_it_answers_429(tmp_path, fake_openai):
    # Every request is refused with 429: each call is tried twice, and a budget of 2 is one call.
    fake_openai.responder = lambda body: status_reply(429, retry_after=0)
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    res = run_cli("plan", str(store), "--now", NOW, "--model", fake_openai.model(), "--api-base", fake_openai.api_base,
                  "--no-cache", "--config", str(_config(tmp_path)), "--max-calls", "2", "--json", env=_env())
    assert res.returncode == 0, res.stderr
    assert fake_openai.count == 2
    errors = [e["message"] for e in json.loads(res.stdout)["errors"]]
    assert any(e.startswith("rate limited after 2 attempts") for e in errors), errors  # the one call made
    assert "call budget reached (max_calls=2)" in errors, errors  # and the next refused


def test_a_fleet_budget_and_rpm_count_every_retry(tmp_path, fake_openai):
    # The red team's run: two stores, every reply a 429, --max-calls 2 --rpm 60. The retries were not
    # counted (6 requests, two of them 0.1 s apart): now the fleet sends 2. (How far apart they
    # arrive also depends on each worker's first request, which litellm is slower to send: the
    # spacing is checked on the client, where it can be without a clock's luck.)
    fake_openai.responder = lambda body: status_reply(429, retry_after=0)
    stores = [copy_store(FIXTURES / "bank", tmp_path / f"b{i}") for i in range(2)]
    res = run_cli("fleet", "plan", *map(str, stores), "--now", NOW, "--model", fake_openai.model(),
                  "--api-base", fake_openai.api_base, "--no-cache", "--config", str(_config(tmp_path)),
                  "--max-calls", "2", "--rpm", "60", "--workers", "2", env=_env())
    assert res.returncode == 1, res.stderr
    assert fake_openai.count == 2 and "fleet budget: 2 calls" in res.stderr, res.stderr
    records = lines(res.stdout)
    assert {r["status"] for r in records.values()} == {"budget_exhausted"}
    assert sum(r["llm"]["calls"] for r in records.values()) == 2
