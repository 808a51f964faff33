"""Consolidation groups in stores without tags (issue 11, item 12): the rounds of one series
(`*-r1.md` .. `*-r7.md`, one topic prefix, the subject in name and description) form one group, and
the stub's title is words a person would write, never a list of numbers."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import NOW
from stage_helpers import of_kind, plan_with, settings_for

from pipeline.model import Memory
from pipeline.stages.consolidate.groups import series_groups

AGENT = ".claude/agent-memory/reviewer/"
FINDINGS = [
    "locale prefix dropped by the nav links",
    "redirect calls in server actions lose the locale",
    "the onboarding redirect compares the path exactly",
    "the pathname helper is now shared by tabs and popups",
    "approved with no findings after the locale sweep",
]


def write(root: Path, name: str, description: str, body: str, type_: str = "project") -> None:
    path = root / AGENT / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\nmetadata:\n  type: {type_}\n---\n\n{body}\n")


def review_store(root: Path) -> Path:
    for n, finding in enumerate(FINDINGS, start=1):
        write(root, f"project-locale-routing-r{n}", f"locale-routing review round {n} on the web app — {finding}",
              f"Round {n} of the locale routing review. Finding — {finding}.")
    write(root, "project-billing-export-r1", "billing export review round 1", "The export job streams rows.")
    write(root, "project-search-ranking-r2", "a note about caching", "Unrelated: the cache warms at boot.")
    write(root, "feedback-check-untracked", "check untracked files before review", "Run git status before the review.", "feedback")
    names = [p.stem for p in sorted((root / AGENT).glob("*.md"))]
    (root / AGENT / "MEMORY.md").write_text("# Reviewer\n\n" + "".join(f"- [{n}]({n}.md) — {n}\n" for n in names))
    return root


def test_the_rounds_of_one_series_are_one_group_with_a_worded_title(tmp_path):
    root = review_store(tmp_path / "repo")
    plan = plan_with(root, settings_for("stub"))
    [action] = of_kind(plan, "consolidate")
    assert action["targets"] == [f"{AGENT}project-locale-routing-r{n}.md" for n in range(1, 6)]
    assert "series 'project-locale-routing'" in action["reason"]
    title = action["outputs"][0]["frontmatter"]["name"]
    assert re.search(r"[A-Za-z]{3}", title) and not re.search(r"\d{2,}", title)
    assert "locale" in title.lower() and "routing" in title.lower()


def mem(key: str, title: str, description: str, type_: str = "project") -> Memory:
    return Memory(key=key, layout="claude", title=title, description=description, body="x", type=type_, group="f", has_frontmatter=True)


def test_a_series_needs_the_subject_in_name_and_description_and_one_type():
    pool = [
        mem("f/topic-cache-r1.md", "topic-cache-r1", "cache review round 1"),
        mem("f/topic-cache-r2.md", "topic-cache-r2", "cache review round 2"),
        mem("f/topic-cache-r3.md", "topic-cache-r3", "something else entirely"),  # subject not in description
        mem("f/topic-cache-r4.md", "topic-cache-r4", "cache review round 4", "feedback"),  # another type
        mem("f/other-r1.md", "other-r1", "other round 1"),  # a series of one
    ]
    [group] = series_groups(pool)
    assert group.members == ("f/topic-cache-r1.md", "f/topic-cache-r2.md")
    assert group.shared == ("topic cache",)


def test_numbered_file_names_never_make_a_numeric_title(tmp_path):
    root = tmp_path / "repo"
    extra = {117: "Name the branch.", 1376: "Quote the failing test.", 1378: "List the files to touch."}
    for n in (117, 1376, 1378):
        # numbered the way some stores number their files: the number is an id, not a subject
        write(root, f"{n}-feedback_self_contained_plans", "plans must be self contained for the executor",
              f"Write plans so the executor needs no other context — self contained plans, every path spelled out. {extra[n]}",
              "feedback")
    (root / AGENT / "MEMORY.md").write_text("# M\n")
    plan = plan_with(root, settings_for("stub"))
    titles = [a["outputs"][0]["frontmatter"]["name"] for a in of_kind(plan, "consolidate")]
    assert titles and all(not re.search(r"\b\d+\b", t) for t in titles)


def test_a_similarity_group_names_its_shared_words_as_its_first_member_writes_them(tmp_path):
    """The reason listed the alphabetically first six shared words ("active, all, allegra, ..."),
    which say nothing of the subject; it now names them in the order the first member writes them."""
    body = ("Zstd compression of the snapshot archive beats gzip: restore takes minutes, "
            "verify the archive checksum before you restore it.")
    write(tmp_path, "feedback-snapshot-zstd", "snapshot archive compression with zstd", body, "feedback")
    write(tmp_path, "feedback-snapshot-zstd-restore", "snapshot archive restore after zstd compression", body + " Always.", "feedback")
    names = ["feedback-snapshot-zstd", "feedback-snapshot-zstd-restore"]
    (tmp_path / AGENT / "MEMORY.md").write_text("# Reviewer\n\n" + "".join(f"- [{n}]({n}.md) — {n}\n" for n in names))
    [group] = of_kind(plan_with(tmp_path, settings_for("stub")), "consolidate")
    words = re.search(r"significant words \(([^)]*)\)", group["reason"]).group(1).split(", ")
    # the name's words first; before: archive, beats, checksum, compression, gzip, minutes
    assert words[:2] == ["snapshot", "zstd"] and len(words) == 6, group["reason"]
