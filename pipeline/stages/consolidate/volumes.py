"""Volumes: cutting an oversized consolidated body into sections, and grouping sections into volumes.

Sections (numbered by code, shown to the split model): the body is cut at every markdown heading
outside fenced code (a heading with nothing under it stays with what follows; fences pair as CommonMark
pairs them, `text.lines.fenced_blocks`, and one never closed runs to the end); a section still over
the cap is cut into its paragraphs (the first keeps the heading), and a paragraph over the cap into
runs of lines. A volume's body is its sections in body order, joined by one blank line, and its
size is measured on exactly that text in the store's `sizeUnit`.

The greedy split (the fallback, and what the deterministic plan uses): the fewest volumes a
front-to-back fill needs, then the contiguous cut into that many volumes whose largest volume is
smallest (so sizes come out roughly equal).

A proposed assignment is accepted only if every section is in exactly one volume, no volume is
empty or over the cap, it uses no more volumes than the greedy split, and sizes are roughly equal:
the smallest volume holds at least a quarter of the cap or half of the average volume.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from ...text.lines import ATX_HEADING, fenced_blocks
from ...rules.text import significant_words

Measure = Callable[[str], int]
VolumeSize = Callable[[Sequence[int]], int]
_HEADING = ATX_HEADING
UNDER_FILLED = 0.25
CLUSTER_MAX_SECTIONS = 80


@dataclass(frozen=True)
class Section:
    heading: str  # heading text, or the start of the paragraph
    text: str  # the section's lines, without surrounding blank lines


def _in_code(lines: list[str]) -> list[bool]:
    """Each line inside fenced code, fence lines included, as CommonMark reads them (a fence never
    closed runs to the end: no cut inside what may be code)."""
    return fenced_blocks(lines).code_to_end()


def _blocks_at_headings(lines: list[str]) -> list[list[str]]:
    blocks: list[list[str]] = [[]]
    for line, in_fence in zip(lines, _in_code(lines)):
        if not in_fence and _HEADING.match(line) and any(x.strip() and not _HEADING.match(x) for x in blocks[-1]):
            blocks.append([])
        blocks[-1].append(line)
    return [b for b in blocks if any(x.strip() for x in b)]


def _paragraphs(lines: list[str]) -> list[list[str]]:
    paras: list[list[str]] = [[]]
    for line, in_fence in zip(lines, _in_code(lines)):
        if not in_fence and not line.strip():
            if paras[-1]:
                paras.append([])
            continue
        paras[-1].append(line)
    return [p for p in paras if p]


def _heading_of(lines: list[str]) -> str:
    """The heading right above the first text (the most specific one), else the text's first words."""
    last = ""
    for line in lines:
        m = _HEADING.match(line)
        if m:
            last = m.group(2)
        elif line.strip():
            if last:
                return last
            words = line.strip().split()
            return " ".join(words[:8]) + (" …" if len(words) > 8 else "")
    return last


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def sections_of(body: str, cap: int, measure: Measure) -> list[Section]:
    out: list[list[str]] = []
    for block in _blocks_at_headings(body.splitlines()):
        block = _trim(block)
        if measure("\n".join(block)) <= cap:
            out.append(block)
            continue
        for para in _paragraphs(block):
            if measure("\n".join(para)) <= cap:
                out.append(para)
                continue
            run: list[str] = []
            for line in para:
                if run and measure("\n".join([*run, line])) > cap:
                    out.append(run)
                    run = []
                run.append(line)
            if run:
                out.append(run)
    return [Section(heading=_heading_of(lines), text="\n".join(lines).rstrip()) for lines in out]


def render(sections: Sequence[Section], indices: Iterable[int]) -> str:
    return "\n\n".join(sections[i].text for i in sorted(indices)) + "\n"


def text_volume_size(sections: Sequence[Section], measure: Measure) -> VolumeSize:
    """A volume's size measured on its rendered body (production)."""
    return lambda indices: measure(render(sections, indices))


