"""The offline parts of the LLM client: the stub and mock models, recordings, budgets, handles,
prompts, the cache's safety, canonical JSON, redaction and mode defaults. No network, no litellm."""

from __future__ import annotations

import json
import pickle
import sys
import unicodedata
from pathlib import Path

import diskcache
import pytest
from pydantic import BaseModel

from openai_server import write_prompt
from pipeline.config import LLMConfig, Settings
from pipeline.errors import UsageError
from pipeline.llm import (
    STUBS,
    BudgetExceeded,
    Handles,
    RetryPolicy,
    StageCallError,
    UnknownHandle,
    default_mode,
    load_prompt,
    make_client,
    register_stub,
    resolve_mode,
)
from pipeline.llm.cache import ReplyCache, default_cache_dir
from pipeline.llm.canonical import canonical_json
from pipeline.llm.redact import clean_api_base, redact


class Pair(BaseModel):
    a: str
    b: str


class Verdict(BaseModel):
    same: bool
    why: str


def _same_words(p: Pair) -> Verdict:
    return Verdict(same=sorted(p.a.split()) == sorted(p.b.split()), why="stub: word sets compared")


@pytest.fixture
def stubs():
    """Registers test stubs and removes them afterwards (STUBS is process-global)."""
    before = dict(STUBS)
    register_stub("t_pairs")(_same_words)
    yield STUBS
    STUBS.clear()
    STUBS.update(before)


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    for stage in ("t_pairs", "t_nostub", "t_broken", "t_dict"):
        write_prompt(folder, stage)
    return folder


def stub_client(tmp_path: Path, prompts: Path, **cfg):
    cfg.setdefault("model", "stub")
    cfg.setdefault("cache_dir", str(tmp_path / "cache"))
    client = make_client(LLMConfig(**cfg), prompts_dir=prompts, recordings=tmp_path / "rec")
    assert client is not None
    return client


# --- models: none, stub ------------------------------------------------------------------------


def test_model_none_gives_no_client():
    assert make_client(LLMConfig(model="none")) is None
    assert make_client(Settings(llm=LLMConfig(model="none"))) is None


def test_stub_answers_deterministically_offline_and_uncached(stubs, tmp_path, prompts):
    with stub_client(tmp_path, prompts) as client:
        payloads = [Pair(a="alice manages bob", b="bob manages alice"), Pair(a="x y", b="z")]
        first = client.structured_many("t_pairs", payloads, Verdict)
        again = client.structured_many("t_pairs", payloads, Verdict)
        stats = client.stats
    assert [r.same for r in first] == [True, False]
    assert first == again
    # stub calls are counted as calls (budgets apply) but cost nothing and are never cached
    assert (stats.llm_calls, stats.cache_hits, stats.prompt_tokens, stats.cost_usd) == (4, 0, 0, 0.0)
    assert not (tmp_path / "cache").exists()


def test_importing_the_client_does_not_import_litellm():
    import subprocess

    code = "import sys, pipeline.llm; from pipeline.llm import make_client; print('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_stage_without_a_stub_fails_soft(stubs, tmp_path, prompts):
    with stub_client(tmp_path, prompts) as client:
        with pytest.raises(StageCallError) as err:
            client.structured("t_nostub", Pair(a="a", b="b"), Verdict)
    assert (err.value.stage, err.value.reason) == ("t_nostub", "no stub for stage t_nostub")
    assert err.value.as_stage_error().model_dump() == {"stage": "t_nostub", "message": "no stub for stage t_nostub"}


def test_a_stub_that_raises_or_answers_badly_fails_soft(stubs, tmp_path, prompts):
    @register_stub("t_broken")
    def broken(payload: Pair) -> Verdict:
        raise KeyError("oops")

    @register_stub("t_dict")
    def as_dict(payload: Pair):
        return {"same": True, "why": "a dict is validated into the schema"} if payload.a == "ok" else {"same": "?"}

    with stub_client(tmp_path, prompts) as client:
        broken_result = client.structured_many("t_broken", [Pair(a="a", b="b")], Verdict)[0]
        good, bad = client.structured_many("t_dict", [Pair(a="ok", b="b"), Pair(a="no", b="b")], Verdict)
    assert isinstance(broken_result, StageCallError) and broken_result.reason == "stub failed: KeyError: 'oops'"
    assert good == Verdict(same=True, why="a dict is validated into the schema")
    assert isinstance(bad, StageCallError) and bad.reason == "stub reply invalid: same, why"


