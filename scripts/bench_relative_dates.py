"""Relative dates: the project's grammar against `dateparser.search_dates`, on precision and speed.

    python scripts/bench_relative_dates.py [--dataset tests/data/dates_dev.jsonl] [--store-size 200000]

Scores both on a dataset in the dates format (docs/relative-dates.md) and times them per 1,000 texts:
the dataset's texts (each holds a phrase) and real memory files from ../shared/real-stores (most hold
none, as in a real store). Then times the grammar over a synthetic store of `--store-size` texts.

dateparser is not a dependency: install it in a scratch environment to compare
(`pip install dateparser`); without it only the grammar is measured. Its side gets the fairest
setup we could give it: the same masks (code, quotations, URLs, paths), its hits filtered to
relative expressions, each resolved date written out in the contract's shape (a day, the week of
its Monday, a month, a year; the same preposition and capital rules). The context rules (habits,
conditions, names, "today" meaning currently) are the grammar's own and are not lent to it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.evaluate.dates import eval_dates  # noqa: E402
from pipeline.rules import relative_dates as rd  # noqa: E402
from pipeline.rules.relative_dates import masks, resolve, sentences  # noqa: E402  # the helpers the dateparser path reuses

REAL = ROOT.parent / "shared" / "real-stores"
RELATIVE = re.compile(r"\b(?:yesterday|today|tonight|tomorrow|ago|last|next|this|in\s+\S+\s+days?)\b", re.I)


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def real_texts() -> list[str]:
    files = sorted(REAL.rglob("*.md")) if REAL.is_dir() else []
    return [p.read_text(encoding="utf-8", errors="replace") for p in files]


def per_1k(fn, texts: list[str], repeat: int = 1) -> float:
    """Seconds per 1,000 texts."""
    start = time.perf_counter()
    for _ in range(repeat):
        for t in texts:
            fn(t)
    return (time.perf_counter() - start) / (len(texts) * repeat) * 1000


def dateparser_scan(text: str, written: dt.date, search_dates) -> list[rd.Replacement]:
    base = dt.datetime.combine(written, dt.time(12))
    found = search_dates(text, languages=["en"], settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past"}) or []
    spans = masks._masked_spans(text)
    out, pos = [], 0
    for phrase, when in found:
        start = text.find(phrase, pos)
        if start < 0 or not RELATIVE.search(phrase) or masks._inside(spans, start, start + len(phrase)):
            continue
        pos = start + len(phrase)
        low = phrase.lower()
        d = when.date()
        if "week" in low:
            value = f"the week of {(d - dt.timedelta(days=d.weekday())).isoformat()}"
        elif "month" in low:
            value = f"in {d:%Y-%m}"
        elif "year" in low:
            value = f"in {d:%Y}"
        else:
            value = f"on {d.isoformat()}"
        if resolve._DROP_ON.search(text[max(0, start - 12):start]) and value.startswith(("on ", "in ")):
            value = value[3:]
        if phrase[:1].isupper() or sentences._at_sentence_start(text, start):
            value = value[:1].upper() + value[1:]
        out.append(rd.Replacement(start, start + len(phrase), phrase, value))
    return out


def score_dateparser(cases: list[dict], search_dates) -> dict:
    edited = correct = true_cases = 0
    fps = []
    for c in cases:
        reps = dateparser_scan(c["text"], dt.date.fromisoformat(c["written"]), search_dates)
        after = rd.apply_replacements(c["text"], reps)
        ok = bool(reps) and c["label"] and after == c.get("expected", c["text"])
        edited += bool(reps)
        correct += ok
        true_cases += c["label"]
        if reps and not ok:
            fps.append(c["id"])
    p = correct / edited if edited else 0.0
    r = correct / true_cases if true_cases else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "edited": edited, "false_positives": len(fps)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default=str(ROOT / "tests" / "data" / "dates_dev.jsonl"))
    ap.add_argument("--store-size", type=int, default=200_000)
    args = ap.parse_args()
    cases = load(Path(args.dataset))
    texts = [c["text"] for c in cases]
    real = real_texts()
    d = dt.date(2026, 4, 1)
    report = eval_dates(cases)
    print(f"grammar    on {len(cases)} cases: {report['metrics']}, edited {report['edited']}, "
          f"false positives {len(report['false_positives'])}")
    print(f"grammar    s per 1k dataset texts: {per_1k(lambda t: rd.scan_relative_dates(t, d), texts, 20):.3f}; "
          f"per 1k real memory files ({len(real)}): {per_1k(lambda t: rd.scan_relative_dates(t, d), real, 3):.3f}")
    try:
        from dateparser.search import search_dates
    except ImportError:
        print("dateparser not installed: skipped")
    else:
        search_dates("warm up yesterday", languages=["en"])
        print(f"dateparser on {len(cases)} cases: {score_dateparser(cases, search_dates)}")
        some = real[:100]
        print(f"dateparser s per 1k dataset texts: {per_1k(lambda t: dateparser_scan(t, d, search_dates), texts):.1f}; "
              f"per 1k real memory files (first {len(some)}): {per_1k(lambda t: dateparser_scan(t, d, search_dates), some):.1f}")
    pool = [p for t in real for p in t.split("\n\n") if p.strip()] + texts
    store = [pool[i % len(pool)] for i in range(args.store_size)]
    start = time.perf_counter()
    hits = sum(1 for t in store if rd.scan_relative_dates(t, d).replacements)
    print(f"grammar    {args.store_size} paragraph-sized memories: {time.perf_counter() - start:.2f} s, {hits} with edits")


if __name__ == "__main__":
    main()
