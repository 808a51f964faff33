"""A fully cached run never imports litellm; calls share one concurrency limit; schemas are built once.

The model is a local OpenAI-compatible server on 127.0.0.1 (tests/openai_server.py) answering every
stage with the stub's own verdict for what it was sent; nothing reaches the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import typing

from openai_server import FakeOpenAI, _forced_tool_name, fake_openai, status_reply, tool_reply  # noqa: F401 - fixture

from helpers import FIXTURES, NOW, REPO, copy_store, run_cli
from pipeline.config import LLMConfig
from pipeline.llm import make_client

# Runs the command line in a fresh interpreter and says, after it, whether litellm was imported.
PLAN_AND_REPORT = (
    "import sys\n"
    "from pipeline.cli import main\n"
    "sys.argv = ['memconsolidate', *sys.argv[1:]]\n"
    "try:\n    main()\n"
    "finally:\n    print('litellm imported:', 'litellm' in sys.modules, file=sys.stderr)\n"
)


def stub_verdicts(body: dict) -> object:
    """Each stage's reply: the stub's verdict for the payload the request carried."""
    from pipeline.llm.stub import STUBS
    from pipeline.stages import register_stubs

    register_stubs()
    for fn in STUBS.values():
        hints = typing.get_type_hints(fn)
        if hints["return"].__name__ == _forced_tool_name(body):
            payload = hints["payload"].model_validate_json(body["messages"][-1]["content"])
            return tool_reply(fn(payload).model_dump(mode="json"))
    return status_reply(400)


def plan_args(store, srv, cache) -> list[str]:
    return ["plan", str(store), "--json", "--now", NOW, "--model", srv.model("fake"), "--api-base", srv.api_base,
            "--cache-dir", str(cache)]


def plan_env() -> dict[str, str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("OPENAI_API_KEY", None)
    return env


def plan_in_a_fresh_interpreter(store, srv, cache) -> tuple[dict, str]:
    res = subprocess.run([sys.executable, "-c", PLAN_AND_REPORT, *plan_args(store, srv, cache)],
                         capture_output=True, text=True, cwd=REPO, env=plan_env(), timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout), res.stderr


def test_a_fully_cached_plan_makes_no_request_and_never_imports_litellm(fake_openai, tmp_path, monkeypatch):
    from pipeline.llm import litellm_backend

    fake_openai.responder = stub_verdicts
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    cache = tmp_path / "cache"
    # The run that fills the cache runs in this process (litellm is imported once for the whole
    # suite, not once more in a fresh interpreter): a miss goes through litellm.
    imports: list[object] = []
    real_import = litellm_backend.import_litellm
    monkeypatch.setattr(litellm_backend, "import_litellm", lambda: imports.append(1) or real_import())
    res = run_cli(*plan_args(store, fake_openai, cache), cwd=REPO, env=plan_env())
    assert res.returncode == 0, res.stderr
    first = json.loads(res.stdout)
    asked = fake_openai.count
    assert asked > 0 and first["stats"]["llm_calls"] == asked and first["errors"] == []
    assert imports  # a miss imports it
    # The cached run in a fresh interpreter, where nothing has imported litellm before it.
    again, again_err = plan_in_a_fresh_interpreter(store, fake_openai, cache)
    assert fake_openai.count == asked  # every reply from the cache
    assert again["stats"]["llm_calls"] == 0 and again["stats"]["cache_hits"] == asked
    assert "litellm imported: False" in again_err
    assert {k: v for k, v in again.items() if k != "stats"} == {k: v for k, v in first.items() if k != "stats"}


def test_known_models_wait_for_the_first_call_to_meet_litellm():
    from pipeline.llm.defaults import certainly_known, key_in_environment

    assert certainly_known("openai/gpt-4.1-mini") and certainly_known("openai/anything-behind-a-proxy")
    assert certainly_known("gpt-4.1-mini")  # in litellm's model map
    assert not certainly_known("nosuchprovider/x") and not certainly_known("openai/") and not certainly_known("plain-name")
    assert key_in_environment("openai/gpt-4.1-mini", {"OPENAI_API_KEY": "sk-x"})
    assert not key_in_environment("openai/gpt-4.1-mini", {"OPENAI_API_KEY": ""})
    assert not key_in_environment("bedrock/claude", {"OPENAI_API_KEY": "sk-x"})  # not a provider we know the key of


def test_a_hosted_model_with_its_key_set_is_made_without_importing_litellm(tmp_path):
    code = (
        "import sys\nfrom pipeline.config import LLMConfig\nfrom pipeline.llm import make_client\n"
        f"c = make_client(LLMConfig(model='openai/gpt-4.1-mini', cache_dir={str(tmp_path / 'c')!r}))\n"
        "print(c is not None, 'litellm' in sys.modules)\nc.close()\n"
    )
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-real"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


def test_calls_from_two_threads_share_the_clients_concurrency(fake_openai, tmp_path):
    from pipeline.stages.reorder import ReorderInput, ReorderOutput, ReorderPair

    def slow(body: dict) -> object:
        reply = stub_verdicts(body)
        reply.delay = 0.15
        return reply

    fake_openai.responder = slow
    cfg = LLMConfig(model=fake_openai.model("fake"), api_base=fake_openai.api_base, concurrency=2, no_cache=True, prompt_set="")
    results: list[list] = []
    with make_client(cfg) as c:
        def ask(tag: str) -> None:
            payloads = [ReorderInput(pairs=[ReorderPair(handle=1, a=f"{tag} a {i}", b=f"{i} a {tag}")]) for i in range(4)]
            results.append(c.structured_many("reorder", payloads, ReorderOutput))

        threads = [threading.Thread(target=ask, args=(t,)) for t in ("x", "y")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert fake_openai.count == 8 and all(isinstance(r, ReorderOutput) for rs in results for r in rs)
    assert fake_openai.max_in_flight == 2  # one limit for the client, not one per call of structured_many


def test_progress_hears_each_reply_and_the_tool_schema_is_the_schemas_own(fake_openai, tmp_path):
    from pipeline.stages.base import ask_in_batches
    from pipeline.stages.reorder import ReorderOutput, make_payload

    from helpers import mem

    fake_openai.responder = stub_verdicts
    cfg = LLMConfig(model=fake_openai.model("fake"), api_base=fake_openai.api_base, concurrency=2, no_cache=True, prompt_set="")
    pairs = [(mem(f"a{i}", f"deploy runs nightly {i}"), mem(f"b{i}", f"nightly runs deploy {i}")) for i in range(5)]
    seen: list[tuple[int, int]] = []
    with make_client(cfg) as c:
        answers, errors = ask_in_batches(c, "reorder", pairs, lambda p: f"{p[0].key}\x00{p[1].key}", 1, make_payload,
                                         ReorderOutput, lambda r: r.decisions, progress=lambda d, t: seen.append((d, t)))
    assert not errors and len(answers) == 5
    assert seen[0] == (0, 5) and seen[-1] == (5, 5) and len(seen) == 6  # one report per reply, not per wave
    tools = [q.body["tools"][0]["function"] for q in fake_openai.requests]
    assert all(t == tools[0] for t in tools) and tools[0]["name"] == "ReorderOutput"
    assert set(tools[0]["parameters"]["properties"]) == set(ReorderOutput.model_json_schema()["properties"])
