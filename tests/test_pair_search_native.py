"""The C forms of the subject-pair search's inner loops (pipeline/rules/_pair_search.c) against their
Python references: the same values in the same order, the same errors, on random inputs. The rest of
the suite runs the C forms wherever the search runs (native.py prefers them when they are built)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pipeline.rules import hot_subjects, native, subject_pairs, text
from pipeline.rules.text import _NOT_SIGNIFICANT_ASCII

compiled = native.compiled
SOURCE = Path(text.__file__).with_name("_pair_search.c")
pytestmark = pytest.mark.skipif(
    os.environ.get("MEMCONSOLIDATE_PURE_PYTHON", "") not in ("", "0"), reason="MEMCONSOLIDATE_PURE_PYTHON is set")


def test_the_c_forms_are_built_and_newer_than_their_source():
    # `pip install -e .` builds them (a C compiler is needed; .ci/run's machine has one). Without them
    # every plan is still right, only slower, so this is the test that says they are missing.
    assert compiled is not None, "pipeline/rules/_pair_search.c is not built: run `pip install -e .` (needs a C compiler)"
    built = Path(compiled.__file__)
    assert built.stat().st_mtime >= SOURCE.stat().st_mtime, f"{built.name} is older than {SOURCE.name}: run `pip install -e .` again"


def test_each_is_preferred_over_its_reference():
    assert subject_pairs._scored_pairs is compiled.scored_pairs
    assert hot_subjects._bucket_neighbours is compiled.bucket_neighbours
    assert hot_subjects._hot_signatures is compiled.hot_signatures
    assert subject_pairs._document_frequencies is compiled.document_frequencies
    assert text._significant_tuples is compiled.significant_tuples


_WORDS = st.sampled_from([f"w{i}" for i in range(12)])
_WORDS_MANY = st.sampled_from([f"w{i}" for i in range(40)])


# ---- significant_tuples -----------------------------------------------------------------------

_ASCII_TEXT = st.text(alphabet=st.sampled_from(list("abcdefg0123 \t\n\x0b\x0c\r\x1c\x1f_-")), max_size=60)
_TAGS = st.sampled_from(["Ops", "ops", "db", "x", "abc", "Q"])
# The word of each tag: most as subject_pairs makes them, some equal to another tag's or a text's word,
# some the word of a stopword (kept all the same: a tag's word is never left out).
_TAG_WORDS = st.fixed_dictionaries({tag: st.sampled_from([f"#tag:{tag.lower()}", "#tag:ops", "abc", "the", "a"]) for tag in
                                    ["Ops", "ops", "db", "x", "abc", "Q"]})


@given(st.lists(st.tuples(_ASCII_TEXT, st.lists(_TAGS, max_size=4) | st.lists(_TAGS, max_size=4).map(tuple)), max_size=30),
       _TAG_WORDS)
@settings(max_examples=300, deadline=None)
def test_significant_tuples_are_the_references(memories, tag_word):
    texts, tags = [t for t, _ in memories], [ts for _, ts in memories]
    got = compiled.significant_tuples(texts, _NOT_SIGNIFICANT_ASCII, tags, tag_word)
    want = text.significant_tuples(texts, _NOT_SIGNIFICANT_ASCII, tags, tag_word)
    assert got == want
    assert all(type(words) is tuple for words in got[0])


def test_significant_tuples_are_interned_words_shared_between_memories():
    (a, b), sizes = compiled.significant_tuples(["deploy ledger ledger", "ledger rollback"], frozenset(), [["Ops"], ["ops", "Ops"]],
                                                {"Ops": "#tag:ops", "ops": "".join(["#tag:", "ops"])})
    assert a == ("deploy", "ledger", "#tag:ops") and b == ("ledger", "rollback", "#tag:ops") and sizes == [2, 2]
    # One object for a word in every memory's words, and it is the interned one (a tag's word too).
    assert b[0] is a[1] is sys.intern("ledger")
    assert b[2] is a[2] is sys.intern("#tag:ops")


def test_significant_tuples_refuse_what_is_not_ascii_text_or_tags_as_made():
    with pytest.raises(ValueError):
        compiled.significant_tuples(["caf\u00e9 menu"], frozenset(), [[]], {})
    with pytest.raises(TypeError):  # as str.split of bytes in the reference
        compiled.significant_tuples([b"bytes"], frozenset(), [[]], {})
    with pytest.raises(ValueError):  # a tag's word that is not ASCII
        compiled.significant_tuples(["menu"], frozenset(), [["cafe"]], {"cafe": "#tag:caf\u00e9"})
    with pytest.raises(TypeError):
        compiled.significant_tuples(("a tuple",), frozenset(), [[]], {})
    for tags in ([], [[], []]):  # tags for each text
        with pytest.raises(ValueError):
            compiled.significant_tuples(["menu"], frozenset(), tags, {})
        with pytest.raises(ValueError):
            text.significant_tuples(["menu"], frozenset(), tags, {})
    for tags in ([{"db"}], [[b"db"]], ["db"]):
        with pytest.raises(TypeError):
            compiled.significant_tuples(["menu"], frozenset(), tags, {"db": "#tag:db"})
    with pytest.raises(KeyError):  # a tag without its word, as the reference's lookup
        compiled.significant_tuples(["menu"], frozenset(), [["db"]], {})
    with pytest.raises(TypeError):
        compiled.significant_tuples(["menu"], frozenset(), [["db"]], {"db": 1})


def test_a_store_with_many_words_grows_the_table_of_words_seen():
    texts = [" ".join(f"w{i}x{j}" for j in range(40)) for i in range(400)]  # 16,000 distinct words
    tags = [[f"t{i}", f"t{i + 1}"] for i in range(400)]
    tag_word = {f"t{i}": f"#tag:t{i}" for i in range(401)}
    got = compiled.significant_tuples(texts, frozenset(), tags, tag_word)
    assert got == text.significant_tuples(texts, frozenset(), tags, tag_word)
    assert len(got[0][0]) == 42 and got[1][0] == 40


def test_significant_of_each_is_the_same_with_or_without_ascii():
    # One text not ASCII: every text through the Python form, with the same words in the same order.
    texts = ["deploy the ledger ledger at night", "rollback ledger", "caf\u00e9 menu of the day"]
    tags = [["Ops"], [], ["ops", "db"]]
    words, sizes = text.significant_of_each(texts, tags, lambda t: f"#tag:{t.lower()}")
    assert words == [("deploy", "ledger", "night", "#tag:ops"), ("rollback", "ledger"), ("caf\u00e9", "menu", "day", "#tag:ops", "#tag:db")]
    assert sizes == [3, 2, 3]
    assert text.significant_of_each(texts[:2], tags[:2], lambda t: f"#tag:{t.lower()}") == (words[:2], sizes[:2])
    # ASCII texts with a tag whose word is not: the Python form too (the C form reads ASCII words only).
    assert text.significant_of_each(["menu menu"], [["Caf\u00e9"]], lambda t: f"#tag:{t.lower()}") == ([("menu", "#tag:caf\u00e9")], [1])


# ---- document_frequencies -------------------------------------------------------------------

_MEMORY_WORDS = st.lists(_WORDS_MANY, max_size=12, unique=True).map(tuple)


@given(st.lists(_MEMORY_WORDS, max_size=40))
@settings(max_examples=300, deadline=None)
def test_document_frequencies_are_the_references_in_their_order(memories):
    assert compiled.document_frequencies(memories) == subject_pairs.document_frequencies(memories)


def test_document_frequencies_of_many_words_and_equal_words_that_are_not_one_object():
    memories = [(f"w{i}", f"w{i + 1}", "".join(["sha", "red"])) for i in range(3000)]  # 3,001 words
    got = compiled.document_frequencies(memories)
    assert got == subject_pairs.document_frequencies(memories)
    assert got[0] == ("shared", 3000)
    with pytest.raises(TypeError):
        compiled.document_frequencies([(1, 2)])
    with pytest.raises(TypeError):
        compiled.document_frequencies([["a"]])
    with pytest.raises(TypeError):
        compiled.document_frequencies([frozenset({"a"})])


# ---- hot_signatures ---------------------------------------------------------------------------

@given(st.lists(st.lists(_WORDS, max_size=9, unique=True).map(tuple), max_size=20),
       st.dictionaries(_WORDS, st.integers(min_value=0, max_value=10**6) | st.integers(min_value=-5, max_value=5)))
@settings(max_examples=300, deadline=None)
def test_hot_signatures_are_the_references(memories, ranks):
    assert compiled.hot_signatures(memories, ranks) == hot_subjects.hot_signatures(memories, ranks)


def test_hot_signatures_refuse_a_rank_that_is_not_an_int():
    with pytest.raises(TypeError):
        compiled.hot_signatures([("a",)], {"a": 1.5})
    with pytest.raises(TypeError):
        compiled.hot_signatures([["a"]], {"a": 1})
    with pytest.raises(TypeError):
        compiled.hot_signatures([frozenset({"a"})], {"a": 1})


def test_hot_signatures_take_big_ints_as_they_come():
    big = 2**80
    assert compiled.hot_signatures([("a", "b")], {"a": big + 1, "b": big}) == [(big, big + 1)]


# ---- bucket_neighbours ------------------------------------------------------------------------

@st.composite
def _sigs(draw):
    """Members' hot words as ranks (multiples of `stride`, from 1 to `base`), as paired_by_hot_words
    makes them: each sorted, distinct, two or more (a few members with fewer, which are never filed)."""
    members = draw(st.integers(min_value=0, max_value=40))
    base = draw(st.integers(min_value=2, max_value=9))
    stride = max(members, 1)
    sigs = []
    for _ in range(members):
        words = draw(st.sets(st.integers(min_value=1, max_value=base), min_size=0, max_size=base))
        sigs.append(tuple(sorted(w * stride for w in words)))
    return sigs, stride, base


@given(_sigs())
@settings(max_examples=400, deadline=None)
def test_bucket_neighbours_are_the_references_in_their_order(case):
    sigs, stride, base = case
    filed = [s for s in sigs if len(s) >= 2]  # paired_by_hot_words leaves out the others
    for given_sigs in (filed, sigs):
        names = [f"m{i}" for i in range(len(given_sigs))]
        got = compiled.bucket_neighbours(given_sigs, stride, base, names)
        want = hot_subjects.bucket_neighbours(given_sigs, stride, base, names)
        assert list(got.items()) == list(want.items())


def test_bucket_neighbours_refuse_ranks_out_of_range():
    with pytest.raises(OverflowError):
        compiled.bucket_neighbours([(1, 2 ** 70)], 2, 3, [0])
    with pytest.raises(OverflowError):  # a rank above base * stride
        compiled.bucket_neighbours([(2, 8)], 2, 3, [0])
    with pytest.raises(TypeError):
        compiled.bucket_neighbours([[2, 4]], 2, 3, [0])
    with pytest.raises(ValueError):  # a name for each member
        compiled.bucket_neighbours([(2, 4)], 2, 3, [])


# ---- scored_pairs -----------------------------------------------------------------------------

@st.composite
def _scoring(draw):
    n = draw(st.integers(min_value=1, max_value=25))
    # (A word twice in a memory, which significant_tuples never gives, counts once, as in a set.)
    words = [tuple(draw(st.lists(_WORDS, min_size=1, max_size=9, unique=draw(st.booleans())))) for _ in range(n)]
    body_size = [max(0, len(w) - draw(st.integers(min_value=0, max_value=2))) for w in words]
    odd = draw(st.sets(st.integers(min_value=0, max_value=n - 1), max_size=3))
    pairs = draw(st.lists(st.tuples(st.integers(min_value=0, max_value=n - 1), st.integers(min_value=0, max_value=n - 1)), max_size=60))
    min_shared = draw(st.integers(min_value=0, max_value=4))
    min_overlap = draw(st.sampled_from([0.0, 0.25, 0.4, 0.5, 1.0]))
    same = draw(st.sets(st.tuples(st.integers(min_value=0, max_value=n - 1), st.integers(min_value=0, max_value=n - 1))))
    return pairs, words, body_size, odd, n, min_shared, min_overlap, same


@given(_scoring())
@settings(max_examples=400, deadline=None)
def test_scored_pairs_are_the_references_and_ask_the_same_questions(case):
    pairs, words, body_size, odd, n, min_shared, min_overlap, same = case
    sizes = list(map(len, map(set, words)))
    results = []
    for scored in (compiled.scored_pairs, subject_pairs.scored_pairs):
        asked: list[tuple[int, int]] = []

        def same_tokens(a, b, asked=asked):
            asked.append((a, b))
            return (a, b) in same

        results.append((scored(iter(pairs), words, sizes, body_size, odd, n, min_shared, min_overlap, same_tokens), asked))
    (got, got_asked), (want, want_asked) = results
    assert got == want
    assert list(got) == list(want)  # the same ratios in the same order
    assert got_asked == want_asked


def test_scored_pairs_number_equal_words_alike_whatever_their_objects():
    # Words that are equal but not one object (not interned) are shared words all the same.
    a = ("".join(["led", "ger"]), "deploy", "night")
    b = ("deploy", "".join(["le", "dger"]), "day")
    got = compiled.scored_pairs([(0, 1)], [a, b], [3, 3], [3, 3], set(), 2, 2, 0.5, lambda x, y: False)
    assert got == subject_pairs.scored_pairs([(0, 1)], [a, b], [3, 3], [3, 3], set(), 2, 2, 0.5, lambda x, y: False) == {2 / 3: [1]}


def test_scored_pairs_pass_on_an_error_of_the_same_tokens_check():
    def broken(a, b):
        raise KeyError("gone")

    words = [("x", "y"), ("y", "x")]
    with pytest.raises(KeyError):
        compiled.scored_pairs([(0, 1)], words, [2, 2], [2, 2], set(), 2, 2, 0.4, broken)


def test_scored_pairs_refuse_what_the_reference_refuses():
    words = [("x",), ()]
    for bad in ([(0, 5)], [(0,)], [[0, 1]]):
        with pytest.raises((IndexError, TypeError)):
            compiled.scored_pairs(bad, words, [1, 0], [1, 0], set(), 2, 0, 0.0, lambda a, b: False)
    with pytest.raises(ZeroDivisionError):  # as `shared / 0` does in Python
        compiled.scored_pairs([(0, 1)], words, [1, 0], [1, 0], set(), 2, 0, 0.0, lambda a, b: False)


# ---- the whole search -------------------------------------------------------------------------

def test_a_plan_is_the_same_bytes_with_the_c_forms_and_without(tmp_path):
    """The stub's plan of a bank whose words are all hot (every C form runs, the hot subjects' among
    them), made once with the C forms and once with the Python ones."""
    from pipeline.bench import synthetic_bank

    store = synthetic_bank(tmp_path / "bank", 3000)
    plans = []
    for pure in ("0", "1"):
        env = {**os.environ, "MEMCONSOLIDATE_PURE_PYTHON": pure}
        run = subprocess.run([sys.executable, "-m", "pipeline", "plan", str(store), "--model", "stub", "--json",
                              "--now", "2026-11-29", "--no-cache"], capture_output=True, text=True, env=env, check=True)
        plans.append(run.stdout)
    assert '"conflict' in plans[0]  # the conflicts stage had pairs to judge
    assert plans[0] == plans[1]


def test_words_that_are_not_str_are_refused_not_compared_by_python_code():
    # A set member of another type could run Python code while the C forms hold borrowed references.
    with pytest.raises(TypeError):
        compiled.scored_pairs([(0, 1)], [(1, 2), (1, 2)], [2, 2], [2, 2], set(), 2, 2, 0.4, lambda a, b: False)
    with pytest.raises(TypeError):
        compiled.scored_pairs([(0, 1)], [frozenset({"a"}), ("a",)], [1, 1], [1, 1], set(), 2, 1, 0.4, lambda a, b: False)
    with pytest.raises(TypeError):
        compiled.hot_signatures([(1,)], {1: 5})


def test_what_could_run_python_code_mid_read_is_refused_up_front():
    # Found by review: each of these ran the caller's code while a borrowed reference was held.
    class Colliding:
        def __hash__(self):
            return hash("abc")

        def __eq__(self, other):
            return False

    class OwnTuple(tuple):
        pass

    with pytest.raises(TypeError):
        compiled.significant_tuples(["abc def"], frozenset({Colliding()}), [[]], {})
    with pytest.raises(TypeError):
        compiled.significant_tuples(["abc def"], frozenset(), [["abc"]], {Colliding(): "#tag:x", "abc": "#tag:abc"})
    with pytest.raises(TypeError):
        compiled.hot_signatures([("abc",)], {Colliding(): 1, "abc": 2})
    with pytest.raises(TypeError):
        compiled.hot_signatures([OwnTuple(("abc",))], {"abc": 2})
    with pytest.raises(TypeError):
        compiled.scored_pairs([(0, 1)], [OwnTuple(("a", "b")), ("a", "b")], [2, 2], [2, 2], set(), 2, 2, 0.4, lambda a, b: False)
    with pytest.raises(TypeError):
        compiled.bucket_neighbours([(2, True)], 2, 3, [0])


def test_edge_cases_found_by_review_match_the_references():
    # a rank twice in one member (never made by hot_signatures) pairs it with nobody, not with itself
    assert compiled.bucket_neighbours([(2, 2, 4)], 1, 4, [0]) == hot_subjects.bucket_neighbours([(2, 2, 4)], 1, 4, [0]) == {}
    # body_size[b] is read only when the reference reads it
    words = [("x", "y", "z"), ("x", "y")]
    args = ([(0, 1)], words, [3, 2], [3], set(), 2, 2, 0.4, lambda a, b: False)
    assert compiled.scored_pairs(*args) == subject_pairs.scored_pairs(*args) == {1.0: [1]}
    with pytest.raises(ValueError):  # a negative count of memories
        compiled.scored_pairs([(0, 1)], words, [3, 2], [3, 2], set(), -3, 2, 0.4, lambda a, b: False)
    with pytest.raises(OverflowError):  # a place past the largest int64
        compiled.bucket_neighbours([(3, 6)] * 3, 3, (2**63 - 1) // 3 - 1, [0, 1, 2])


def test_a_list_whose_iteration_changes_the_tag_words_is_refused_not_read():
    # Found by the second review: the checks ran before a list subclass's __iter__, which could put
    # what is not a str among the tag words (a crash when read as one).
    tag_word = {"t": "#tag:t"}

    class Changing(list):
        def __iter__(self):
            tag_word["t"] = 10**22
            return super().__iter__()

    with pytest.raises(TypeError):
        compiled.significant_tuples(Changing(["hello world"]), frozenset(), [["t"]], tag_word)
    with pytest.raises(OverflowError):  # near 2**63 the bound itself once overflowed
        compiled.bucket_neighbours([(2, 4), (2, 4)], 2, 2**63 - 1, ["a", "b"])
