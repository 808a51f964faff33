"""Red-team 3 on the owner's lines of MEMORY.md: what a run keeps of them, and that the plan says
what apply does (no index edit proposed that apply then refuses or finds nothing to do).

Each store is built in tmp_path; every apply is undone byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import apply_json, plan_json, run_cli, snapshot

from test_claude_index_edits import AGENT, applied_alone, write
from test_claude_index_edits import topic as reference_topic

from pipeline.actions import PruneStaleAction
from pipeline.layouts.claude import memory_md


def topic(name: str, description: str, body: str = "Notes.", kind: str = "project") -> str:
    return reference_topic(name, description, body, kind)


def twins(root: Path, md: str, body: str = "Deploy alpha with make deploy.") -> Path:
    """alpha.md and its copy alpha_copy.md (a merge_duplicate retires the copy), gamma.md, and `md`."""
    return write(root / AGENT, {"alpha.md": topic("alpha", "alpha deploy", body),
                                "alpha_copy.md": topic("alpha copy", "alpha deploy", body),
                                "gamma.md": topic("gamma", "gamma", "Gamma.", "user"), "MEMORY.md": md})


def applied(root: Path, index: str = "MEMORY.md") -> tuple[dict, str]:
    """`apply --yes` of the plan: (the plan it applied, `index` as left, MEMORY.md unless said); then
    undone, byte for byte."""
    before = snapshot(root)
    plan = plan_json(root, "--model", "none")
    out = apply_json(root)
    text = (root / AGENT / index).read_text(encoding="utf-8")
    assert run_cli("undo", str(root)).returncode == 0 and snapshot(root) == before
    return {**plan, "run": out}, text


def test_a_merge_leaves_the_rest_of_the_index_byte_for_byte_trailing_blank_lines_too(tmp_path):
    """Red-team 3 bug 6: a merge (no rebuild asked for) removed the copy's line and the owner's two
    blank lines at the end of MEMORY.md with it."""
    md = ("# Memory\n\n## Topics\n- [Alpha](alpha.md) — alpha deploy notes\n"
          "- [Alpha copy](alpha_copy.md) — alpha deploy notes copy\n- [Gamma](gamma.md) — gamma things\n\n\n")
    twins(tmp_path, md)
    plan, text = applied(tmp_path)
    assert [a["kind"] for a in plan["actions"]] == ["merge_duplicate"]
    assert text == md.replace("- [Alpha copy](alpha_copy.md) — alpha deploy notes copy\n", "")


def test_a_pinned_line_reversing_or_saying_less_than_the_first_listing_is_the_owners_note(tmp_path):
    """Red-team 3 bug 4: a listed-again line was a repeat when it had no word the first listing lacks,
    so the automatic rebuild_index deleted `deploy with pnpm, never with npm` after `deploy with npm,
    never with pnpm` (the same words, the other way round), unquoted. Only a line saying what an
    earlier listing says (case, spaces, punctuation aside) is a repeat."""
    md = ("# Memory\n\n## Topics\n- [Deploy](deploy.md) — deploy with npm, never with pnpm\n- [Gamma](gamma.md) — gamma things\n\n"
          "## Pinned\n- [Deploy](deploy.md) — deploy with pnpm, never with npm\n- [Deploy](deploy.md) — deploy with npm\n"
          "- [deploy](deploy.md) — Deploy with NPM; never with pnpm.\n")
    write(tmp_path / AGENT, {"deploy.md": topic("deploy", "deploy"), "gamma.md": topic("gamma", "gamma", "Gamma.", "user"),
                             "delta.md": topic("delta", "delta", "Delta.", "user"), "MEMORY.md": md})
    assert memory_md.listed_again(memory_md.parse(md)) == {7: True, 8: True, 9: False}
    plan, text = applied(tmp_path)
    [rebuild] = [a for a in plan["actions"] if a["kind"] == "rebuild_index"]
    assert rebuild["reason"] == (f"1 file not indexed: {AGENT}/delta.md; 1 file indexed twice: {AGENT}/deploy.md; applying it: "
                                 "1 repeated entry line removed, saying nothing its file's earlier listings do not: deploy.md "
                                 "at line 10 under 'Pinned'")
    assert ("## Pinned\n- [Deploy](deploy.md) — deploy with pnpm, never with npm\n- [Deploy](deploy.md) — deploy with npm\n"
            "\n## Unindexed\n\n- [delta](delta.md) — delta\n") in text


def pinned_twins(root: Path, drift: str = "") -> Path:
    """gamma.md and its copy copy.md, both pinned by the owner with the same note; `drift` added to MEMORY.md."""
    md = ("# Memory\n\n## Topics\n- [Gamma](gamma.md) — gamma\n- [Copy](copy.md) — copy\n\n## Pinned\n"
          "- [Copy](copy.md) — Mina owns this, ask her first\n- [Gamma](gamma.md) — Mina owns this, ask her first\n" + drift)
    folder = write(root / AGENT, {"gamma.md": topic("gamma", "gamma", "Same text.", "user"),
                                  "copy.md": topic("copy", "copy", "Same text.", "user"), "MEMORY.md": md})
    os.utime(folder / "gamma.md", (1577836800, 1577836800))  # the older: the merge's survivor
    return folder


def test_both_duplicates_pinned_with_one_note_the_merge_edits_the_index_as_the_plan_says(tmp_path):
    """Red-team 3 bug 9: the note on copy.md, pointed at gamma.md, made gamma's own pinned note (the
    same words) a "repeat", so apply refused the index edit and MEMORY.md kept listing the archived
    copy.md, twice; with other drift, the plan's automatic rebuild_index was skipped the same way."""
    told = ("1 owner's note line on a file this run retires kept, pointing at the file now holding its content: "
            "`- [Copy](copy.md) — Mina owns this, ask her first` at line 8 under 'Pinned', now to gamma.md")
    for drift in ("", "- [Gone](gone.md) — deleted\n"):
        pinned_twins(tmp_path / "store", drift)
        plan, text = applied(tmp_path / "store")
        [merge] = [a for a in plan["actions"] if a["kind"] == "merge_duplicate"]
        assert merge["reason"] == f"normalized text identical; applying it: {told}"
        assert not plan["run"]["skipped"] and len(plan["run"]["applied"]) == len(plan["actions"])
        assert "(copy.md)" not in text and "gone.md" not in text
        assert text.endswith("## Pinned\n- [Copy](gamma.md) — Mina owns this, ask her first\n"
                             "- [Gamma](gamma.md) — Mina owns this, ask her first\n")


