"""Conflict candidates inside hot subjects: words shared by more memories than the index's cap."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
from collections import defaultdict
from itertools import count
from math import gcd
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import pipeline.rules.subject_pairs as subject_pairs_module
from pipeline.rules.hot_subjects import RAREST, hot_pairs, pair_bound, paired_by_hot_words
from pipeline.rules.subject_pairs import subject_pairs

from helpers import NOW, mem, run_cli_process

HIDDEN = ("hidden/a", "hidden/b")


def hot_bank(n: int, seed: int = 0, vocab_size: int = 40):
    """n memories all on 'deploy', each with four words of a small vocabulary (every word hot) and an
    id; two of them share four vocabulary words and differ in a fifth: the pair to find."""
    rng = random.Random(seed)
    vocab = [f"word{i:02d}" for i in range(vocab_size)]
    ms = [mem(f"m{i:05d}", " ".join(["deploy", *rng.sample(vocab, 4), f"id{i}"])) for i in range(n)]
    shared = rng.sample(vocab, 6)
    for key, extra, slot in ((HIDDEN[0], shared[4], n // 3), (HIDDEN[1], shared[5], 2 * n // 3)):
        ms[slot] = mem(key, " ".join(["deploy", *shared[:4], extra, f"id{slot}"]))
    return ms


def _hot_of(words, max_df: int = 50):
    """Each word of more than `max_df` memories, with its memories' keys."""
    index: dict[str, list[str]] = {}
    for k, ws in words.items():
        for w in ws:
            index.setdefault(w, []).append(k)
    return {w: ks for w, ks in index.items() if len(ks) > max_df}


def _hot_index(ms, max_df: int = 50):
    words = {m.key: frozenset(m.body.split()) for m in ms}
    return _hot_of(words, max_df), words


def test_a_pair_hidden_in_a_10k_hot_subject_is_a_candidate(monkeypatch):
    ms = hot_bank(10_000)
    assert HIDDEN in {(p.a, p.b) for p in subject_pairs(ms)}
    # Without the second-level index every word is over the cap and nothing is a candidate.
    monkeypatch.setattr(subject_pairs_module, "paired_by_hot_words", lambda frequency, members, words: set())
    assert subject_pairs(ms) == []


def test_pairs_from_hot_subjects_are_bounded_linearly():
    ms = hot_bank(10_000)
    hot, words = _hot_index(ms)
    pairs = hot_pairs(hot, words)
    # Each memory is in at most 5 buckets (each four of its five rarest hot words), with at most one
    # pair of its own in each.
    assert pair_bound(len(ms)) == 5 * len(ms)
    assert 0 < len(pairs) <= pair_bound(len(ms))
    assert all(a < b for a, b in pairs)


def test_near_identical_memories_are_paired_by_order_within_the_bound():
    ms = [mem(f"m{i:05d}", f"deploy staging runs nightly quickly carefully id{i}") for i in range(3000)]
    hot, words = _hot_index(ms)
    pairs = hot_pairs(hot, words)
    partnered = {k for p in pairs for k in p}
    assert len(partnered) == len(ms)  # nobody is left out
    assert len(pairs) <= pair_bound(len(ms))


@pytest.mark.parametrize("shared", [2, 3, 4, 5, 7])
@pytest.mark.parametrize("extras", [(0, 0), (1, 0), (1, 1)])
def test_two_memories_at_most_one_hot_word_apart_are_paired(shared, extras):
    """The promise: sharing two or more hot words, each having at most one the other lacks, they meet
    in a bucket; alone there (nobody else has the words they share), they are paired."""
    rng = random.Random(shared * 10 + sum(extras))
    vocab = [f"word{i:02d}" for i in range(30)]
    common = rng.sample(vocab, shared + 2)
    together, extra = common[:shared], common[shared:]
    background = [rng.sample(vocab, rng.randint(2, 8)) for _ in range(3000)]
    background = [ws for ws in background if len(set(ws) & set(together)) < 2]
    words = {f"m{i:05d}": frozenset(ws) for i, ws in enumerate(background)}
    words["hidden/a"] = frozenset(together + extra[:extras[0]])
    words["hidden/b"] = frozenset(together + extra[1:1 + extras[1]])
    assert HIDDEN in hot_pairs(_hot_of(words, max_df=0), words)  # every word hot


def test_memories_with_the_same_hot_words_are_chained_and_the_first_stands_for_them():
    # deploy and server are hot; a1, a2 and a3 have both and nothing else hot, b has a third hot word.
    words = {f"f{i:02d}": frozenset({"deploy", f"foo{i}"}) for i in range(60)}
    words |= {f"s{i:02d}": frozenset({"server", f"bar{i}"}) for i in range(60)}
    words |= {f"t{i:02d}": frozenset({"deploy", "server", "gamma"}) for i in range(60)}
    words |= {"a1": frozenset({"deploy", "server", "alpha"}), "a2": frozenset({"deploy", "server", "beta"}),
              "a3": frozenset({"deploy", "server", "delta"})}
    hot = _hot_of(words)
    assert sorted(hot) == ["deploy", "gamma", "server"]
    pairs = hot_pairs(hot, words)
    assert {("a1", "a2"), ("a2", "a3")} <= pairs  # a chain, in the order of the keys
    assert ("a1", "a3") not in pairs
    # a1 stands for a2 and a3 in the buckets: paired with the first t (the same hot words plus gamma),
    # a2 and a3 with no t.
    assert ("a1", "t00") in pairs
    assert not any(p for p in pairs if p[0] in ("a2", "a3") and p[1].startswith("t"))
    assert len(pairs) <= pair_bound(len(words))