def additive_volume_size(sizes: Sequence[int], gap: int) -> VolumeSize:
    """A volume's size as the sum of its sections' sizes plus `gap` between neighbours (payloads, evals)."""
    return lambda indices: sum(sizes[i] for i in indices) + gap * max(0, len(list(indices)) - 1)


def gap_of(measure: Measure) -> int:
    """What joining two sections adds to their sizes (one blank line)."""
    return max(0, measure("a\n\nb\n") - measure("a\n") - measure("b\n"))


def volume_sizes(assignment: Sequence[Sequence[int]], volume_size: VolumeSize) -> list[int]:
    return [volume_size(v) for v in assignment]


# --- the greedy split ------------------------------------------------------------------------------


def _first_fit(count: int, cap: int, volume_size: VolumeSize) -> list[list[int]]:
    parts: list[list[int]] = [[]]
    for i in range(count):
        if parts[-1] and volume_size([*parts[-1], i]) > cap:
            parts.append([])
        parts[-1].append(i)
    return parts


def greedy_split(sizes: Sequence[int], gap: int, cap: int, volume_size: VolumeSize) -> list[list[int]]:
    """Contiguous volumes, as few as a front-to-back fill needs, the largest as small as possible."""
    m = len(sizes)
    if m == 0:
        return []
    fill = _first_fit(m, cap, volume_size)
    n = len(fill)
    if n == 1:
        return fill
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)

    def cost(i: int, j: int) -> int:  # sections i..j-1 in one volume
        return prefix[j] - prefix[i] + gap * (j - i - 1)

    # best[k][j]: the smallest possible largest volume cutting sections 0..j-1 into k volumes.
    inf = math.inf
    best = [[inf] * (m + 1) for _ in range(n + 1)]
    cut = [[0] * (m + 1) for _ in range(n + 1)]
    best[0][0] = 0
    for k in range(1, n + 1):
        for j in range(k, m + 1):
            for i in range(k - 1, j):
                value = max(best[k - 1][i], cost(i, j))
                if value < best[k][j]:
                    best[k][j], cut[k][j] = value, i
    parts: list[list[int]] = []
    j = m
    for k in range(n, 0, -1):
        i = cut[k][j]
        parts.append(list(range(i, j)))
        j = i
    parts.reverse()
    # The additive size model is exact for lines and bytes; anything else is checked for real.
    if all(parts) and max(volume_sizes(parts, volume_size)) <= cap:
        return parts
    return fill


# --- checking a proposal ---------------------------------------------------------------------------


def assignment_problems(count: int, assignment: Sequence[Sequence[int]], cap: int, volume_size: VolumeSize, max_volumes: int) -> list[str]:
    """Why a proposed assignment (lists of 0-based section indices) cannot be used; empty if it can."""
    problems: list[str] = []
    seen = Counter(i for v in assignment for i in v)
    unknown = sorted(i for i in seen if not 0 <= i < count)
    if unknown:
        problems.append(f"names sections that do not exist ({', '.join(str(i + 1) for i in unknown[:5])})")
    twice = sorted(i for i, n in seen.items() if n > 1)
    if twice:
        problems.append(f"puts sections in more than one volume ({', '.join(str(i + 1) for i in twice[:5])})")
    missing = sorted(set(range(count)) - set(seen))
    if missing:
        problems.append(f"leaves sections out ({', '.join(str(i + 1) for i in missing[:5])})")
    if not assignment or any(not v for v in assignment):
        problems.append("has an empty volume")
    if problems:
        return problems
    if len(assignment) > max_volumes:
        problems.append(f"uses {len(assignment)} volumes where {max_volumes} suffice")
    sizes = volume_sizes(assignment, volume_size)
    over = [s for s in sizes if s > cap]
    if over:
        problems.append(f"a volume is over the cap ({max(over)} > {cap})")
    if len(sizes) > 1 and min(sizes) < min(UNDER_FILLED * cap, 0.5 * sum(sizes) / len(sizes)):
        problems.append(f"sizes are far from equal ({', '.join(map(str, sizes))})")
    return problems