def test_an_owners_note_listed_above_the_retired_files_entry_is_kept_and_its_entry_goes(tmp_path):
    """Red-team 3 bug 2: the owner's `## Pinned` line on alpha_copy.md, listed above its plain entry
    under `## Topics`, was taken for the entry and removed with its heading, while the plain entry
    was "kept as the owner's note": the plan quoted the wrong line. The entry is its listing in the
    section listing the survivor; the pinned line is the note, kept and pointed at alpha.md."""
    pinned = "- [Alpha copy](alpha_copy.md) — ALWAYS read before touching prod, says Bob"
    md = (f"# Memory\n\n## Pinned\n{pinned}\n\n## Topics\n- [Alpha](alpha.md) — alpha deploy notes\n"
          "- [Alpha copy](alpha_copy.md) — alpha deploy notes\n- [Gamma](gamma.md) — gamma things\n")
    twins(tmp_path, md)
    plan, text = applied(tmp_path)
    [merge] = [a for a in plan["actions"] if a["kind"] == "merge_duplicate"]
    assert merge["reason"] == ("normalized text identical; applying it: 1 owner's note line on a file this run retires kept, "
                               f"pointing at the file now holding its content: `{pinned}` at line 4 under 'Pinned', now to alpha.md")
    assert text == md.replace("(alpha_copy.md) — ALWAYS", "(alpha.md) — ALWAYS").replace(
        "- [Alpha copy](alpha_copy.md) — alpha deploy notes\n", "")


