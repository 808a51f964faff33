"""More same-subject pairs than a run may ask about (llm.max_pairs_per_stage): each run asks about
the strongest half and one window of the others, the window turning with the run's date, so days of
nightly runs reach pairs that a run offering only the strongest would never reach; the strongest
half goes in batches of its own, so a stable store meets the cache with the very same batches."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from pipeline.config import build_settings
from pipeline.layouts.registry import open_store
from pipeline.rules.outcome import Outcome
from pipeline.rules.pair_windows import places
from pipeline.stages.base import StageContext, batched, clip
from pipeline.stages.conflicts import STAGE, ConflictOutput, candidate_pairs, statement, stub

from helpers import REPO, run_cli
from openai_server import fake_openai  # noqa: F401 - fixture
from test_hot_subjects import _bank_store

Pair = tuple[str, str]


class _Recording:
    """A client answering as the stub does, keeping each batch of pairs of texts it was asked about."""

    def __init__(self) -> None:
        self.batches: list[tuple[Pair, ...]] = []

    def structured_many(self, stage, payloads, schema) -> list[ConflictOutput]:
        assert stage == "conflicts" and schema is ConflictOutput
        self.batches += [tuple((p.a, p.b) for p in payload.pairs) for payload in payloads]
        return [stub(payload) for payload in payloads]


def _run(store: Path, day: dt.date, limit: int, batch_size: int = 3) -> tuple[list[tuple[Pair, ...]], list[str]]:
    settings = build_settings({}, {"now": day, "llm.model": "stub", "llm.no_cache": True, "llm.max_pairs_per_stage": limit,
                                   "llm.batch_size": batch_size})
    corpus, settings = open_store(store, settings)
    client = _Recording()
    out = STAGE.run(StageContext(corpus, settings, client), Outcome([], []))
    return client.batches, [f.reason for f in out.findings if f.kind == "capped"]


def test_consecutive_days_ask_about_every_pair_once_the_windows_have_turned(tmp_path):
    store = _bank_store(tmp_path / "store", 120)
    settings = build_settings({}, {"now": dt.date(2026, 12, 1), "llm.model": "stub", "llm.no_cache": True})
    corpus, settings = open_store(store, settings)
    every = candidate_pairs(corpus, Outcome([], []), limit=10**6)
    assert every.waiting == 0 and every.found > 40
    by_key = corpus.by_key()
    texts = {(clip(statement(by_key[p.a])), clip(statement(by_key[p.b]))) for p in every.pairs}

    limit = 10
    windows = places(every.found, limit, 0).windows
    start = dt.date(2026, 12, 1)
    asked_in_all: set[Pair] = set()
    strongest_batches: list[tuple[Pair, ...]] | None = None
    for day in (start + dt.timedelta(days=i) for i in range(windows)):
        batches, capped = _run(store, day, limit)
        asked = [pair for batch in batches for pair in batch]
        assert len(asked) == len(set(asked)) == limit
        window = day.toordinal() % windows + 1
        assert capped == [f"conflicts: {every.found - limit} of {every.found} same-subject pairs not asked about in this run "
                          f"(llm.max_pairs_per_stage = {limit}): it asks about the 5 strongest and 5 pairs of window {window} of "
                          f"{windows} of the others; the window turns with the run's date, so daily runs reach every pair "
                          f"within {windows} days while the pairs found stay the same"]
        # The strongest five in batches of their own (3 + 2), the same every day; the window's after.
        assert [len(b) for b in batches] == [3, 2, 3, 2]
        if strongest_batches is not None:
            assert batches[:2] == strongest_batches
        strongest_batches = batches[:2]
        asked_in_all |= set(asked)
    assert asked_in_all == texts
    # The same date offers the same pairs: a plan stays a function of the store and the run's date.
    assert _run(store, start, limit) == _run(store, start, limit)
    assert _run(store, start, limit)[0][2:] != _run(store, start + dt.timedelta(days=1), limit)[0][2:]


def test_a_run_allowed_no_pair_says_how_many_wait_and_asks_about_none(tmp_path):
    store = _bank_store(tmp_path / "store", 120)
    batches, capped = _run(store, dt.date(2026, 12, 1), 0)
    assert batches == []
    assert len(capped) == 1 and capped[0].startswith("conflicts: none of ") and capped[0].endswith(" asked about (llm.max_pairs_per_stage = 0)")


def test_a_batch_starts_at_each_place_asked_and_every_size_of_batch_otherwise():
    items = list(range(11))
    assert batched(items, 4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    assert batched(items, 4, [5]) == [[0, 1, 2, 3], [4], [5, 6, 7, 8], [9, 10]]
    assert batched(items, 4, [0, 5, 5, 11, 40]) == batched(items, 4, [5])  # the ends and repeats change nothing
    assert batched(items, 0, [2]) == [[i] for i in items]
    assert batched([], 4, [0]) == []


def test_the_next_days_run_asks_a_real_model_only_about_the_new_window(fake_openai, tmp_path):
    """Against a local OpenAI-compatible server with the cache on: the second day's run sends only
    the window's batches of conflicts; the strongest half's come from the cache."""
    from openai_server import _forced_tool_name
    from test_llm_cached_run import plan_env, stub_verdicts

    asked: list[str] = []

    def answer(body: dict) -> object:
        asked.append(_forced_tool_name(body))
        return stub_verdicts(body)

    fake_openai.responder = answer
    store = _bank_store(tmp_path / "store", 120)
    (store / "settings.toml").write_text("[llm]\nmax_pairs_per_stage = 10\nbatch_size = 3\n", encoding="utf-8")
    plans = []
    for day in ("2026-12-01", "2026-12-02"):
        before = len(asked)
        res = run_cli("plan", str(store), "--json", "--now", day, "--model", fake_openai.model("fake"), "--api-base",
                      fake_openai.api_base, "--cache-dir", str(tmp_path / "cache"), "--config", str(store / "settings.toml"),
                      cwd=REPO, env=plan_env())
        assert res.returncode == 0, res.stderr
        plans.append(json.loads(res.stdout))
        assert plans[-1]["errors"] == []
        asked_today = asked[before:]
        # Day one: the strongest five and the window's five, in batches of 3 and 2 each; day two: the
        # new window's two batches only (a batch mixing both parts would miss the cache).
        assert asked_today.count("ConflictOutput") == (4 if day.endswith("01") else 2), asked_today
        # Every request the server saw is a call the plan counts; day two's strongest batches are hits.
        assert plans[-1]["stats"]["llm_calls"] == len(asked_today)
    assert plans[1]["stats"]["cache_hits"] >= 2


def test_the_reorder_stage_asks_about_every_pair_so_the_conflicts_pairs_stay_the_same_from_day_to_day(tmp_path):
    """The reorder stage's merges retire memories the conflicts stage leaves out: a window there
    (tried) made the conflicts stage's pairs, and so its strongest batches and windows, move daily."""
    from pipeline.stages import stage_runner
    from pipeline.plan import run_rules

    store = _bank_store(tmp_path / "store", 120)
    texts = [(f"we deploy service{i} nightly at noon", f"nightly at noon we deploy service{i}") for i in range(30)]
    with (store / "ops" / "memories.jsonl").open("a", encoding="utf-8") as fh:
        for i, pair in enumerate(texts):
            for j, text in enumerate(pair):
                fh.write(json.dumps({"id": f"s{i:03d}{j}", "text": text, "entities": [], "tags": [], "confidence": 0.8,
                                     "corroboration": 1, "pinned": False, "source": "test", "created_at": "2026-06-01T00:00:00Z",
                                     "updated_at": None, "invalid_at": None, "superseded_by": None, "revision": 1}) + "\n")
    seen = []
    for day in (dt.date(2026, 12, 1), dt.date(2026, 12, 2), dt.date(2026, 12, 3)):
        settings = build_settings({}, {"now": day, "llm.model": "stub", "llm.no_cache": True, "llm.max_pairs_per_stage": 10,
                                       "llm.batch_size": 3})
        corpus, settings = open_store(store, settings)
        client = _BothStages()
        runner = stage_runner(settings, client=client, only={"reorder", "conflicts"})
        outcome, errors, _ = runner(corpus, settings, run_rules(corpus, settings))
        assert errors == []
        merges = sorted(tuple(a.targets) for a in outcome.actions if a.kind == "merge_duplicate" and a.source == "stub:reorder")
        assert len(merges) == 30  # every reorder pair asked about, every run, though 10 is the limit
        capped = [f.reason for f in outcome.findings if f.kind == "capped" and f.reason.startswith("conflicts")]
        seen.append((merges, client.batches[:2], capped[0].split(":")[1]))
    # The same merges, the same strongest conflict batches, the same count of pairs found, every day.
    assert seen[0] == seen[1] == seen[2]


