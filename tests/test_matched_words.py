"""Words a case-insensitive pattern matched, looked up in the tables of number and unit words.

Python's `re.IGNORECASE` lets 'İ', 'ı', 'ſ' and the Kelvin sign match i, i, s and k: "fıve days
ago" matched the relative-date grammar, its lowered "fıve" was looked up in the number words, and
the KeyError failed every plan of the store (exit 1). The stub's conflict judge did the same with
"every 5 mınutes". Each such word is now read as the ASCII word it matched (text/matched.py).
"""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest

from pipeline.rules.relative_dates import scan_relative_dates
from pipeline.rules.relative_dates.grammar import _NUMBERS, WEEKDAYS
from pipeline.stages.heuristics.conflicts.judge import judge_conflict
from pipeline.stages.heuristics.conflicts.quantities import frequencies
from pipeline.text.matched import matched_key

from helpers import run_cli

D = dt.date(2026, 4, 1)
_LOOKALIKES = {"i": ("\u0131", "\u0130"), "s": ("\u017f",), "k": ("\u212a",)}


def test_the_four_letters_become_the_ascii_ones_they_match():
    assert matched_key("f\u0131ve") == "five" and matched_key("F\u0130VE") == "five"
    assert matched_key("\u017feven") == "seven" and matched_key("wee\u212a") == "week"
    assert matched_key("Straße") == "straße"  # anything else only lowered


@pytest.mark.parametrize("text, replacement", [
    ("It shipped f\u0131ve days ago.", "on 2026-03-27"),
    ("Due in th\u0131rty days.", "on 2026-05-01"),
    ("Done twenty-n\u0131ne days ago.", "on 2026-03-03"),
    ("It broke \u017feven days ago.", "on 2026-03-25"),
])
def test_a_number_word_with_a_lookalike_letter_is_read_as_the_number(text, replacement):
    assert [r.replacement for r in scan_relative_dates(text, D).replacements] == [replacement]


@pytest.mark.parametrize("text, hours", [
    ("every 5 m\u0131nutes", 5 / 60), ("every 5 M\u0130NUTES", 5 / 60), ("n\u0131ghtly", 24.0), ("runs tw\u0131ce a day", 12.0),
])
def test_the_stub_judge_reads_a_frequency_with_a_lookalike_letter(text, hours):
    assert frequencies(text)[0] == {hours}


def test_no_mix_of_lookalike_letters_breaks_the_date_scan_or_the_judge():
    words = [*_NUMBERS, *WEEKDAYS, *"yesterday tomorrow last next this week days ago in every nightly twice minutes hour".split()]
    rng = random.Random(20)

    def mangled(word: str) -> str:
        return "".join(rng.choice(_LOOKALIKES[c]) if c in _LOOKALIKES and rng.random() < 0.5 else c for c in word)

    for _ in range(1500):
        text = " ".join(mangled(rng.choice(words)) for _ in range(rng.randint(1, 5)))
        scan_relative_dates(text, D)
        judge_conflict(text, f"Never {text}")


def test_a_store_with_such_a_memory_is_still_planned(tmp_path):
    bank = tmp_path / "store" / "blog"
    bank.mkdir(parents=True)
    record = {"id": "a", "text": "It shipped f\u0131ve days ago.", "created_at": "2026-04-01"}
    (bank / "memories.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    res = run_cli("plan", str(tmp_path / "store"), "--model", "none", "--json", "--now", "2026-11-29")
    assert res.returncode == 0, res.stderr
    (action,) = json.loads(res.stdout)["actions"]
    assert action["kind"] == "absolutize_dates" and action["replacements"][0]["after"] == "on 2026-03-27"


def test_the_judge_reads_a_counted_number_word_with_a_lookalike_letter_as_the_number():
    from pipeline.stages.heuristics.conflicts.readings import read

    assert read("Retry after \u017fix hours") == read("Retry after six hours")
