"""Evals of the content-writing stages (metadata, split), through the production prompt, schema,
handles, client and guards, with one case per call as the stages make them.

metadata — each case is one consolidation group; the final body is the model's merged body when it
passes the stage's insight check, else the deterministic merge (exactly what the plan would write).
A case the model errors on, or declines to merge, keeps nothing.
- `accuracy`: share of cases whose final body keeps every `must_keep` string (case-insensitive,
  whitespace collapsed, nothing looser);
- `recall` = `keep_rate`: share of all `must_keep` strings kept (micro);
- `precision`: share of the final bodies' checkable facts (numbers, paths, code spans) that some
  member states (nothing invented); `f1` of the two;
- `raw_accuracy`, `raw_keep_rate`: the same on the model's own body, before the guard;
- `fallback_rate`: share of cases where the guard replaced the model's body.
Baseline: the deterministic merge alone.

split — each case is one body's sections, a cap and a gold grouping; a section's size is 1 line
for its heading plus its body lines, a volume's the sum (no gap). The final grouping is the
model's when it passes the stage's guards, else the greedy split (what the plan would write).
- `accuracy`: mean over cases of the pair agreement with gold (Rand index over section pairs);
- `precision`, `recall`, `f1`: of "same volume" pairs, over all cases' pairs (micro);
- `valid_rate`: share of cases whose model proposal passed the guards (every section exactly
  once, every volume within the cap, no more volumes than needed, sizes roughly equal).
Baselines: the greedy split alone; the stub's subject grouping.
A case the model errors on scores 0 and counts as invalid.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Any, Callable

from ..config import Settings
from ..stages.base import ask_in_batches

CONTENT_STAGES: dict[str, Callable[..., tuple[dict[str, Any], list[str]]]] = {}


def _register(name: str):
    def decorate(fn):
        CONTENT_STAGES[name] = fn
        return fn

    return decorate


def _r(x: float) -> float:
    return round(x, 4)


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


# --- metadata --------------------------------------------------------------------------------------


def _kept(body: str, needles: list[str]) -> list[bool]:
    from ..stages.heuristics.text_facts import squash

    hay = squash(body)
    return [squash(n) in hay for n in needles]


def _traceable(body: str, members: list[dict[str, Any]]) -> tuple[int, int]:
    from ..stages.consolidate.merge_body import _checkable
    from ..stages.heuristics.text_facts import has_atom, squash

    sources = squash("\n".join(f"{m.get('title', '')}\n{m.get('description', '')}\n{m.get('body', '')}" for m in members))
    found = _checkable(body)
    return sum(1 for a in found if has_atom(sources, a)), len(found)


def _group_item(handle: int, case: dict[str, Any]):
    from ..stages.consolidate.stage import GroupItem, MemberItem

    members = case["members"]
    counts = Counter(t.lower() for m in members for t in set(m.get("tags", [])))
    shared = sorted((t for t, n in counts.items() if n >= 2), key=lambda t: (-counts[t], t))
    return GroupItem(handle=handle, shared=shared, members=[
        MemberItem(n=i, title=m.get("title", ""), description=m.get("description", ""), type=m.get("type"),
                   tags=list(m.get("tags", [])), body=m.get("body", ""))
        for i, m in enumerate(members, start=1)
    ])


def _member_texts(case: dict[str, Any]):
    from ..stages.consolidate.merge_body import MemberText

    return [MemberText(heading=m.get("title") or f"Member {i}", title=m.get("title", ""), description=m.get("description", ""),
                       body=m.get("body", "")) for i, m in enumerate(case["members"], start=1)]


@_register("metadata")
def eval_metadata(cases: list[dict[str, Any]], client: Any, settings: Settings) -> tuple[dict[str, Any], list[str]]:
    from ..stages.consolidate.merge_body import deterministic_merge, merge_problems
    from ..stages.consolidate.stage import NAME, MetadataInput, MetadataOutput, stub_title

    def payload(handles, chunk):
        return MetadataInput(groups=[_group_item(handles.handle(c["id"]), c) for c in chunk])

    answers, errors = ask_in_batches(client, NAME, cases, lambda c: c["id"], 1, payload, MetadataOutput, lambda r: r.decisions)
    totals: Counter[str] = Counter()
    failed: list[str] = []
    declined: list[str] = []
    errored: list[str] = []
    base: Counter[str] = Counter()
    for case in cases:
        needles = list(case.get("must_keep", []))
        texts = _member_texts(case)
        totals["needles"] += len(needles)
        # The baseline: the deterministic merge under the stub's title.
        det = deterministic_merge(stub_title(_group_item(1, case)), texts)
        det_kept = _kept(det, needles)
        base["kept"] += sum(det_kept)
        base["all"] += all(det_kept)
        t, n = _traceable(det, case["members"])
        base["traced"] += t
        base["facts"] += n
        d = answers.get(case["id"])
        if d is None or not d.merge:
            (errored if d is None else declined).append(case["id"])
            failed.append(case["id"])
            continue
        raw = d.body.strip("\n") + "\n" if d.body.strip() else ""
        raw_kept = _kept(raw, needles)
        totals["raw_kept"] += sum(raw_kept)
        totals["raw_all"] += all(raw_kept)
        final = raw
        if merge_problems(texts, raw):
            totals["fallback"] += 1
            final = deterministic_merge(" ".join(d.title.split()) or stub_title(_group_item(1, case)), texts)
        kept = _kept(final, needles)
        totals["kept"] += sum(kept)
        totals["all"] += all(kept)
        if not all(kept):
            failed.append(case["id"])
        t, n = _traceable(final, case["members"])
        totals["traced"] += t
        totals["facts"] += n
    n_cases = len(cases)
    n_needles = totals["needles"] or 1

    def metrics(kept: int, all_kept: int, traced: int, facts: int) -> dict[str, float]:
        recall = kept / n_needles
        precision = traced / facts if facts else 1.0
        return {"accuracy": _r(all_kept / n_cases), "precision": _r(precision), "recall": _r(recall),
                "f1": _r(_f1(precision, recall)), "keep_rate": _r(recall)}

    m = metrics(totals["kept"], totals["all"], totals["traced"], totals["facts"])
    m.update({"raw_accuracy": _r(totals["raw_all"] / n_cases), "raw_keep_rate": _r(totals["raw_kept"] / n_needles),
              "fallback_rate": _r(totals["fallback"] / n_cases)})
    report = {
        "n": n_cases,
        "metrics": m,
        "failed": sorted(failed),
        "declined": sorted(declined),
        "errors": len(errored),
        "baselines": {"deterministic_merge": metrics(base["kept"], base["all"], base["traced"], base["facts"])},
    }
    return report, sorted(set(errors))


# --- split -----------------------------------------------------------------------------------------


def _split_sections(case: dict[str, Any]):
    from ..stages.consolidate.volumes import Section

    sections = [Section(heading=s["heading"], text=f"## {s['heading']}\n{s['body'].strip()}") for s in case["sections"]]
    sizes = [1 + len(s["body"].strip().splitlines()) for s in case["sections"]]
    return sections, sizes


def _pairs(assignment: list[list[int]], count: int) -> set[tuple[int, int]]:
    where = {i: v for v, members in enumerate(assignment) for i in members}
    return {(a, b) for a, b in combinations(range(count), 2) if a in where and where.get(a) == where.get(b)}


def _score(assignment: list[list[int]] | None, gold: list[list[int]], count: int) -> tuple[float, int, int, int]:
    """(Rand index, true-positive, false-positive, false-negative same-volume pairs)."""
    gold_pairs = _pairs(gold, count)
    if assignment is None:
        return 0.0, 0, 0, len(gold_pairs)
    got = _pairs(assignment, count)
    all_pairs = count * (count - 1) // 2
    agree = all_pairs - len(got ^ gold_pairs)
    return (agree / all_pairs if all_pairs else 1.0), len(got & gold_pairs), len(got - gold_pairs), len(gold_pairs - got)


@_register("split")
def eval_split(cases: list[dict[str, Any]], client: Any, settings: Settings) -> tuple[dict[str, Any], list[str]]:
    from ..stages.split import NAME, BodyItem, SectionItem, SplitInput, SplitOutput
    from ..stages.consolidate.volumes import additive_volume_size, assignment_problems, greedy_split, normalized, subject_split

    prepared = {c["id"]: _split_sections(c) for c in cases}

    def greedy_of(case):
        sections, sizes = prepared[case["id"]]
        return greedy_split(sizes, 0, int(case["cap"]), additive_volume_size(sizes, 0))

    def payload(handles, chunk):
        bodies = []
        for c in chunk:
            sections, sizes = prepared[c["id"]]
            bodies.append(BodyItem(handle=handles.handle(c["id"]), title=sections[0].heading.split(":")[0], unit="lines",
                                   cap=int(c["cap"]), gap=0, max_volumes=len(greedy_of(c)),
                                   sections=[SectionItem(n=i, heading=s.heading, size=sizes[i - 1], text=s.text)
                                             for i, s in enumerate(sections, start=1)]))
        return SplitInput(bodies=bodies)

    answers, errors = ask_in_batches(client, NAME, cases, lambda c: c["id"], 1, payload, SplitOutput, lambda r: r.decisions)
    runs: dict[str, Counter] = {name: Counter() for name in ("model", "greedy", "subject")}
    rand: dict[str, float] = {name: 0.0 for name in runs}
    failed, errored = [], []
    for case in cases:
        sections, sizes = prepared[case["id"]]
        count, cap, gold = len(sections), int(case["cap"]), case["gold"]
        size = additive_volume_size(sizes, 0)
        greedy = greedy_of(case)
        d = answers.get(case["id"])
        final: list[list[int]] | None = None
        if d is None:
            errored.append(case["id"])
        else:
            proposal = [[n - 1 for n in v.sections] for v in d.volumes]
            if assignment_problems(count, proposal, cap, size, len(greedy)):
                final = greedy
            else:
                runs["model"]["valid"] += 1
                final = normalized(proposal)
        candidates = {"model": final, "greedy": greedy, "subject": subject_split(sections, cap, size, len(greedy)) or greedy}
        for name, assignment in candidates.items():
            r, tp, fp, fn = _score(assignment, gold, count)
            rand[name] += r
            runs[name].update({"tp": tp, "fp": fp, "fn": fn})
            if name == "model" and r < 1.0:
                failed.append(case["id"])
    n_cases = len(cases)

    def metrics(name: str) -> dict[str, float]:
        c = runs[name]
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
        return {"accuracy": _r(rand[name] / n_cases), "precision": _r(precision), "recall": _r(recall), "f1": _r(_f1(precision, recall))}

    m = metrics("model")
    m["valid_rate"] = _r(runs["model"]["valid"] / n_cases)
    report = {
        "n": n_cases,
        "metrics": m,
        "failed": sorted(failed),
        "errors": len(errored),
        "baselines": {"greedy_split": metrics("greedy"), "subject_grouping": metrics("subject")},
    }
    return report, sorted(set(errors))