class _BothStages(_Recording):
    """`_Recording` for the conflicts stage, the stub's own verdicts for the reorder stage."""

    stats = None  # what the stage runner hands back for a client's calls

    def structured_many(self, stage, payloads, schema, on_result=None):
        if stage == "reorder":
            from pipeline.stages.reorder import stub as reorder_stub

            return [reorder_stub(payload) for payload in payloads]
        return super().structured_many(stage, payloads, schema)


def test_the_capped_finding_reads_well_for_one_strongest_pair_for_none_and_for_a_limit_of_zero():
    from pipeline.rules.pair_windows import Offer
    from pipeline.stages.conflicts import capped_finding

    def finding(limit: int, offer: Offer) -> str:
        settings = build_settings({}, {"now": dt.date(2026, 12, 1), "llm.model": "stub", "llm.max_pairs_per_stage": limit})
        found = capped_finding(StageContext(corpus=None, settings=settings, client=None), offer)
        assert found.source == "stub:conflicts" and found.kind == "capped"
        return found.reason

    assert finding(3, Offer(["p0"], ["p5", "p6"], 20, 1, 11)).startswith(
        "conflicts: 17 of 20 same-subject pairs not asked about in this run (llm.max_pairs_per_stage = 3): "
        "it asks about the strongest pair and 2 pairs of window 2 of 11 of the others; ")
    assert "it asks about 1 pair of window 2 of 11; the window turns" in finding(1, Offer([], ["p1"], 2, 1, 11))
    assert finding(0, Offer([], [], 7, 0, 0)) == "conflicts: none of 7 same-subject pairs asked about (llm.max_pairs_per_stage = 0)"
