from hypothesis import given, strategies as st

from pipeline.rules.duplicates import merge_duplicates, report_reorders
from pipeline.rules.text import normalize

from helpers import mem


def test_normalize_is_unicode_aware():
    assert normalize("  Ünïcode—Straße, ok!! ") == "ünïcode strasse ok"
    assert normalize("snake_case and CamelCase") == "snake case and camelcase"


def test_identical_normalized_text_merges_into_oldest_strongest():
    ms = [
        mem("g/a", "The blog publishes on Tuesdays.", corroboration=1, created="2026-01-02"),
        mem("g/b", "the blog publishes on tuesdays", corroboration=3, created="2026-01-05"),
        mem("g/c", "THE BLOG PUBLISHES ON TUESDAYS!", corroboration=3, created="2026-01-03"),
    ]
    out = merge_duplicates(ms)
    assert [(a.kind, a.survivor, a.targets) for a in out.actions] == [
        ("merge_duplicate", "g/c", ["g/c", "g/a", "g/b"])
    ]


def test_pinned_survives_and_is_never_retired():
    ms = [
        mem("g/a", "Same text", corroboration=9),
        mem("g/b", "same text", pinned=True),
        mem("g/c", "same  text", pinned=True),
    ]
    out = merge_duplicates(ms)
    assert [(a.survivor, a.targets) for a in out.actions] == [("g/b", ["g/b", "g/a"])]
    assert [(f.kind, f.targets) for f in out.findings] == [("pinned_skipped", ["g/c"])]


def test_all_pinned_group_retires_nothing():
    out = merge_duplicates([mem("g/a", "x y", pinned=True), mem("g/b", "X Y", pinned=True)])
    assert out.actions == []
    assert [f.kind for f in out.findings] == ["pinned_skipped"]


def test_one_word_difference_never_groups():
    ms = [mem("g/a", "The release always publishes notes."), mem("g/b", "The release never publishes notes.")]
    assert merge_duplicates(ms).actions == []
    assert report_reorders(ms).findings == []


def test_role_swap_is_a_reorder_candidate_not_a_merge():
    ms = [mem("g/a", "Alice manages Bob."), mem("g/b", "Bob manages Alice.")]
    assert merge_duplicates(ms).actions == []
    assert [(f.kind, f.targets) for f in report_reorders(ms).findings] == [("reorder_candidate", ["g/a", "g/b"])]


def test_groups_do_not_cross_banks_or_folders():
    ms = [mem("a/1", "same", group="a"), mem("b/1", "same", group="b")]
    assert merge_duplicates(ms).actions == []


def test_empty_bodies_are_not_duplicates():
    assert merge_duplicates([mem("g/a", "  "), mem("g/b", "!!")]).actions == []


words = st.lists(st.sampled_from(["deploy", "runs", "on", "fridays", "alice", "bob", "never", "always"]), min_size=1, max_size=6)


@given(st.lists(words, min_size=2, max_size=8))
def test_merges_only_identical_text_and_never_retire_pinned(texts):
    ms = [mem(f"g/{i}", " ".join(t), pinned=(i % 3 == 0)) for i, t in enumerate(texts)]
    by_key = {m.key: m for m in ms}
    out = merge_duplicates(ms)
    retired = []
    for a in out.actions:
        norms = {normalize(by_key[t].body) for t in a.targets}
        assert len(norms) == 1
        retired += [t for t in a.targets if t != a.survivor]
    assert not any(by_key[t].pinned for t in retired)
    assert len(retired) == len(set(retired))
    for f in report_reorders(ms).findings:
        assert len({frozenset(normalize(by_key[t].body).split()) for t in f.targets}) == 1
        assert len({normalize(by_key[t].body) for t in f.targets}) == len(f.targets)


def test_the_text_rules_group_exactly_the_comparable_memories():
    # Excluded by the adapter, or with no text left once normalized; the whole store at once and
    # one memory alone (comparable_texts and comparable) agree.
    from pipeline.rules.duplicates import comparable, comparable_texts, text_groups

    ms = [mem("a", "Deploy on Fridays"), mem("b", "deploy on fridays!"), mem("c", ""), mem("d", " ,; "),
          mem("e", "Deploy on Fridays", extra={"compare": False}), mem("f", "on Fridays deploy"), mem("g", "ünïcode")]
    groups = text_groups(ms)
    grouped = {m.key for m in groups.representatives} | {m.key for g in groups.duplicates for m in g}
    assert grouped == {m.key for m in ms if comparable(m)} == {"a", "b", "f", "g"}
    live, texts, is_live = comparable_texts(ms)
    assert [m.key for m in live] == ["a", "b", "f", "g"] and is_live == [True, True, False, False, False, True, True]
    assert texts == ["deploy on fridays", "deploy on fridays", "on fridays deploy", "ünïcode"]
    assert comparable_texts(live) == (live, texts, None)
