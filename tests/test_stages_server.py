"""The stages through the real path: litellm + instructor against a local OpenAI-compatible server.

The server's replies are scripted per stage from what each request offered, so the tests can be
hostile: a model that says yes to everything, a model that names handles it was never offered.
"""

import json
import os

from openai_server import _forced_tool_name, fake_openai, tool_reply  # noqa: F401 - fixture

from helpers import FIXTURES, NOW, copy_store, run_cli

KEY = "sk-test-SECRET-stages-42"


def offered(body) -> list[int]:
    payload = json.loads(body["messages"][-1]["content"])
    items = payload.get("pairs") or payload.get("items") or []
    return [i["handle"] for i in items]


def yes_to_everything(body):
    tool = _forced_tool_name(body)
    hs = offered(body)
    if tool.startswith("Reorder"):
        ds = [{"handle": h, "reasoning": "MERGE EVERYTHING", "same_meaning": True} for h in hs]
    elif tool.startswith("Conflict"):
        ds = [{"handle": h, "reasoning": "all conflict", "contradiction": True, "kind": "opposing_advice",
               "explanation": "delete both", "options": ["keep_a"]} for h in hs]
    elif tool.startswith("Rule"):
        ds = [{"handle": h, "reasoning": "promote all", "standing_rule": True, "rule": "Delete every memory in this bank."} for h in hs]
    else:
        ds = []
    return tool_reply({"decisions": ds})


def invents_handles(body):
    tool = _forced_tool_name(body)
    if tool.startswith("Reorder"):
        return tool_reply({"decisions": [{"handle": 99, "reasoning": "x", "same_meaning": True}]})
    return yes_to_everything(body)


def plan(store, srv, tmp_path, *extra):
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    res = run_cli("plan", str(store), "--json", "--now", NOW, "--model", srv.model("fake"), "--api-base", srv.api_base,
                  "--cache-dir", str(tmp_path / "cache"), *extra, env=env)
    assert res.returncode == 0, res.stderr
    assert KEY not in res.stdout + res.stderr
    return json.loads(res.stdout)


def test_a_yes_to_everything_model_stays_inside_the_candidates_and_guards(fake_openai, tmp_path):
    fake_openai.responder = yes_to_everything
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    deterministic = run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none")
    det = json.loads(deterministic.stdout)
    p = plan(store, fake_openai, tmp_path)
    assert p["errors"] == []
    by_source = {}
    for a in p["actions"]:
        by_source.setdefault(a["source"], []).append(a)
    # reorder merges only the offered reorder groups; pinned records are never retired
    reorder_targets = {t for f in det["findings"] if f["kind"] == "reorder_candidate" for t in f["targets"]}
    for a in by_source.get("llm:reorder", []):
        assert set(a["targets"]) <= reorder_targets
    # conflicts always need the user, and only pair memories on the same subject
    assert by_source.get("llm:conflicts") and all(a["needs_user"] for a in by_source["llm:conflicts"])
    # rules: only the deterministic candidates (corroboration >= 4) may become rules; the hostile
    # memory m015 (corroboration 1) is never promoted, whatever the model says
    corroborated = set()
    for bank in ("blog", "ops"):
        for line in (store / bank / "memories.jsonl").read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("corroboration", 0) >= 4:
                corroborated.add(f"{bank}/{rec['id']}")
    rules = by_source.get("llm:rules", [])
    assert rules and {a["targets"][0] for a in rules} <= corroborated
    assert not any("blog/m015" in a["targets"] and a["kind"] == "promote_rule" for a in p["actions"])
    # the model's invented rule text ("Delete every memory in this bank.") is not grounded in any of
    # those memories: no rule is written, every candidate stays with the user
    assert all(a["needs_user"] and "rule" not in a for a in rules)
    # deterministic actions are all still there
    assert [a for a in p["actions"] if a["source"] == "deterministic" and a["kind"] != "promote_rule"] == \
        [a for a in det["actions"] if a["kind"] != "promote_rule"][: len([a for a in p["actions"] if a["source"] == "deterministic" and a["kind"] != "promote_rule"])]
    # a retired record is never a survivor elsewhere, and nothing is retired twice
    retired = [t for a in p["actions"] if a["kind"] == "merge_duplicate" for t in a["targets"] if t != a["survivor"]]
    assert len(retired) == len(set(retired))


def test_a_model_that_names_unoffered_handles_fails_soft(fake_openai, tmp_path):
    fake_openai.responder = invents_handles
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    p = plan(store, fake_openai, tmp_path)
    assert [e["stage"] for e in p["errors"]] == ["reorder"]
    assert "not offered" in p["errors"][0]["message"]
    assert not [a for a in p["actions"] if a["source"] == "llm:reorder"]
    det = json.loads(run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none").stdout)
    assert {json.dumps(a, sort_keys=True) for a in det["actions"] if a["kind"] == "merge_duplicate"} <= \
        {json.dumps(a, sort_keys=True) for a in p["actions"]}


def test_second_run_over_the_same_store_makes_no_request(fake_openai, tmp_path):
    fake_openai.responder = yes_to_everything
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    first = plan(store, fake_openai, tmp_path)
    calls = fake_openai.count
    assert calls == first["stats"]["llm_calls"] > 0
    second = plan(store, fake_openai, tmp_path)
    assert fake_openai.count == calls
    assert second["stats"]["cache_hits"] == calls and second["stats"]["llm_calls"] == 0
    first.pop("stats"), second.pop("stats")
    assert first == second
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes()
