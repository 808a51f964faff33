"""The labelled eval datasets in `evals/` obey the DESIGN.md contract and stay honest.

Besides the format, these checks keep the labels and the difficulty tags from drifting apart
(a `role_swap` reorder case can only be labelled "different"), keep the held-out split really
held out (no shared or near-shared text with the dev split), and keep `evals/README.md`'s counts
true to the files.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pipeline.rules.text import normalize, significant_words, tokens

EVALS = Path(__file__).resolve().parent.parent / "evals"
README = EVALS / "README.md"

PAIR_STAGES = ("conflict", "reorder")
JUDGED_STAGES = ("conflict", "reorder", "rule")
DEV_MIN = {"conflict": 60, "reorder": 60, "rule": 60, "metadata": 20, "split": 20}
HOLDOUT_MIN = 40
BALANCE = (0.35, 0.65)
WORDS = (5, 30)
# Significant-word Jaccard at or above this between a dev text and a holdout text means the
# holdout is not independent of what the stage engineers tuned on.
NEAR_SHARED = 0.5

CONFLICT_KINDS = {"opposing_advice", "incompatible_approach", "factual_disagreement", "superseded"}
CRUX_TYPES = {"core", "learning", "idea", "redflag", "goal"}

# tag -> the only label it may carry (None: either label).
TAG_LABELS: dict[str, dict[str, bool | None]] = {
    "reorder": {
        "moved_phrase": True, "conditional_front": True, "clause_swap": True,
        "coordination_swap": True, "symmetric_relation": True, "looks_like_role_swap": True,
        "role_swap": False, "reversed_order": False, "number_swap": False,
        "comparative_swap": False, "modifier_swap": False, "negation_scope": False,
        "conditional_swap": False, "direction_swap": False, "quantifier_swap": False,
        "respectively": False, "looks_symmetric": False,
        "passive": None, "only_scope": None, "number": None,
    },
    "conflict": {
        "one_word": True, "always_never": True, "before_after": True, "implicit": True,
        "compatible_same_subject": False, "different_scope": False, "different_subject": False,
        "negated_paraphrase": False, "paraphrase": False, "past_event_consistent": False,
        "question": False,
        "number": None, "version": None, "antonym": None, "negation": None, "dated": None,
        "hedged": None,
    },
    "rule": {
        "imperative": True, "prohibition": True, "preference": True, "conditional_rule": True,
        "modal_obligation": True, "impersonal_rule": True, "verbless": True, "contrast_fact": True,
        "fact": False, "fact_like_instruction": False, "past_event": False, "question": False,
        "hedged": False, "epistemic_modal": False, "one_off_instruction": False,
        "observation": False, "capability": False, "imperative_trap": False,
        "contrast_rule": False,
        "always_never": None, "number": None,
    },
}
CASE_TAGS = {
    "metadata": {
        "overlapping_bodies", "names", "paths", "distinct_numbers", "cross_type", "code_block",
        "near_identical", "compressed_member", "prompt_injection", "many_members",
    },
    "split": {
        "contiguous", "interleaved", "generic_headings", "three_plus_volumes",
        "misleading_headings", "subtopic_split", "trailing_section", "uneven_sections",
    },
}
KEYS = {
    "conflict": ({"id", "stage", "a", "b", "label"}, {"kind", "tags"}),
    "reorder": ({"id", "stage", "a", "b", "label"}, {"tags"}),
    "rule": ({"id", "stage", "text", "label"}, {"tags"}),
    "metadata": ({"id", "stage", "members", "must_keep"}, {"tags"}),
    "split": ({"id", "stage", "cap", "sections", "gold"}, {"tags"}),
}
MEMBER_KEYS = {"title", "description", "body", "tags", "type", "strength", "created", "source"}

FILES = [("datasets", s) for s in DEV_MIN] + [("holdout", s) for s in JUDGED_STAGES]


def load(split: str, stage: str) -> list[dict[str, Any]]:
    return load_path(EVALS / split / f"{stage}.jsonl")


def load_path(path: Path) -> list[dict[str, Any]]:
    """One JSON object per line, a final newline, no blank lines."""
    raw = path.read_text(encoding="utf-8")
    assert raw.endswith("\n"), f"{path}: missing final newline"
    rows = []
    for n, line in enumerate(raw.split("\n")[:-1], 1):
        assert line.strip(), f"{path}:{n}: blank line"
        row = json.loads(line)
        assert isinstance(row, dict), f"{path}:{n}: not a JSON object"
        rows.append(row)
    return rows


def texts(row: dict[str, Any]) -> list[str]:
    return [row[k] for k in ("a", "b", "text") if isinstance(row.get(k), str)]


def lines_of(section: dict[str, str]) -> int:
    """A section's size in lines: its heading line plus its body lines."""
    return 1 + len(section["body"].splitlines())


# ---------------------------------------------------------------------------------------- all files