def test_a_file_reached_only_by_the_hook_of_an_entry_without_a_file_gets_an_entry_of_its_own(tmp_path):
    """Red-team 3 bug 10: removing `- [Old runbook](old_runbook.md) — replaced by [the new one](runbook.md)`
    left runbook.md reached by nothing, so apply refused the automatic rebuild_index every night
    ("would not reach every file exactly once"), and the output said only "1 skipped"."""
    md = "# Memory\n\n- [Alpha](alpha.md) — alpha\n- [Old runbook](old_runbook.md) — replaced by [the new one](runbook.md)\n"
    write(tmp_path / AGENT, {n: topic(n[:-3], f"about {n[:-3]}", f"{n} body.") for n in ("alpha.md", "runbook.md")} | {"MEMORY.md": md})
    plan, text = applied(tmp_path)
    [rebuild] = plan["actions"]
    assert rebuild["reason"] == (f"1 entry without a file: {AGENT}/old_runbook.md (“replaced by [the new one](runbook.md)”); applying it: 1 file reached only by a line "
                                 "it removes given an entry of its own: runbook.md")
    assert [a["kind"] for a in plan["run"]["applied"]] == ["rebuild_index"] and not plan["run"]["skipped"]
    assert text == "# Memory\n\n- [Alpha](alpha.md) — alpha\n- [runbook](runbook.md) — about runbook\n"


def test_a_rebuild_the_runs_merge_leaves_nothing_to_do_is_not_noted_as_an_index_left_behind(tmp_path):
    """Red-team 3 bug 15: the rebuild's only reason was copy.md, not indexed, which the plan's merge
    archives; apply skipped it ("index already up to date", true) and noted "MEMORY.md: not edited
    for this run's changes ... it may still list what was archived", although nothing was wrong.
    Now no such rebuild is proposed (tests/test_claude_settled_drift.py), and the run notes nothing."""
    folder = write(tmp_path / AGENT, {"gamma.md": topic("gamma", "gamma", "Same text.", "user"),
                                      "copy.md": topic("copy", "copy", "Same text.", "user"),
                                      "MEMORY.md": "# Memory\n\n- [Gamma](gamma.md) — gamma\n"})
    os.utime(folder / "gamma.md", (1577836800, 1577836800))
    plan, text = applied(tmp_path)
    assert [a["kind"] for a in plan["actions"]] == ["merge_duplicate"]
    assert plan["run"]["skipped"] == []
    assert plan["run"]["notes"] == [] and text == "# Memory\n\n- [Gamma](gamma.md) — gamma\n"


SUB_INDEX = ("# Ops\n\n- [Gamma](gamma.md) — gamma\n- [Copy](copy.md) — copy\n- [Alpha](alpha.md) — alpha\n\n"
             "## Pinned\n- [Copy](copy.md) — Mina owns this, ask her first\n")


def sub_indexed_twins(root: Path) -> Path:
    """gamma.md and its copy copy.md (a merge retires the copy), listed with alpha.md in index-ops.md,
    a sub-index MEMORY.md links, whose `## Pinned` holds the owner's note on copy.md."""
    folder = write(root / AGENT, {"gamma.md": topic("gamma", "gamma", "Same text.", "user"),
                                  "copy.md": topic("copy", "copy", "Same text.", "user"),
                                  "alpha.md": topic("alpha", "alpha", "Alpha.", "user"), "index-ops.md": SUB_INDEX,
                                  "MEMORY.md": "# Memory\n\n- [Ops index](index-ops.md) — ops rules\n"})
    os.utime(folder / "gamma.md", (1577836800, 1577836800))  # the older: the merge's survivor
    return folder


def test_an_owners_note_in_a_sub_index_points_at_the_survivor_and_the_plan_says_so(tmp_path):
    """Red-team 3 bug 14: in a sub-index, the owner's note on a file an automatic merge retires was
    deleted with its `## Pinned` heading, the plan and the run's notes silent. As in MEMORY.md, it
    stays, pointing at the survivor, and both say so, naming the sub-index."""
    sub_indexed_twins(tmp_path)
    plan, text = applied(tmp_path, "index-ops.md")
    told = ("index-ops.md: 1 owner's note line on a file this run retires kept, pointing at the file now holding its content: "
            "`- [Copy](copy.md) — Mina owns this, ask her first` at line 8 under 'Pinned', now to gamma.md")
    [merge] = plan["actions"]
    assert merge["kind"] == "merge_duplicate" and not merge["needs_user"]
    assert merge["reason"] == f"normalized text identical; applying it: {told}"
    assert plan["run"]["notes"] == [f"{AGENT}/{told}"] and not plan["run"]["skipped"]
    assert text == SUB_INDEX.replace("- [Copy](copy.md) — copy\n", "").replace("(copy.md) — Mina", "(gamma.md) — Mina")