def test_a_missing_prompt_file_names_the_stage(stubs, tmp_path):
    register_stub("t_noprompt")(_same_words)
    empty = tmp_path / "none"
    empty.mkdir()
    with make_client(LLMConfig(model="stub"), prompts_dir=empty) as client:
        result = client.structured_many("t_noprompt", [Pair(a="a", b="b")], Verdict)[0]
    assert isinstance(result, StageCallError)
    assert result.stage == "t_noprompt"
    assert result.reason == "prompt file prompts/t_noprompt.md is missing"


def test_payload_must_be_json(stubs, tmp_path, prompts):
    with stub_client(tmp_path, prompts) as client:
        result = client.structured_many("t_pairs", [{"a": object()}], Verdict)[0]
    assert isinstance(result, StageCallError) and "not JSON-serializable" in result.reason
    with pytest.raises(TypeError):
        client.structured("t_pairs", Pair(a="a", b="b"), dict)  # a programming error is loud


def test_call_budget_applies_to_the_stub(stubs, tmp_path, prompts):
    with stub_client(tmp_path, prompts, max_calls=2) as client:
        results = client.structured_many("t_pairs", [Pair(a=str(i), b="x") for i in range(5)], Verdict)
        assert [isinstance(r, BudgetExceeded) for r in results] == [False, False, True, True, True]
        assert isinstance(results[2], StageCallError)  # the runner can treat it like any stage error
        assert client.stats.llm_calls == 2
        assert client.exhausted is not None and client.exhausted.reason == "call budget reached (max_calls=2)"


# --- recordings and the mock model -------------------------------------------------------------


def test_recorded_replies_replay_with_the_mock_model(stubs, tmp_path, prompts):
    rec = tmp_path / "rec"
    payloads = [Pair(a="b a", b="a b"), Pair(a="c", b="d")]
    with make_client(LLMConfig(model="stub"), prompts_dir=prompts, recordings=rec, record=True) as recorder:
        recorded = recorder.structured_many("t_pairs", payloads, Verdict)
    lines = [json.loads(line) for line in (rec / "t_pairs.jsonl").read_text().splitlines()]
    assert [(row["stage"], row["prompt_version"], row["schema"], row["model"]) for row in lines] == [
        ("t_pairs", "1", "Verdict", "stub")
    ] * 2
    assert lines[0]["request"] == {"a": "b a", "b": "a b"}
    assert lines[0]["reply"] == {"same": True, "why": "stub: word sets compared"}

    STUBS.pop("t_pairs")  # the mock must not need the stub (or anything else) to answer
    with make_client(LLMConfig(model="mock"), prompts_dir=prompts, recordings=rec) as mock:
        replayed = mock.structured_many("t_pairs", payloads, Verdict)
        missing = mock.structured_many("t_pairs", [Pair(a="never", b="recorded")], Verdict)[0]
    assert replayed == recorded
    assert isinstance(missing, StageCallError)
    assert "missing or stale for prompt version 1" in missing.reason and "re-record" in missing.reason


def test_a_recording_is_never_appended_through_a_symlink(stubs, tmp_path, prompts):
    # A planted `<stage>.jsonl -> elsewhere` would have taken each recorded line into that file.
    rec = tmp_path / "rec"
    rec.mkdir()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep\n")
    (rec / "t_pairs.jsonl").symlink_to(elsewhere)
    with make_client(LLMConfig(model="stub"), prompts_dir=prompts, recordings=rec, record=True) as recorder:
        (reply,) = recorder.structured_many("t_pairs", [Pair(a="b a", b="a b")], Verdict)
    assert isinstance(reply, StageCallError) and "symlink" in reply.reason
    assert elsewhere.read_text() == "keep\n"


def test_a_new_prompt_version_makes_recordings_stale(stubs, tmp_path, prompts):
    rec = tmp_path / "rec"
    with make_client(LLMConfig(model="stub"), prompts_dir=prompts, recordings=rec, record=True) as recorder:
        recorder.structured("t_pairs", Pair(a="a", b="a"), Verdict)
    write_prompt(prompts, "t_pairs", version="2")
    with make_client(LLMConfig(model="mock"), prompts_dir=prompts, recordings=rec) as mock:
        with pytest.raises(StageCallError, match="missing or stale for prompt version 2"):
            mock.structured("t_pairs", Pair(a="a", b="a"), Verdict)


def test_the_prompt_text_is_part_of_the_recording_key(stubs, tmp_path, prompts):
    rec = tmp_path / "rec"
    with make_client(LLMConfig(model="stub"), prompts_dir=prompts, recordings=rec, record=True) as recorder:
        recorder.structured("t_pairs", Pair(a="a", b="a"), Verdict)
    write_prompt(prompts, "t_pairs", version="1", text="Edited without bumping the version.")
    with make_client(LLMConfig(model="mock"), prompts_dir=prompts, recordings=rec) as mock:
        assert isinstance(mock.structured_many("t_pairs", [Pair(a="a", b="a")], Verdict)[0], StageCallError)