@pytest.mark.parametrize("split,stage", FILES)
def test_file_shape_ids_and_counts(split: str, stage: str) -> None:
    rows = load(split, stage)
    minimum = DEV_MIN[stage] if split == "datasets" else HOLDOUT_MIN
    assert len(rows) >= minimum
    required, optional = KEYS[stage]
    id_pattern = re.compile(rf"^{stage}-{'h' if split == 'holdout' else ''}\d{{3}}$")
    for row in rows:
        assert required <= row.keys(), (row.get("id"), required - row.keys())
        assert row.keys() <= required | optional, (row["id"], row.keys() - required - optional)
        assert row["stage"] == stage, row["id"]
        assert id_pattern.match(row["id"]), row["id"]
        if "tags" in row:
            assert isinstance(row["tags"], list) and row["tags"], row["id"]
            assert len(set(row["tags"])) == len(row["tags"]), row["id"]
            allowed = TAG_LABELS.get(stage) or CASE_TAGS[stage]
            assert set(row["tags"]) <= set(allowed), (row["id"], set(row["tags"]) - set(allowed))
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)


def test_ids_unique_across_all_files() -> None:
    ids = Counter(r["id"] for split, stage in FILES for r in load(split, stage))
    assert [i for i, n in ids.items() if n > 1] == []


# ------------------------------------------------------------------------ pair and single-text stages


@pytest.mark.parametrize("split,stage", [f for f in FILES if f[1] in JUDGED_STAGES])
def test_judged_cases(split: str, stage: str) -> None:
    rows = load(split, stage)
    seen: set[frozenset[str] | str] = set()
    for row in rows:
        assert type(row["label"]) is bool, row["id"]
        for text in texts(row):
            assert isinstance(text, str) and text == text.strip(), row["id"]
            assert WORDS[0] <= len(tokens(text)) <= WORDS[1], (row["id"], text)
        key = frozenset(map(normalize, texts(row))) if stage in PAIR_STAGES else normalize(row["text"])
        assert key not in seen, f"{row['id']}: the same case twice"
        seen.add(key)
        for tag in row.get("tags", []):
            wanted = TAG_LABELS[stage][tag]
            assert wanted is None or wanted == row["label"], f"{row['id']}: tag {tag} with label {row['label']}"


@pytest.mark.parametrize("split,stage", [f for f in FILES if f[1] in JUDGED_STAGES])
def test_class_balance(split: str, stage: str) -> None:
    rows = load(split, stage)
    share = sum(r["label"] for r in rows) / len(rows)
    assert BALANCE[0] <= share <= BALANCE[1], share


@pytest.mark.parametrize("split", ["datasets", "holdout"])
def test_reorder_pairs_differ_only_in_word_order(split: str) -> None:
    for row in load(split, "reorder"):
        # Candidates come from equal token sets; equal multisets make order the only difference.
        assert Counter(tokens(row["a"])) == Counter(tokens(row["b"])), row["id"]
        assert normalize(row["a"]) != normalize(row["b"]), f"{row['id']}: a duplicate, not a reorder"


@pytest.mark.parametrize("split", ["datasets", "holdout"])
def test_conflict_pairs_are_plausible_candidates(split: str) -> None:
    for row in load(split, "conflict"):
        assert normalize(row["a"]) != normalize(row["b"]), f"{row['id']}: a duplicate"
        # The stage only ever sees pairs on a shared subject.
        assert significant_words(row["a"]) & significant_words(row["b"]), row["id"]
        if row["label"]:
            assert row.get("kind") in CONFLICT_KINDS, row["id"]
        else:
            assert "kind" not in row, row["id"]


def test_holdout_shares_no_text_with_dev() -> None:
    dev = [(r["id"], t) for s in JUDGED_STAGES for r in load("datasets", s) for t in texts(r)]
    held = [(r["id"], t) for s in JUDGED_STAGES for r in load("holdout", s) for t in texts(r)]
    dev_norm = {normalize(t): i for i, t in dev}
    assert [(i, dev_norm[normalize(t)]) for i, t in held if normalize(t) in dev_norm] == []
    dev_words = [(i, significant_words(t)) for i, t in dev]
    close = []
    for hid, text in held:
        hw = significant_words(text)
        for did, dw in dev_words:
            union = hw | dw
            if union and len(hw & dw) / len(union) >= NEAR_SHARED:
                close.append((hid, did))
    assert close == []


def test_holdout_keeps_the_difficulty_mix() -> None:
    for stage in JUDGED_STAGES:
        dev_tags = {t for r in load("datasets", stage) for t in r.get("tags", [])}
        held_tags = {t for r in load("holdout", stage) for t in r.get("tags", [])}
        assert held_tags == dev_tags, (stage, dev_tags ^ held_tags)


# ------------------------------------------------------------------------------------------ metadata


