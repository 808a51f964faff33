"""More same-subject pairs than a run may judge (llm.max_pairs_per_stage): each run judges the
strongest half and one window of the others, the window turning with the run's date, so a week of
nightly runs judges pairs that a run offering only the strongest would never reach."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pipeline.config import build_settings
from pipeline.layouts.registry import open_store
from pipeline.rules.outcome import Outcome
from pipeline.rules.subject_pairs import windows_of
from pipeline.stages.base import StageContext, clip
from pipeline.stages.conflicts import STAGE, ConflictOutput, candidate_pairs, statement, stub

from test_hot_subjects import _bank_store


class _Recording:
    """A client answering as the stub does, keeping every pair of texts it was asked about."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def structured_many(self, stage, payloads, schema) -> list[ConflictOutput]:
        assert stage == "conflicts" and schema is ConflictOutput
        self.asked += [(p.a, p.b) for payload in payloads for p in payload.pairs]
        return [stub(payload) for payload in payloads]


def _run(store: Path, day: dt.date, limit: int) -> tuple[list[tuple[str, str]], list[str]]:
    settings = build_settings({}, {"now": day, "llm.model": "stub", "llm.no_cache": True, "llm.max_pairs_per_stage": limit})
    corpus, settings = open_store(store, settings)
    client = _Recording()
    out = STAGE.run(StageContext(corpus, settings, client), Outcome([], []))
    return client.asked, [f.reason for f in out.findings if f.kind == "capped"]


def test_consecutive_days_judge_every_pair_once_the_windows_have_turned(tmp_path):
    store = _bank_store(tmp_path / "store", 120)
    settings = build_settings({}, {"now": dt.date(2026, 12, 1), "llm.model": "stub", "llm.no_cache": True})
    corpus, settings = open_store(store, settings)
    every = candidate_pairs(corpus, Outcome([], []), limit=10**6)
    assert every.waiting == 0 and every.found > 40
    by_key = corpus.by_key()
    texts = {p: (clip(statement(by_key[p.a])), clip(statement(by_key[p.b]))) for p in every.pairs}

    limit = 10
    windows = windows_of(every.found, limit, 0)[3]
    start = dt.date(2026, 12, 1)
    judged: set[tuple[str, str]] = set()
    strongest: set[tuple[str, str]] | None = None
    for day in (start + dt.timedelta(days=i) for i in range(windows)):
        asked, capped = _run(store, day, limit)
        assert len(asked) == len(set(asked)) == limit
        assert len(capped) == 1 and f"of {every.found} not judged in this run" in capped[0], capped
        assert f"of {windows} of the others" in capped[0]
        # The strongest half comes back every day; the other half is new each day.
        kept = set(asked) & (strongest if strongest is not None else set(asked))
        assert len(kept) >= limit // 2
        strongest = kept
        judged |= set(asked)
    assert judged == set(texts.values())
    # The same date offers the same pairs: a plan stays a function of the store and the run's date.
    assert _run(store, start, limit) == _run(store, start, limit)
    assert _run(store, start, limit)[0] != _run(store, start + dt.timedelta(days=1), limit)[0]


def test_a_run_allowed_no_pair_says_how_many_wait_and_judges_none(tmp_path):
    store = _bank_store(tmp_path / "store", 120)
    asked, capped = _run(store, dt.date(2026, 12, 1), 0)
    assert asked == []
    assert len(capped) == 1 and capped[0].endswith("not judged in this run (llm.max_pairs_per_stage): it judged none"), capped