def normalized(assignment: Sequence[Sequence[int]]) -> list[list[int]]:
    """Sections in body order inside each volume; volumes ordered by their first section."""
    return sorted((sorted(v) for v in assignment if v), key=lambda v: v[0])


def rebalance_reason(sizes: Sequence[int], cap: int, needed: int) -> str | None:
    """Why an existing topic's volumes need rebalancing (seed 7f), or None."""
    over = [i for i, s in enumerate(sizes) if s > cap]
    if over:
        return f"volume {over[0] + 1} exceeds the cap ({sizes[over[0]]} > {cap})"
    if len(sizes) > 1:
        under = [i for i, s in enumerate(sizes) if s < UNDER_FILLED * cap]
        if under:
            return f"volume {under[0] + 1} is under-filled ({sizes[under[0]]} < 25% of {cap})"
    if needed < len(sizes):
        return f"the topic fits in fewer volumes ({needed} instead of {len(sizes)})"
    return None


# --- the stub's subject grouping -------------------------------------------------------------------


def _vectors(sections: Sequence[Section]) -> list[dict[str, float]]:
    """tf-idf of each section's significant words; heading words count twice."""
    bags = []
    for s in sections:
        head = significant_words(s.heading.split(":")[0]) | significant_words(s.heading)
        bag = Counter(significant_words(s.text))
        for w in head:
            bag[w] += 2
        bags.append(bag)
    df = Counter(w for bag in bags for w in bag)
    n = len(bags)
    vectors = []
    for bag in bags:
        vec = {w: c * math.log((1 + n) / (1 + df[w])) for w, c in bag.items() if df[w] < n}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        vectors.append({w: v / norm for w, v in vec.items()})
    return vectors


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(w, 0.0) for w, v in a.items())


def subject_split(sections: Sequence[Section], cap: int, volume_size: VolumeSize, max_volumes: int) -> list[list[int]] | None:
    """Sections grouped by shared subject words into as few volumes as fit the cap (average-link
    agglomeration under the cap); None when no such grouping passes the checks."""
    m = len(sections)
    if m < 2 or m > CLUSTER_MAX_SECTIONS:
        return None
    vectors = _vectors(sections)
    sim = [[_cosine(vectors[i], vectors[j]) for j in range(m)] for i in range(m)]
    total = volume_size(range(m))
    for k in range(max(1, math.ceil(total / cap)), max_volumes + 1):
        clusters: list[list[int]] = [[i] for i in range(m)]
        while len(clusters) > k:
            best: tuple[float, int, int] | None = None
            for x in range(len(clusters)):
                for y in range(x + 1, len(clusters)):
                    merged = clusters[x] + clusters[y]
                    if volume_size(merged) > cap:
                        continue
                    score = sum(sim[i][j] for i in clusters[x] for j in clusters[y]) / (len(clusters[x]) * len(clusters[y]))
                    if best is None or score > best[0] + 1e-12:
                        best = (score, x, y)
            if best is None:
                break
            _, x, y = best
            clusters[x] = clusters[x] + clusters[y]
            del clusters[y]
        if len(clusters) == k:
            proposal = normalized(clusters)
            if not assignment_problems(m, proposal, cap, volume_size, max_volumes):
                return proposal
    return None


def volume_title(sections: Sequence[Section], indices: Sequence[int], fallback: str) -> str:
    """A volume's title from its headings: their shared 'Prefix:' if any, else the first heading."""
    heads = [sections[i].heading for i in sorted(indices) if sections[i].heading]
    prefixes = {h.split(":", 1)[0].strip() for h in heads if ":" in h}
    if len(prefixes) == 1 and all(":" in h for h in heads):
        return prefixes.pop()
    return heads[0] if heads else fallback