def test_metadata_cases() -> None:
    member_ids: Counter[str] = Counter()
    for row in load("datasets", "metadata"):
        members = row["members"]
        assert isinstance(members, list) and 2 <= len(members) <= 5, row["id"]
        for m in members:
            assert MEMBER_KEYS <= m.keys() <= MEMBER_KEYS | {"id"}, (row["id"], m.keys())
            for key in ("title", "description", "body", "source"):
                assert isinstance(m[key], str) and m[key].strip(), (row["id"], key)
            assert m["type"] in CRUX_TYPES, row["id"]
            assert type(m["strength"]) is int and m["strength"] >= 1, row["id"]
            dt.date.fromisoformat(m["created"])
            assert isinstance(m["tags"], list) and m["tags"] and all(isinstance(t, str) for t in m["tags"])
            if "id" in m:
                assert re.fullmatch(r"[0-9a-f]{7}", m["id"]), row["id"]
                member_ids[m["id"]] += 1
        # seed 7a: members share at least half of their tags with another member of the group.
        for i, m in enumerate(members):
            mine = set(m["tags"])
            best = max(len(mine & set(o["tags"])) for j, o in enumerate(members) if j != i)
            assert best / len(mine) >= 0.5, (row["id"], m["title"])
        keep = row["must_keep"]
        assert isinstance(keep, list) and keep and len(set(keep)) == len(keep), row["id"]
        bodies = [m["body"] for m in members]
        for fact in keep:
            assert isinstance(fact, str) and fact.strip(), row["id"]
            assert any(fact in b for b in bodies), f"{row['id']}: {fact!r} is in no member body"
        # Every member contributes something that must survive, so no member can be dropped.
        for m in members:
            assert any(f in m["body"] for f in keep), (row["id"], m["title"])
    assert [i for i, n in member_ids.items() if n > 1] == []


# --------------------------------------------------------------------------------------------- split


def test_split_cases() -> None:
    for row in load("datasets", "split"):
        cap, sections, gold = row["cap"], row["sections"], row["gold"]
        assert type(cap) is int and cap > 0, row["id"]
        assert isinstance(sections, list) and len(sections) >= 2, row["id"]
        for s in sections:
            assert s.keys() == {"heading", "body"}, row["id"]
            assert s["heading"].strip() and s["body"].strip(), row["id"]
        n = len(sections)
        flat = [i for volume in gold for i in volume]
        assert sorted(flat) == list(range(n)), f"{row['id']}: gold is not a partition of the sections"
        assert all(volume == sorted(volume) and volume for volume in gold), row["id"]
        sizes = [sum(lines_of(sections[i]) for i in volume) for volume in gold]
        assert sum(sizes) > cap, f"{row['id']}: fits in one volume, nothing to split"
        assert max(sizes) <= cap, f"{row['id']}: a gold volume is over the cap"
        # No two gold volumes fit together, so the number of volumes is forced by the cap and
        # only the assignment is a matter of judgement.
        assert all(a + b > cap for a, b in itertools.combinations(sizes, 2)), row["id"]
        tags = set(row.get("tags", []))
        contiguous = all(v == list(range(v[0], v[-1] + 1)) for v in gold)
        assert ("contiguous" in tags) == contiguous, row["id"]
        assert ("interleaved" in tags) == (not contiguous), row["id"]
        assert ("three_plus_volumes" in tags) == (len(gold) >= 3), row["id"]


# -------------------------------------------------------------------------------------------- README


def readme_tables() -> dict[str, dict[str, tuple[int, int, int]]]:
    """`### <split>/<stage>.jsonl` headings, each followed by `| tag | true | false | total |` rows."""
    tables: dict[str, dict[str, tuple[int, int, int]]] = {}
    current = None
    for line in README.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^### `?((?:datasets|holdout)/\w+\.jsonl)`?\s*$", line)
        if heading:
            current = heading.group(1)
            tables[current] = {}
            continue
        row = re.match(r"^\|\s*`?([\w ]+?)`?\s*\|\s*(\d+|-)\s*\|\s*(\d+|-)\s*\|\s*(\d+)\s*\|\s*$", line)
        if current and row:
            t, f = (int(x) if x != "-" else 0 for x in row.group(2, 3))
            tables[current][row.group(1)] = (t, f, int(row.group(4)))
    return tables


@pytest.mark.parametrize("split,stage", FILES)
def test_readme_counts_match_the_files(split: str, stage: str) -> None:
    rows = load(split, stage)
    table = readme_tables().get(f"{split}/{stage}.jsonl")
    assert table is not None, f"README has no table for {split}/{stage}.jsonl"
    expected: dict[str, tuple[int, int, int]] = {}
    labelled = stage in JUDGED_STAGES
    trues = sum(r["label"] for r in rows) if labelled else 0
    expected["all cases"] = (trues, len(rows) - trues if labelled else 0, len(rows))
    for tag in sorted({t for r in rows for t in r.get("tags", [])}):
        tagged = [r for r in rows if tag in r.get("tags", [])]
        t = sum(r["label"] for r in tagged) if labelled else 0
        expected[tag] = (t, len(tagged) - t if labelled else 0, len(tagged))
    if stage == "conflict":
        for kind in sorted(CONFLICT_KINDS):
            n = sum(r.get("kind") == kind for r in rows)
            expected[f"kind {kind}"] = (n, 0, n)
    assert table == expected