def test_recordings_folder_from_the_environment(stubs, tmp_path, prompts, monkeypatch):
    rec = tmp_path / "elsewhere"
    monkeypatch.setenv("MEMCONSOLIDATE_RECORDINGS", str(rec))
    with make_client(LLMConfig(model="stub"), prompts_dir=prompts, record=True) as recorder:
        recorder.structured("t_pairs", Pair(a="a", b="a"), Verdict)
    assert (rec / "t_pairs.jsonl").is_file()
    (rec / "t_pairs.jsonl").write_text("not json\n" + (rec / "t_pairs.jsonl").read_text())  # damage is skipped
    with make_client(LLMConfig(model="mock"), prompts_dir=prompts) as mock:
        assert mock.structured("t_pairs", Pair(a="a", b="a"), Verdict).same is True


def test_recording_the_mock_is_refused(tmp_path):
    with pytest.raises(UsageError):
        make_client(LLMConfig(model="mock"), record=True, recordings=tmp_path)


# --- handles -----------------------------------------------------------------------------------


def test_handles_map_small_integers_to_keys_and_reject_the_rest():
    h = Handles(["memories/b.md", "memories/a.md", "memories/b.md"], stage="reorder")
    assert len(h) == 2
    assert h.items() == [(1, "memories/b.md"), (2, "memories/a.md")]
    assert h.handle("memories/a.md") == 2
    assert h.key(1) == "memories/b.md"
    assert h.check([2, 1, "2"]) == ["memories/a.md", "memories/b.md", "memories/a.md"]
    for bad in (3, 0, -1, True, 1.0, "memories/a.md", None):
        with pytest.raises(UnknownHandle) as err:
            h.check([1, bad])
        assert err.value.stage == "reorder" and "was not offered" in err.value.reason
        assert isinstance(err.value, StageCallError)
    with pytest.raises(KeyError):
        h.handle("not/offered.md")
    assert 1 in h and 3 not in h and True not in h


# --- prompts -----------------------------------------------------------------------------------


def test_prompt_version_is_read_verbatim_and_required(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "a.md").write_text("\ufeff---\nversion: 1.10\ndescription: x\n---\n\nBody text.\n", encoding="utf-8")
    (folder / "b.md").write_text("---\ndescription: no version\n---\nBody.\n", encoding="utf-8")
    (folder / "c.md").write_text("Just a body.\n", encoding="utf-8")
    (folder / "d.md").write_bytes(b"---\nversion: 1\n---\n\xff\xfe")
    prompt = load_prompt("a", folder)
    assert (prompt.version, prompt.text) == ("1.10", "Body text.")  # not YAML's 1.1
    for stage, reason in [
        ("b", "prompt prompts/b.md has no version in its front matter"),
        ("c", "prompt prompts/c.md has no version in its front matter"),
        ("d", "prompt file prompts/d.md is not UTF-8"),
        ("../a", "invalid stage name"),
    ]:
        with pytest.raises(StageCallError) as err:
            load_prompt(stage, folder)
        assert err.value.reason == reason


# --- canonical JSON, cache, secrets, modes -----------------------------------------------------