def test_an_owners_note_in_a_sub_index_on_a_pruned_file_is_quoted_before_it_goes(tmp_path):
    """No file takes a pruned file's content: its note in the sub-index goes with it (and its heading,
    the section emptied), quoted in the plan and the run's notes with the sub-index's name."""
    sub_indexed_twins(tmp_path)
    prune = PruneStaleAction(targets=[f"{AGENT}/copy.md"], reason="refers to nothing that exists")
    text, notes, said = applied_alone(tmp_path, [prune], "index-ops.md")
    told = ("index-ops.md: 1 owner's note line removed with the file it notes, no file of the folder taking that file's "
            "content: `- [Copy](copy.md) — Mina owns this, ask her first` at line 8 under 'Pinned' (the heading goes too, "
            "its section now empty)")
    assert said == f"refers to nothing that exists; applying it: {told}" and notes == [f"{AGENT}/{told}"]
    assert text == "# Ops\n\n- [Gamma](gamma.md) — gamma\n- [Alpha](alpha.md) — alpha\n"


NESTED = ("# Memory\n\n- [Alpha](alpha.md) — alpha\n- [Copy](copy.md) — copy\n"
          "  - owner: copy.md is the one the deploy bot reads\n    and the cron job too\n- [Gamma](gamma.md) — gamma\n")


def nested_twins(root: Path) -> Path:
    """gamma.md and its copy copy.md (a merge retires the copy), alpha.md listed above the copy's entry,
    and the owner's sub-bullet (with a line of text under it) nested under that entry."""
    folder = write(root / AGENT, {"gamma.md": topic("gamma", "gamma", "Same text.", "user"),
                                  "copy.md": topic("copy", "copy", "Same text.", "user"),
                                  "alpha.md": topic("alpha", "alpha", "Alpha.", "user"), "MEMORY.md": NESTED})
    os.utime(folder / "gamma.md", (1577836800, 1577836800))  # the older: the merge's survivor
    return folder


def test_lines_nested_under_a_merged_files_entry_move_under_the_survivors_entry(tmp_path):
    """Red-team 3 bug 2, variant B: the merge removed copy.md's entry line and left the owner's
    sub-bullet under it, now nested under Alpha's entry (another file), the plan silent. It moves
    under the survivor's entry, as deep as it was, and the plan and the run's notes quote it."""
    nested_twins(tmp_path)
    plan, text = applied(tmp_path)
    told = ("2 lines nested under an entry line this run removes kept, moved under the entry of the file now holding that "
            "file's content: `- owner: copy.md is the one the deploy bot reads` at line 5 under 'Memory', now under gamma.md, "
            "`and the cron job too` at line 6 under 'Memory', now under gamma.md")
    [merge] = plan["actions"]
    assert merge["kind"] == "merge_duplicate" and merge["reason"] == f"normalized text identical; applying it: {told}"
    assert plan["run"]["notes"] == [f"{AGENT}/MEMORY.md: {told}"] and not plan["run"]["skipped"]
    assert text == ("# Memory\n\n- [Alpha](alpha.md) — alpha\n- [Gamma](gamma.md) — gamma\n"
                    "  - owner: copy.md is the one the deploy bot reads\n    and the cron job too\n")


def test_lines_nested_under_a_pruned_files_entry_go_with_it_quoted(tmp_path):
    """No file takes a pruned file's content: the lines nested under its entry go with it (not left
    under Alpha's), each quoted in the plan and the run's notes."""
    nested_twins(tmp_path)
    prune = PruneStaleAction(targets=[f"{AGENT}/copy.md"], reason="refers to nothing that exists")
    text, notes, said = applied_alone(tmp_path, [prune])
    told = ("MEMORY.md: 2 lines nested under an entry line this run removes removed with it, the index keeping no entry of "
            "a file holding that file's content: `- owner: copy.md is the one the deploy bot reads` at line 5 under "
            "'Memory', `and the cron job too` at line 6 under 'Memory'")
    assert told.removeprefix("MEMORY.md: ") in said and notes == [f"{AGENT}/{told}"]
    assert text == "# Memory\n\n- [Alpha](alpha.md) — alpha\n- [Gamma](gamma.md) — gamma\n"
