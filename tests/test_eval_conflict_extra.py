"""The extra `conflict` training set (`evals/datasets/conflict_extra.jsonl`) stays well formed,
balanced, and independent of the held-out split.

It is training material for the conflict judge and its heuristics, so besides the dataset contract
it must not leak into the evaluation: no text of it may reappear, even loosely, in `evals/holdout/`
(or in the dev split it is meant to complement). Failures name only the extra case's id, so the
held-out texts are never printed.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from pipeline.rules.text import normalize, significant_words, tokens
from test_eval_datasets import load_path as load, texts

EVALS = Path(__file__).resolve().parent.parent / "evals"
EXTRA = EVALS / "datasets" / "conflict_extra.jsonl"
README = EVALS / "README.md"
TABLE_HEADING = "### `datasets/conflict_extra.jsonl`"

MIN_CASES = 90
BALANCE = (0.35, 0.65)
WORDS = (5, 35)
# Significant-word Jaccard at or above this between two texts counts as the same text reworded.
NEAR_SHARED = 0.5

REQUIRED = {"id", "stage", "a", "b", "label"}
OPTIONAL = {"kind", "tags"}
ID_PATTERN = re.compile(r"^conflict-x\d{3}$")
CONFLICT_KINDS = {"opposing_advice", "incompatible_approach", "factual_disagreement", "superseded"}
# tag -> the only label it may carry (None: either label); the vocabulary of evals/README.md.
TAG_LABELS: dict[str, bool | None] = {
    "one_word": True, "always_never": True, "before_after": True, "implicit": True,
    "compatible_same_subject": False, "different_scope": False, "different_subject": False,
    "negated_paraphrase": False, "paraphrase": False, "past_event_consistent": False,
    "question": False,
    "number": None, "version": None, "antonym": None, "negation": None, "dated": None,
    "hedged": None,
}


def features(text: str) -> tuple[str, frozenset[str]]:
    """What `near_shared` compares, computed once per text (each is compared with hundreds)."""
    return normalize(text), frozenset(significant_words(text))


def near_shared(mine: tuple[str, frozenset[str]], theirs: tuple[str, frozenset[str]]) -> bool:
    if mine[0] == theirs[0]:
        return True
    a, b = mine[1], theirs[1]
    union = a | b
    return bool(union) and len(a & b) / len(union) >= NEAR_SHARED


def overlapping_ids(paths: list[Path]) -> list[str]:
    """Ids of extra cases with a text identical or near-identical to a text of one of `paths`.

    Takes paths, not texts, so a failing assertion shows file names and extra ids, never the
    other files' texts (pytest prints the arguments of calls inside an assert).
    """
    others = [features(t) for path in paths for r in load(path) for t in texts(r)]
    assert others, [p.name for p in paths]
    hits = {
        row["id"]
        for row in load(EXTRA)
        for mine in map(features, texts(row))
        if any(near_shared(mine, theirs) for theirs in others)
    }
    return sorted(hits)


ROWS = load(EXTRA)


def test_shape_and_ids() -> None:
    assert len(ROWS) >= MIN_CASES
    for row in ROWS:
        assert REQUIRED <= row.keys(), (row.get("id"), sorted(REQUIRED - row.keys()))
        assert row.keys() <= REQUIRED | OPTIONAL, (row["id"], sorted(row.keys() - REQUIRED - OPTIONAL))
        assert row["stage"] == "conflict", row["id"]
        assert ID_PATTERN.match(row["id"]), row["id"]
    ids = [r["id"] for r in ROWS]
    assert ids == sorted(ids)
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_ids_unique_against_every_other_dataset() -> None:
    others = {
        r["id"]
        for folder in ("datasets", "holdout")
        for path in sorted((EVALS / folder).glob("*.jsonl"))
        if path != EXTRA
        for r in load(path)
    }
    assert sorted(r["id"] for r in ROWS if r["id"] in others) == []


def test_labels_kinds_and_tags() -> None:
    for row in ROWS:
        assert type(row["label"]) is bool, row["id"]
        if row["label"]:
            assert row.get("kind") in CONFLICT_KINDS, row["id"]
        else:
            assert "kind" not in row, row["id"]
        tags = row.get("tags")
        assert isinstance(tags, list) and tags and len(set(tags)) == len(tags), row["id"]
        for tag in tags:
            assert tag in TAG_LABELS, (row["id"], tag)
            wanted = TAG_LABELS[tag]
            assert wanted is None or wanted == row["label"], f"{row['id']}: tag {tag} with label {row['label']}"


def test_class_balance() -> None:
    share = sum(r["label"] for r in ROWS) / len(ROWS)
    assert BALANCE[0] <= share <= BALANCE[1], share


def test_texts_are_plausible_candidates() -> None:
    seen: set[frozenset[str]] = set()
    for row in ROWS:
        for text in (row["a"], row["b"]):
            assert isinstance(text, str) and text == text.strip(), row["id"]
            assert WORDS[0] <= len(tokens(text)) <= WORDS[1], row["id"]
        assert normalize(row["a"]) != normalize(row["b"]), f"{row['id']}: a duplicate"
        # The stage only ever sees pairs on a shared subject.
        assert significant_words(row["a"]) & significant_words(row["b"]), row["id"]
        key = frozenset((normalize(row["a"]), normalize(row["b"])))
        assert key not in seen, f"{row['id']}: the same case twice"
        seen.add(key)


def test_no_case_is_near_a_holdout_case() -> None:
    # Read programmatically only: a failure names the extra case, never the held-out text.
    assert overlapping_ids(sorted((EVALS / "holdout").glob("*.jsonl"))) == []


def test_no_case_is_near_a_dev_case() -> None:
    # A training set that rewords the dev cases would inflate the dev numbers it is tuned against.
    dev = [p for p in sorted((EVALS / "datasets").glob("*.jsonl")) if p != EXTRA]
    assert overlapping_ids(dev) == []


def readme_table() -> dict[str, tuple[int, int, int]]:
    """The `| row | true | false | total |` rows under this file's heading in evals/README.md."""
    table: dict[str, tuple[int, int, int]] = {}
    inside = False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            inside = line.strip() == TABLE_HEADING
            continue
        row = re.match(r"^\|\s*`?([\w ]+?)`?\s*\|\s*(\d+|-)\s*\|\s*(\d+|-)\s*\|\s*(\d+)\s*\|\s*$", line)
        if inside and row:
            t, f = (int(x) if x != "-" else 0 for x in row.group(2, 3))
            table[row.group(1)] = (t, f, int(row.group(4)))
    return table


def test_readme_counts_match_the_file() -> None:
    trues = sum(r["label"] for r in ROWS)
    expected = {"all cases": (trues, len(ROWS) - trues, len(ROWS))}
    for tag in sorted({t for r in ROWS for t in r["tags"]}):
        tagged = [r for r in ROWS if tag in r["tags"]]
        t = sum(r["label"] for r in tagged)
        expected[tag] = (t, len(tagged) - t, len(tagged))
    for kind in sorted(CONFLICT_KINDS):
        n = sum(r.get("kind") == kind for r in ROWS)
        expected[f"kind {kind}"] = (n, 0, n)
    assert readme_table() == expected
