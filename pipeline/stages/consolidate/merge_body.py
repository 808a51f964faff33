"""The merged body of a consolidation group: the deterministic merge, and the check a model's
merged body must pass to be used instead.

The check ("keeps every unique insight", mechanically): for every member,
1. every atom of its body (code spans, numbers with units, dates, ids, paths, identifiers, names;
   see `text_facts`) occurs in the merged body, and
2. every sentence of its body (list items and wrapped lines joined; headings excluded) keeps at
   least `SENTENCE_COVERAGE` (60 %) of its significant words (stemmed; an abbreviation of 4+
   letters counts) somewhere in the merged body.
And the merged body invents nothing checkable and stays a consolidation:
3. no number, path or code span of the merged body is absent from every member (titles and
   descriptions included), and
4. it is no longer than the members together (plus a title and three lines of headings a member).
A body that fails any of these is replaced by the deterministic merge.

The deterministic merge: a `# title`, then one `## section` per member (its own `# heading`, else
its title) with its lines in order, member headings demoted one level, and every line already
written by an earlier member left out (compared lowercased with whitespace collapsed and list
markers ignored; blank lines, fence lines and code inside fences are never left out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...text.counts import plural
from ..heuristics.text_facts import CODE_SPAN, atoms, has_atom, missing_atoms, sentence_coverage, squash
from ...text.lines import LIST_MARKER

SENTENCE_COVERAGE = 0.6
_H1 = re.compile(r"^#\s+(.*\S)\s*$")
_HEADING = re.compile(r"^(#{1,5})(\s+.*)$")


@dataclass(frozen=True)
class MemberText:
    heading: str  # what the member's section is called in the deterministic merge
    title: str
    description: str
    body: str


def _line_key(line: str) -> str:
    return squash(LIST_MARKER.sub("", line)).rstrip(".;")


def deterministic_merge(title: str, members: list[MemberText]) -> str:
    seen: set[str] = set()
    out = [f"# {title.strip()}", ""]
    for member in members:
        lines = member.body.strip("\n").splitlines()
        while lines and not lines[0].strip():
            lines.pop(0)
        heading = member.heading
        if lines:
            first = _H1.match(lines[0])
            if first:
                heading = first.group(1)
                lines = lines[1:]
        block: list[str] = []
        in_fence = False
        for line in lines:
            stripped = line.strip()
            if stripped.startswith(("```", "~~~")):
                in_fence = not in_fence
                block.append(line)
                continue
            if in_fence:
                block.append(line)
                continue
            if not stripped:
                if block and block[-1].strip():
                    block.append("")
                continue
            key = _line_key(line)
            if key and key in seen:
                continue
            if key:
                seen.add(key)
            h = _HEADING.match(line)
            block.append(f"#{h.group(1)}{h.group(2)}" if h else line.rstrip())
        while block and not block[-1].strip():
            block.pop()
        if not block:
            continue
        out += [f"## {heading.strip()}", "", *block, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _body_lines(text: str) -> int:
    return len(text.splitlines())


def merge_problems(members: list[MemberText], merged: str) -> list[str]:
    """Why `merged` does not keep every member's insights (empty: it does)."""
    if not merged.strip():
        return ["the merged body is empty"]
    problems: list[str] = []
    context = "\n".join(m.body for m in members)
    for i, m in enumerate(members, start=1):
        lost = missing_atoms(m.body, merged, context)
        if lost:
            problems.append(f"member {i} loses {', '.join(lost[:4])}{' …' if len(lost) > 4 else ''}")
        thin = [c for c in sentence_coverage(_without_headings(m.body), merged) if c.share < SENTENCE_COVERAGE]
        if thin:
            problems.append(f"member {i} loses most of {plural(len(thin), 'sentence')}, e.g. “{thin[0].sentence[:60]}”")
    sources = squash("\n".join(f"{m.title}\n{m.description}\n{m.body}" for m in members))
    nospace = sources.replace(" ", "")
    invented = [a for a in _checkable(merged) if not has_atom(sources, a, nospace)]
    if invented:
        problems.append(f"the merged body adds facts no member has: {', '.join(invented[:4])}")
    limit = sum(_body_lines(m.body) for m in members) + 2 + 3 * len(members)
    if _body_lines(merged) > limit:
        problems.append(f"the merged body is longer than its members together ({_body_lines(merged)} > {limit} lines)")
    return problems


def _without_headings(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _checkable(text: str) -> list[str]:
    """Atoms of a merged body that can be traced to a source: code spans, numbers, paths."""
    spans = {squash(s) for s in CODE_SPAN.findall(text)}
    return atoms(text, keep=lambda a: a in spans or any(ch.isdigit() for ch in a) or "/" in a)