def _pairs_by_the_book(frequency, members, words):
    """The module docstring's scheme spelled out bucket by bucket (slow, plainly the scheme): what
    paired_by_hot_words gives, however it computes it."""
    rarest_first = sorted(frequency, key=lambda w: (frequency[w], w))
    rank = {w: i for i, w in enumerate(rarest_first)}
    hot_words = {k: tuple(sorted(rank[w] for w in words[k] if w in rank)) for k in set(members)}
    same: dict[tuple[int, ...], list] = defaultdict(list)  # the members with the same hot words, by key
    for k in sorted(hot_words):
        if len(hot_words[k]) >= 2:
            same[hot_words[k]].append(k)
    pairs = set()
    buckets: dict[tuple[int, ...], list] = defaultdict(list)  # (the rank ordering it there, the key)
    for ranks, keys in same.items():
        pairs |= set(zip(keys, keys[1:]))  # each paired with the one before it; the first stands for them
        rarest = ranks[:RAREST]
        if len(rarest) < RAREST:
            buckets[rarest].append((len(rarest_first), keys[0]))  # no other word: after those that have one
        if len(rarest) > 2:
            for i, left_out in enumerate(rarest):
                buckets[rarest[:i] + rarest[i + 1:]].append((left_out, keys[0]))
    for filings in buckets.values():
        filings.sort()
        pairs |= {(min(a, b), max(a, b)) for (_, a), (_, b) in zip(filings, filings[1:])}
    return pairs


_VOCABULARY = [f"w{i}" for i in range(10)]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(_VOCABULARY), st.integers(51, 54)),  # few frequencies: ties
       st.lists(st.frozensets(st.sampled_from(_VOCABULARY), max_size=9), max_size=60),
       st.sampled_from(["numbers", "list", "strings"]))
def test_the_pairs_are_those_of_the_scheme_bucket_by_bucket(frequency, word_sets, keyed):
    # A small vocabulary: members with the same hot words, shared buckets and ties in every bucket.
    if keyed == "list":  # words as subject_pairs.py passes them: a list by number
        keys, words = list(range(len(word_sets))), word_sets
    else:  # a dict by key: numbers with gaps, or strings given in the reverse of their order
        numbers = range(len(word_sets))
        keys = [3 * i + 7 for i in numbers] if keyed == "numbers" else [f"m{i:03d}" for i in reversed(numbers)]
        words = dict(zip(keys, word_sets))
    members = keys + keys[::3]  # a member given twice counts once
    assert paired_by_hot_words(frequency, members, words).keys() == _pairs_by_the_book(frequency, members, words)


def test_no_hot_word_leaves_the_pairs_unchanged(monkeypatch):
    ms = hot_bank(40)  # every word under the cap
    before = subject_pairs(ms)
    assert before and HIDDEN in {(p.a, p.b) for p in before}
    monkeypatch.setattr(subject_pairs_module, "paired_by_hot_words", lambda frequency, members, words: set())
    assert subject_pairs(ms) == before


def _bank_store(root: Path, n: int) -> Path:
    lines = []
    for i, m in enumerate(hot_bank(n, vocab_size=12)):
        lines.append(json.dumps({
            "id": f"r{i:05d}", "text": m.body, "entities": [], "tags": [], "confidence": 0.8, "corroboration": 1,
            "pinned": False, "source": "test", "created_at": "2026-06-01T00:00:00Z", "updated_at": None,
            "invalid_at": None, "superseded_by": None, "revision": 1,
        }))
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "memories.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "settings.toml").write_text("[llm]\nmax_pairs_per_stage = 5\n", encoding="utf-8")
    return root


def test_the_plan_says_how_many_pairs_wait_and_its_bytes_are_stable(tmp_path):
    store = _bank_store(tmp_path / "store", 300)
    args = ("plan", str(store), "--json", "--model", "stub", "--no-cache", "--now", NOW, "--config", str(store / "settings.toml"))
    # Two processes with different string hashes: no set order reaches the plan.
    runs = [run_cli_process(*args, env={**os.environ, "PYTHONHASHSEED": seed}) for seed in ("1", "2")]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
    plan = json.loads(runs[0].stdout)
    (capped,) = [f for f in plan["findings"] if f["kind"] == "capped" and f["reason"].startswith("conflicts")]
    found = re.search(r"conflicts: (\d+) of (\d+) same-subject pairs not asked about in this run \(llm.max_pairs_per_stage = 5\): "
                      r"it asks about the 2 strongest and 3 pairs of window (\d+) of (\d+) of the others", capped["reason"])
    assert found, capped["reason"]
    waiting, pairs, window, windows = map(int, found.groups())
    # 2 strongest, windows of 3: as many as the others need, or the next count sharing no factor with 2, 3, 5, 7
    assert windows == next(n for n in count(-(-(pairs - 2) // 3)) if gcd(n, 210) == 1)
    assert window == dt.date.fromisoformat(NOW).toordinal() % windows + 1
    assert pairs - waiting == 5
