"""The fleet's report: one JSON line per store on stdout, a summary table on stderr.

stdout carries nothing but the JSON lines (one object per store, written as each store finishes,
keys: path, layout, status, counts, errors, run_id, and where they apply reason, llm, notes,
plan_file, recorded, resumed, timed_out), so it stays machine-readable when piped; the table is for a person
and goes to stderr, after the last store.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any, TextIO

from ..text.counts import plural
from ..printable import printable
from .task import FAILING, STATUSES


def json_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


class Report:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.records: list[dict[str, Any]] = []

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        self.out.write(json_line(record))
        self.out.flush()  # a killed fleet run still leaves every finished store's line

    @property
    def failed(self) -> bool:
        return any(r.get("status") in FAILING for r in self.records)

    def summary(self, seconds: float, engine: str, budget: dict[str, Any] | None) -> str:
        by_status = Counter(r.get("status") for r in self.records)
        layouts = sorted({str(r.get("layout")) for r in self.records})
        rows = [f"{'layout':<10} " + " ".join(f"{s:>16}" for s in STATUSES) + f" {'total':>6}"]
        for layout in layouts:
            mine = Counter(r.get("status") for r in self.records if str(r.get("layout")) == layout)
            rows.append(f"{layout:<10} " + " ".join(f"{mine.get(s, 0):>16}" for s in STATUSES) + f" {sum(mine.values()):>6}")
        rows.append(f"{'all':<10} " + " ".join(f"{by_status.get(s, 0):>16}" for s in STATUSES) + f" {len(self.records):>6}")
        applied = sum(int(r.get("counts", {}).get("applied", 0)) for r in self.records if not r.get("resumed"))
        resumed = sum(1 for r in self.records if r.get("resumed"))
        rate = len(self.records) - resumed
        line = f"{plural(rate, 'store')} in {seconds:.1f} s on engine {engine}" + (f" ({rate / seconds * 60:.1f} per minute)" if seconds > 0 else "")
        rows.append(line + f"; {plural(applied, 'action')} applied" + (f"; {resumed} finished by an earlier attempt" if resumed else ""))
        if budget is not None:
            rows.append(f"fleet budget: {plural(budget['calls'], 'call')}, ${budget['cost_usd']:.4f}" + (f", {plural(budget['refused'], 'request')} refused" if budget.get("refused") else ""))
        for r in self.records:
            if r.get("status") in FAILING:
                rows.append(f"{r.get('status')}: {r.get('path')}: {'; '.join(map(str, r.get('errors', [])))[:300]}")
        return "".join(printable(row) + "\n" for row in rows)
