"""The files of a multi-volume topic as plan outputs (CRUX seed 000, steps 7e and 13).

Each volume shares type, tags, created, modified, source and `consolidated_from` with the whole;
gets its own id (sha256("{topic} part {n}")[:7]), title, description, `consolidation_topic`,
`consolidation_part` (1-based) and a strength split by size (largest remainder, at least 1 each;
the sum is kept whenever the total allows one per volume). Files: `{folder}/{topic}-pt{n}.memory.md`.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...layouts.crux.trackers import distribute
from .fields import volume_hash
from ..single_calls import one_line
from .volumes import Measure, Section, render, text_volume_size, volume_sizes, volume_title

TITLE_MAX = 120
DESCRIPTION_MAX = 400


def greedy_titles(title: str, sections: Sequence[Section], assignment: Sequence[Sequence[int]]) -> list[tuple[str, str]]:
    """(title, description) per volume when no model named them: the volume's headings."""
    out = []
    total = len(assignment)
    for n, indices in enumerate(assignment, start=1):
        sub = volume_title(sections, indices, f"part {n}")
        heads = [sections[i].heading for i in sorted(indices) if sections[i].heading]
        out.append((
            one_line(f"{title}: {sub}", TITLE_MAX),
            one_line(f"Part {n} of {total} of “{title}”: {'; '.join(heads)}", DESCRIPTION_MAX),
        ))
    return out


def volume_outputs(
    topic: str,
    folder: str,
    base: dict[str, Any],
    sections: Sequence[Section],
    assignment: Sequence[Sequence[int]],
    names: Sequence[tuple[str, str]],
    measure: Measure,
) -> list[dict[str, Any]]:
    sizes = volume_sizes(assignment, text_volume_size(sections, measure))
    strengths = [max(1, s) for s in distribute(int(base.get("strength") or 0), sizes, 1)]
    outputs = []
    for n, indices in enumerate(assignment, start=1):
        fm = dict(base)
        fm["id"] = volume_hash(topic, n)
        fm["title"], fm["description"] = names[n - 1]
        fm["strength"] = strengths[n - 1]
        fm["consolidation_topic"] = topic
        fm["consolidation_part"] = n
        outputs.append({"path": f"{folder}/{topic}-pt{n}.memory.md", "frontmatter": fm, "body": render(sections, indices), "size": sizes[n - 1]})
    return outputs
