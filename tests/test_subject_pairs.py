"""Same-subject pairs (the conflicts stage's candidates): what the index finds, and that the faster
search of issue 14 (numbers for keys, pairs as ints, only the offered pairs built) finds the same."""

from __future__ import annotations

import hashlib
import random
import weakref
from contextlib import contextmanager
from itertools import combinations, count
from math import gcd

import pipeline.rules.subject_pairs as subject_pairs_module
from pipeline.rules.hot_subjects import hot_pairs
from pipeline.rules.pair_windows import Offer
from pipeline.rules.subject_pairs import SubjectPair, pairs_to_offer, subject_pairs
from pipeline.storage.gc_pause import gc_paused
from pipeline.rules.text import normalize, significant_words

from helpers import mem
from test_hot_subjects import hot_bank


def mixed(n: int, seed: int):
    """Two groups, tags, a small vocabulary (hot words above the cap of 50) and ids shared by a few
    memories each (cold words under it): both ways of finding a pair are used."""
    rng = random.Random(seed)
    vocab = [f"w{i:02d}" for i in range(30)]
    return [
        mem(f"k{i:04d}", " ".join(["deploy", *rng.sample(vocab, rng.randint(2, 6)), f"id{i % 97}"]), group=rng.choice("gh"),
            tags=rng.sample(["ops", "ci", "db"], rng.randint(0, 2)))
        for i in range(n)
    ]


def digest(pairs: list[SubjectPair]) -> str:
    return hashlib.sha256("\n".join(f"{p.a} {p.b} {p.overlap} {' '.join(p.shared)}" for p in pairs).encode()).hexdigest()[:16]


def test_the_pairs_are_those_the_search_found_before_it_was_made_faster():
    # Digests of the pairs of the one-level hot-subject index (session 9) scored one pair at a time,
    # as the search did before: scoring them in bulk must not move the plan's candidates or its count
    # of the pairs not asked about.
    assert digest(subject_pairs(hot_bank(3000))) == "724b415c9f9b531f"
    assert digest(subject_pairs(mixed(2000, 3))) == "ca390f9f08e1c353"
    assert digest(subject_pairs(mixed(5000, 4))) == "c82d4b3d18487f28"
    # A key seen twice (no reader makes one, the function allows it): its last memory's words count,
    # and each of its memories files its own.
    ms = mixed(300, 2)
    assert digest(subject_pairs([*ms, mem(ms[10].key, ms[20].body, group=ms[20].group, tags=ms[20].tags)])) == "8b919b12f0fe08db"


def test_a_key_whose_last_memory_has_no_significant_word_pairs_with_nothing():
    # "x" files its first memory's words ("alpha beta") but counts with its last one's: none. Found
    # through "alpha", the pair shares no word that counts, so it is dropped, not divided by zero.
    ms = [mem("x", "alpha beta gamma"), mem("y", "alpha beta delta"), mem("x", "the and of")]
    assert subject_pairs(ms) == []
    assert pairs_to_offer(ms, 10) == Offer([], [], 0, 0, 0)


def test_a_limit_of_zero_or_less_offers_nothing_and_counts_every_pair():
    ms = mixed(300, 1)
    every = subject_pairs(ms)
    for limit in (0, -1):
        offer = pairs_to_offer(ms, limit)
        assert (offer.pairs, offer.found, offer.waiting, offer.windows) == ([], len(every), len(every), 0)


def _all_pairs(memories, min_overlap=0.4, min_shared=2, per_memory=5, skip=lambda a, b: False):
    """Every same-group pair compared, for a store too small to need the index; those `skip`
    refuses left out before each memory's `per_memory` strongest are chosen."""
    words = {m.key: significant_words(m.body) | {f"#tag:{t.lower()}" for t in m.tags} for m in memories}
    scored = []
    for a, b in combinations(sorted(memories, key=lambda m: m.key), 2):
        shared = words[a.key] & words[b.key]
        ratio = len(shared) / min(len(words[a.key]), len(words[b.key])) if shared else 0.0
        same_tokens = set(normalize(a.body).split()) == set(normalize(b.body).split())
        if a.group == b.group and len(shared) >= min_shared and ratio >= min_overlap and not same_tokens and not skip(a.key, b.key):
            scored.append((-round(ratio, 4), a.key, b.key, tuple(sorted(shared))))
    taken: dict[str, int] = {}
    kept = []
    for neg, a, b, shared in sorted(scored):
        if taken.get(a, 0) < per_memory and taken.get(b, 0) < per_memory:
            taken[a] = taken.get(a, 0) + 1
            taken[b] = taken.get(b, 0) + 1
            kept.append(SubjectPair(a, b, -neg, shared))
    return sorted(kept, key=lambda p: (p.a, p.b))


def test_under_the_frequency_cap_the_index_finds_what_comparing_all_pairs_finds():
    for seed in range(12):
        ms = mixed(45, seed)  # at most 45 memories: no word is hot, the index sees every pair
        assert subject_pairs(ms) == _all_pairs(ms), seed
        assert subject_pairs(ms, per_memory=2, min_overlap=0.2) == _all_pairs(ms, per_memory=2, min_overlap=0.2), seed


def _by_strength(pairs: list[SubjectPair]) -> list[SubjectPair]:
    return sorted(pairs, key=lambda p: (-p.overlap, p.a, p.b))


def _by_keys(pairs: list[SubjectPair]) -> list[SubjectPair]:
    return sorted(pairs, key=lambda p: (p.a, p.b))