def test_canonical_json_is_sorted_nfc_and_compact():
    composed = {"b": "café", "a": [1, {"z": 1, "y": "é"}]}
    decomposed = {"b": unicodedata.normalize("NFD", "café"), "a": [1, {"y": unicodedata.normalize("NFD", "é"), "z": 1}]}
    assert canonical_json(composed) == canonical_json(decomposed) == '{"a":[1,{"y":"é","z":1}],"b":"café"}'
    assert canonical_json(Pair(b="2", a="1")) == '{"a":"1","b":"2"}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def _canonical_by_definition(value):
    """canonical_json as first written: every string NFC'd, every key made a string, then dumped."""
    from collections.abc import Mapping

    def nfc(v):
        if isinstance(v, str):
            return unicodedata.normalize("NFC", v)
        if isinstance(v, Mapping):
            return {nfc(str(k)): nfc(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [nfc(x) for x in v]
        return v

    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return json.dumps(nfc(data), sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def test_canonical_json_keeps_its_definition_on_odd_values():
    # The fast paths (ASCII strings, plain numbers, dicts before the Mapping test, one encoder) give
    # the same bytes as the definition: keys made strings by str() (True -> "True", 10 sorts before
    # 9), Mappings that are not dicts, tuples, str and int subclasses, non-NFC text in keys.
    from collections import OrderedDict, UserDict

    class Text(str):
        pass

    class Count(int):
        pass

    values = [
        {10: "a", 9: "b"}, {True: 1, None: 2, 1.5: 3}, UserDict({"b": (1, 2), "a": OrderedDict(z=1, y=2)}),
        {unicodedata.normalize("NFD", "clé"): [Text("x"), Count(3), True, None, 1.0, 10**30, "ﬀÅ"]},
        [Text(unicodedata.normalize("NFD", "é")), ("t", {"k": "\u0000\"\n"})], "plain", 7, None, Pair(b="2", a="1"),
    ]
    for value in values:
        assert canonical_json(value) == _canonical_by_definition(value), value
    for bad in ({"x": float("inf")}, {"x": {1, 2}}, {"x": object()}):
        with pytest.raises((TypeError, ValueError)):
            canonical_json(bad)


_TRIPPED: list[str] = []


def _tripwire(tag: str) -> str:
    _TRIPPED.append(tag)
    return tag


class _Evil:
    def __reduce__(self):
        return (_tripwire, ("unpickled!",))


def test_cache_refuses_pickled_rows_and_non_text_values(tmp_path):
    cache = ReplyCache(tmp_path)
    cache.set("good", '{"same":true,"why":"x"}')
    raw = diskcache.Cache(str(tmp_path / "replies-v1"))  # someone else writing the folder
    raw.set("evil", _Evil())
    raw.set("bytes", b"\x00\x01")
    raw.set("big-pickle", {"a": "x" * 100_000})
    raw.close()
    assert cache.get("good") == '{"same":true,"why":"x"}'
    assert cache.get("evil") is None and cache.get("big-pickle") is None and cache.get("bytes") is None
    assert _TRIPPED == []  # never unpickled
    assert cache.get("evil") is None  # and deleted
    check = diskcache.Cache(str(tmp_path / "replies-v1"))
    assert "evil" not in check and "bytes" not in check
    check.close()
    with pytest.raises(TypeError):
        cache.set("x", pickle.dumps(1))  # type: ignore[arg-type]
    assert (tmp_path / "replies-v1").stat().st_mode & 0o777 == 0o700
    cache.close()


def test_cache_folder_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMCONSOLIDATE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "memconsolidate"
    monkeypatch.setenv("MEMCONSOLIDATE_CACHE_DIR", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    assert default_cache_dir(str(tmp_path / "flag")) == tmp_path / "flag"
    monkeypatch.delenv("MEMCONSOLIDATE_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "memconsolidate"


def test_redaction_and_clean_api_base():
    text = "bad key sk-test-SECRET123 Bearer abcdefghijkl http://u:p4ss@h/v1?api_key=zzz1234&x=1 hunter2hunter2"
    out = redact(text, ["hunter2hunter2"])
    for secret in ("SECRET123", "abcdefghijkl", "p4ss", "zzz1234", "hunter2hunter2"):
        assert secret not in out
    assert clean_api_base("HTTP://user:pw@Host.Example:8080/v1/?key=abc") == "http://host.example:8080/v1"
    assert clean_api_base(None) is None


def test_modes_default_per_provider_and_can_be_chosen(tmp_path):
    assert default_mode("openai/gemma", "http://127.0.0.1:8089/v1") == "tools"
    assert default_mode("ollama_chat/qwen2.5", "http://127.0.0.1:11434") == "tools"
    assert default_mode("anthropic/claude-sonnet-4-5") == "tools"
    assert default_mode("text-completion-openai/gpt-3.5-turbo-instruct") == "md_json"
    assert resolve_mode("JSON-SCHEMA", "openai/x") == "json_schema"
    with pytest.raises(ValueError):
        resolve_mode("xml", "openai/x")
    client = make_client(LLMConfig(model="openai/x", mode="md_json", no_cache=True), api_key="sk-test-never-sent")
    assert client is not None and client.mode == "md_json" and client.cache is None
    client.close()


def test_an_unknown_model_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown model 'no-such-model-xyz'"):
        make_client(LLMConfig(model="no-such-model-xyz", no_cache=True))


def test_retry_waits_back_off_and_honour_a_capped_retry_after():
    class FakeResponse:
        headers = {"retry-after": "7"}

    class Limited(Exception):
        response = FakeResponse()

    policy = RetryPolicy(base_wait_s=1, max_wait_s=5, retry_after_cap_s=10)
    assert [policy.wait_for(n, None) for n in (1, 2, 3, 4, 5)] == [1, 2, 4, 5, 5]
    assert policy.wait_for(1, Limited()) == 7
    assert RetryPolicy(retry_after_cap_s=3).wait_for(1, Limited()) == 3
    wrapped = RuntimeError("outer")
    wrapped.__cause__ = Limited()
    assert policy.wait_for(1, wrapped) == 7  # found through the cause chain
