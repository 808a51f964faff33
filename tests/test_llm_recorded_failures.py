"""A real model's failure is recorded too, so the mock replays exactly what the real model did."""

from openai_server import fake_openai, status_reply, tool_reply, write_prompt  # noqa: F401 - fixture

from pipeline.config import LLMConfig
from pipeline.llm import StageCallError, make_client
from test_llm_server import FAST, KEY, Verdict, pairs


def test_failures_are_recorded_and_replayed(fake_openai, tmp_path):
    prompts = tmp_path / "prompts"
    write_prompt(prompts, "reorder")
    recordings = tmp_path / "recordings"
    fake_openai.script(tool_reply({"same": True, "why": "moved phrase"}), status_reply(400, body={"error": {"message": "bad"}}))
    real = LLMConfig(model=fake_openai.model(), api_base=fake_openai.api_base, cache_dir=str(tmp_path / "cache"), concurrency=1, max_attempts=1)
    with make_client(real, api_key=KEY, prompts_dir=prompts, retry=FAST, record=True, recordings=recordings) as client:
        first, second = client.structured_many("reorder", pairs(2), Verdict)
    assert isinstance(first, Verdict) and isinstance(second, StageCallError)
    rows = (recordings / "reorder.jsonl").read_text()
    assert '"error":' in rows and KEY not in rows
    mock = LLMConfig(model="mock")
    with make_client(mock, prompts_dir=prompts, recordings=recordings) as client:
        a, b = client.structured_many("reorder", pairs(2), Verdict)
    assert a == first
    assert isinstance(b, StageCallError) and "recorded failure of the real model" in b.reason
    assert "no recorded reply" not in b.reason