def test_a_run_offers_the_strongest_half_and_one_window_of_the_others_by_its_turn():
    ms = mixed(1500, 5)
    every = _by_strength(subject_pairs(ms))
    assert len(every) > 400
    # As many windows of 200 as the others need, or the next count sharing no factor with 2, 3, 5, 7.
    windows = next(n for n in count(-(-(len(every) - 200) // 200)) if gcd(n, 210) == 1)
    for turn in (0, 1, windows - 1, windows, 12345):
        offer = pairs_to_offer(ms, 400, turn)
        window = turn % windows
        others = every[200:]
        wrapped = [others[(200 * window + i) % len(others)] for i in range(200)]  # a window past the end wraps
        assert offer == Offer(_by_keys(every[:200]), _by_keys(wrapped), len(every), window, windows)
        assert offer.waiting == len(every) - 400
    assert pairs_to_offer(ms, len(every) + 10) == Offer(_by_keys(every), [], len(every), 0, 0)
    assert pairs_to_offer(ms, len(every)) == Offer(_by_keys(every), [], len(every), 0, 0)


def test_pairs_skip_refuses_are_neither_offered_nor_counted():
    skip = lambda a, b: a.endswith("7") or b.endswith("3")  # noqa: E731
    for seed in range(6):
        ms = mixed(45, seed)
        every = _all_pairs(ms, skip=skip)
        assert every and pairs_to_offer(ms, 1000, skip=skip) == Offer(every, [], len(every), 0, 0), seed
    ms = mixed(1500, 5)
    offer = pairs_to_offer(ms, 50, 0, skip=skip)
    assert offer.found > 50 and not any(skip(p.a, p.b) for p in offer.pairs)


def test_a_pair_skip_refuses_takes_no_memory_s_place_among_its_strongest_partners():
    # Six volumes of one consolidated topic pair with each other more strongly than with the note,
    # and those pairs are refused: the note's pairs with them are the ones to offer, as many as the
    # note's five places allow (chosen before refusing, the volumes' places held only each other).
    volumes = [mem(f"deploy-{i}", f"deploy pipeline canary blue green rollback volume{i}", tags=["deploy"]) for i in range(6)]
    note = mem("note", "deploy pipeline canary uses blue green never rollback")
    topic = {m.key for m in volumes}
    skip = lambda a, b: a in topic and b in topic  # noqa: E731
    offer = pairs_to_offer([*volumes, note], 100, skip=skip)
    assert offer.found == len(offer.pairs) == 5 and all("note" in (p.a, p.b) for p in offer.pairs)


def test_the_order_of_the_memories_does_not_change_the_pairs():
    ms = mixed(800, 9)
    shuffled = list(ms)
    random.Random(1).shuffle(shuffled)
    assert subject_pairs(shuffled) == subject_pairs(ms)


def test_hot_pairs_take_any_keys_ordered_as_the_memories_keys():
    ms = hot_bank(2000)
    hot: dict[str, list[str]] = {}
    for m in ms:
        for w in set(m.body.split()):
            hot.setdefault(w, []).append(m.key)
    hot = {w: ks for w, ks in hot.items() if len(ks) > 50}
    words = {m.key: frozenset(m.body.split()) for m in ms}
    keys = sorted(words)
    number = {k: i for i, k in enumerate(keys)}
    by_number = hot_pairs({w: [number[k] for k in ks] for w, ks in hot.items()}, {number[k]: ws for k, ws in words.items()})
    assert {(keys[a], keys[b]) for a, b in by_number} == hot_pairs(hot, words)


def test_the_search_is_freed_before_the_collector_comes_back(monkeypatch):
    # The search's containers (a million on a bank of 50k memories) must be gone when the paused
    # collector is enabled again: alive then, its first collection walked all of them (30 ms).
    searches: weakref.WeakSet = weakref.WeakSet()
    made = subject_pairs_module._Search.__init__

    def init(self, *args):
        made(self, *args)
        searches.add(self)

    alive_at_the_end: list[int] = []

    @contextmanager
    def paused():
        with gc_paused():
            yield
            alive_at_the_end.append(len(searches))

    monkeypatch.setattr(subject_pairs_module._Search, "__init__", init)
    monkeypatch.setattr(subject_pairs_module, "gc_paused", paused)
    offer = pairs_to_offer(mixed(300, 4), 10)
    assert offer.found > 10 and len(offer.pairs) == 10
    assert alive_at_the_end == [0]



def test_a_pair_found_both_through_a_rarer_word_and_in_a_hot_subject_is_kept_once():
    # 2,000 memories of a small vocabulary (every word hot) and 30 pairs with the same six hot words
    # each (so paired in the hot subjects) and an id only the two share (so paired through it): more
    # pairs from the hot subjects than through the ids, so the ids' pairs are taken out of those.
    rng = random.Random(3)
    vocab = [f"w{i:02d}" for i in range(12)]
    ms = [mem(f"b{i:04d}", " ".join(["deploy", *rng.sample(vocab, rng.randint(3, 4)), f"id{i}"])) for i in range(2000)]
    sixes = rng.sample(list(combinations(vocab, 6)), 30)
    for j, six in enumerate(sixes):
        ms += [mem(f"p{j:02d}a", " ".join(["deploy", *six, f"pair{j}", "first"])),
               mem(f"p{j:02d}b", " ".join(["deploy", *six, f"pair{j}", "second"]))]
    pairs = [(p.a, p.b) for p in subject_pairs(ms, per_memory=100)]
    assert len(set(pairs)) == len(pairs)
    assert {(f"p{j:02d}a", f"p{j:02d}b") for j in range(30)} <= set(pairs)
