"""A claude consolidation names its new file as its members are named, when they share one rule:
by file name (with its word separator and type prefix), numbered files numbered on, a nested type
kept nested; members that do not agree get the file named from its title, as before."""

from __future__ import annotations

from pathlib import Path

import yaml
from helpers import NOW, WILD, plan_json, run_cli
from stage_helpers import of_kind, plan_with, settings_for
from test_claude_series_groups import AGENT, review_store

from pipeline.model import Memory
from pipeline.stages.consolidate.claude_names import convention_of, next_number, stem_for

PLANS = ("Write every plan so the executor needs no other context: each path spelled out, each command "
         "given in full, each check named, and the expected result stated before the change is made.")


def _output(plan: dict) -> dict:
    [action] = of_kind(plan, "consolidate")
    [out] = action["outputs"]
    return out


def test_members_named_by_their_file_names_give_a_file_named_the_same_way(tmp_path):
    root = review_store(tmp_path / "repo")  # project-locale-routing-r1..r5, `metadata: {type: project}`
    out = _output(plan_with(root, settings_for("stub")))
    name = out["frontmatter"]["name"]
    assert out["path"] == f"{AGENT}{name}.md"
    assert name.startswith("project-") and "_" not in name and " " not in name and "locale" in name
    assert out["frontmatter"]["metadata"] == {"type": "project"} and "type" not in out["frontmatter"]


def _numbered_store(root: Path) -> Path:
    folder = root / AGENT
    folder.mkdir(parents=True)
    for n, rest, extra, session in ((117, "feedback_self_contained_plans", "Name the branch.", "s1"),
                                    (131, "feedback_plans_for_the_executor", "Quote the failing test.", "s2")):
        (folder / f"{n}-{rest}.md").write_text(
            f"---\nname: {rest}\ndescription: plans must be self contained for the executor\n"
            f"metadata:\n  node_type: memory\n  type: feedback\n  originSessionId: {session}\n---\n\n{PLANS} {extra}\n")
    (folder / "140-project_other_topic.md").write_text(
        "---\nname: project_other_topic\ndescription: the billing export\nmetadata:\n  type: project\n---\n\nThe export job streams rows.\n")
    (folder / "MEMORY.md").write_text("# M\n")
    return root


def test_numbered_members_give_the_next_number_and_keep_what_their_metadata_shares(tmp_path):
    root = _numbered_store(tmp_path / "repo")
    out = _output(plan_with(root, settings_for("stub")))
    name = out["frontmatter"]["name"]
    assert out["path"] == f"{AGENT}141-{name}.md"  # after 140, the folder's highest number
    assert name.startswith("feedback_") and "-" not in name
    # the block every member has alike; each member's own session id is not any one of theirs
    assert out["frontmatter"]["metadata"] == {"node_type": "memory", "type": "feedback"}


def test_the_new_file_is_read_back_with_its_nested_type_and_listed(tmp_path):
    root = _numbered_store(tmp_path / "repo")
    # (two of three memories: over the blast cap of a quarter, lifted for this small store)
    res = run_cli("apply", str(root), "--yes", "--json", "--model", "stub", "--now", NOW, "--max-retire", "1")
    assert res.returncode == 0, res.stderr
    plan = plan_json(root, "--model", "none")
    [new] = [p for p in (root / AGENT).glob("141-*.md")]
    meta = yaml.safe_load(new.read_text().split("---")[1])
    assert meta["metadata"]["type"] == "feedback"
    assert not [a for a in plan["actions"] if a["kind"] == "rebuild_index"]  # MEMORY.md lists it
    assert f"({new.name})" in (root / AGENT / "MEMORY.md").read_text()


def _mem(key: str, title: str, type_: str = "feedback", **meta) -> Memory:
    return Memory(key=key, layout="claude", title=title, type=type_, meta=meta, body="x", group="f")


def test_members_that_do_not_agree_have_no_convention():
    assert convention_of([_mem("f/a.md", "Retry policy"), _mem("f/b.md", "Backoff policy")]) is None  # Title Case names
    assert convention_of([_mem("f/7-a.md", "a"), _mem("f/b.md", "b")]).numbered is False  # not all numbered
    mixed = convention_of([_mem("f/feedback-a-b.md", "feedback-a-b"), _mem("f/c_d.md", "c_d")])
    assert mixed.type_prefix == "" and mixed.nested is None  # a prefix only when every member has it
    top_level = convention_of([_mem("f/a.md", "a", type="x", metadata={"type": "feedback"})])
    assert top_level.nested is None  # a top-level type stays top-level


def test_a_stem_takes_the_separator_and_the_prefix_once():
    kebab = convention_of([_mem("f/project-a-b.md", "project-a-b", "project"), _mem("f/project-c.md", "project-c", "project")])
    assert stem_for(kebab, "locale-routing") == "project-locale-routing"
    assert stem_for(kebab, "project-locale") == "project-locale"
    snake = convention_of([_mem("f/feedback_a_b.md", "feedback_a_b")])
    assert stem_for(snake, "claim-ignores-git") == "feedback_claim_ignores_git"
    assert next_number(["f/9-x.md", "f/12-y.md", "g/40-z.md", "f/sub/50-w.md", "f/MEMORY.md"], "f") == 13


def test_a_real_series_consolidation_is_named_like_its_rounds():
    """siglens-review names every memory by its file name and links them by it."""
    plan = plan_json(WILD / "siglens-review", "--model", "stub")
    out = _output(plan)
    folder = ".claude/agent-memory/review-agent/"
    name = out["frontmatter"]["name"]
    assert out["path"] == f"{folder}{name}.md" and name.startswith("project-") and "_" not in name
