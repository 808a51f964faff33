"""Red-team 4 bug 1: a MEMORY.md list item reaches as far as CommonMark says, and a heading is a
heading however it is written.

An owner's note that is part of a removed entry's list item as CommonMark reads it, but not
indented right under it, was left behind when the entry went, and then read as part of the entry
above (another file's), the plan silent: (a) a loose item's paragraph (a blank line, then text
indented to the item's text), (b) a lazy continuation line (a hook wrapped at column 0, right under
the item's text). They are now treated as the deeper-indented lines under a removed entry always
were (`memory_md._continuation`): moved under the entry of the file holding its content, else gone
with it, quoted in the plan and the run's notes. And a setext heading (`Deploys` over `-------`)
whose only entry the run removed stayed, empty, where an ATX `## Deploys` goes.

Each store is built in tmp_path; every apply is undone byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import calls_made

from test_claude_index_edits import AGENT, applied_alone
from test_claude_index_notes import applied, nested_twins, sub_indexed_twins
from test_readers_fuzz import GROWTH_LIMIT

from pipeline.actions import PruneStaleAction
from pipeline.layouts.claude import memory_md

NOTE = "owner: copy.md is the one the deploy bot reads"
LOOSE = f"- [Copy](copy.md) — copy\n\n  {NOTE}\n\n"  # a loose item: its second paragraph, after a blank line
LAZY = f"- [Copy](copy.md) — copy,\n{NOTE}\n"  # its hook wrapped at column 0: a lazy continuation line
SHAPES = {"loose paragraph": LOOSE, "lazy continuation line": LAZY}
# The note as it reads under Gamma's entry once moved there: as it read under Copy's
MOVED = {"loose paragraph": f"\n  {NOTE}\n", "lazy continuation line": f"{NOTE}\n"}
LINE = {"loose paragraph": 6, "lazy continuation line": 5}  # the note's line number in MEMORY.md
PRUNE = PruneStaleAction(targets=[f"{AGENT}/copy.md"], reason="refers to nothing that exists")


def index_with(shape: str) -> str:
    """Alpha's entry, then Copy's in `shape` (its note part of its list item), then Gamma's."""
    return f"# Memory\n\n- [Alpha](alpha.md) — alpha\n{SHAPES[shape]}- [Gamma](gamma.md) — gamma\n"


def store_with(root: Path, index: str) -> Path:
    """`nested_twins` (gamma.md the older twin of copy.md, alpha.md) with `index` as its MEMORY.md."""
    folder = nested_twins(root)
    (folder / "MEMORY.md").write_text(index, encoding="utf-8")
    return folder


def moved_told(shape: str, where: str = "Memory") -> str:
    return ("1 line nested under an entry line this run removes kept, moved under the entry of the file now holding that "
            f"file's content: `{NOTE}` at line {LINE[shape]} under '{where}', now under gamma.md")


def gone_told(shape: str, where: str = "Memory") -> str:
    return ("1 line nested under an entry line this run removes removed with it, the index keeping no entry of a file "
            f"holding that file's content: `{NOTE}` at line {LINE[shape]} under '{where}'")


@pytest.mark.parametrize("shape", SHAPES)
def test_a_note_in_a_merged_files_list_item_moves_under_the_survivors_entry(tmp_path, shape):
    store_with(tmp_path, index_with(shape))
    plan, text = applied(tmp_path)
    [merge] = plan["actions"]
    assert merge["kind"] == "merge_duplicate" and merge["reason"] == f"normalized text identical; applying it: {moved_told(shape)}"
    assert plan["run"]["notes"] == [f"{AGENT}/MEMORY.md: {moved_told(shape)}"] and not plan["run"]["skipped"]
    rest = "\n" if shape == "loose paragraph" else ""  # the blank line after the loose item stays where it was
    assert text == f"# Memory\n\n- [Alpha](alpha.md) — alpha\n{rest}- [Gamma](gamma.md) — gamma\n{MOVED[shape]}"


@pytest.mark.parametrize("shape", SHAPES)
def test_a_note_in_a_pruned_files_list_item_goes_with_it_quoted(tmp_path, shape):
    store_with(tmp_path, index_with(shape))
    text, notes, said = applied_alone(tmp_path, [PRUNE])
    assert said == f"refers to nothing that exists; applying it: {gone_told(shape)}"
    assert notes == [f"{AGENT}/MEMORY.md: {gone_told(shape)}"]
    rest = "\n" if shape == "loose paragraph" else ""
    assert text == f"# Memory\n\n- [Alpha](alpha.md) — alpha\n{rest}- [Gamma](gamma.md) — gamma\n"


def sub_index_with(shape: str) -> str:
    return f"# Ops\n\n- [Alpha](alpha.md) — alpha\n{SHAPES[shape]}- [Gamma](gamma.md) — gamma\n"


@pytest.mark.parametrize("shape", SHAPES)
def test_in_a_sub_index_a_note_in_a_merged_files_list_item_moves_under_the_survivors_entry(tmp_path, shape):
    folder = sub_indexed_twins(tmp_path)
    (folder / "index-ops.md").write_text(sub_index_with(shape), encoding="utf-8")
    plan, text = applied(tmp_path, "index-ops.md")
    told = f"index-ops.md: {moved_told(shape, 'Ops')}"
    [merge] = plan["actions"]
    assert merge["reason"] == f"normalized text identical; applying it: {told}"
    assert plan["run"]["notes"] == [f"{AGENT}/{told}"] and not plan["run"]["skipped"]
    rest = "\n" if shape == "loose paragraph" else ""
    assert text == f"# Ops\n\n- [Alpha](alpha.md) — alpha\n{rest}- [Gamma](gamma.md) — gamma\n{MOVED[shape]}"


@pytest.mark.parametrize("shape", SHAPES)
def test_in_a_sub_index_a_note_in_a_pruned_files_list_item_goes_with_it_quoted(tmp_path, shape):
    folder = sub_indexed_twins(tmp_path)
    (folder / "index-ops.md").write_text(sub_index_with(shape), encoding="utf-8")
    text, notes, said = applied_alone(tmp_path, [PRUNE], "index-ops.md")
    told = f"index-ops.md: {gone_told(shape, 'Ops')}"
    assert said == f"refers to nothing that exists; applying it: {told}" and notes == [f"{AGENT}/{told}"]
    rest = "\n" if shape == "loose paragraph" else ""
    assert text == f"# Ops\n\n- [Alpha](alpha.md) — alpha\n{rest}- [Gamma](gamma.md) — gamma\n"


@pytest.mark.parametrize("after", [
    "\nA paragraph of the owner's, after the list.\n",  # a blank line, then unindented text: no longer the item's
    "\n An almost indented paragraph.\n",  # indented less than the item's text: the list has ended
    "- [Alpha](alpha.md) — alpha\nnot Copy's: Alpha's own lazy line\n",  # another entry: its own item
    "## Later\nUnder the heading\n",  # a heading ends the item
    "```\ncode\n```\n",  # so does a fence
    "> a quote\n",
    "<!-- a comment -->\n",
    "| a | table |\n",
    "---\n",  # a rule
    "- a bullet of the owner's\n",  # a list item at the entry's indent: the next item
])
def test_what_ends_a_list_item_stays_when_its_entry_goes(after):
    """Only what CommonMark puts in the removed entry's list item goes with it: the rest is kept
    as written, byte for byte."""
    kept = "# Ops\n\n- [Gamma](gamma.md) — gamma\n"
    struck = memory_md.strike(f"{kept}- [Copy](copy.md) — copy\n{after}", {"copy.md"}, {})
    assert struck.text == kept + after and struck.said == []


def test_lines_of_a_loose_item_and_its_lazy_lines_are_one_item():
    """Every line CommonMark reads as the entry's list item goes with it, and only those: deeper
    lines, blank lines between its paragraphs (not the one after its last), a nested bullet's loose
    paragraph, lazy lines after each paragraph."""
    item = ("- [Copy](copy.md) — copy\nwrapped hook\n\n  second paragraph\n  lazy text follows\nmore lazy text\n\n\n"
            "  - a sub-bullet\n\n    its own paragraph\nand its lazy line\n")
    kept = "# Ops\n\n- [Gamma](gamma.md) — gamma\n"
    struck = memory_md.strike(f"{kept}{item}\n- [Alpha](alpha.md) — alpha\n", {"copy.md"}, {})
    assert struck.text == f"{kept}\n- [Alpha](alpha.md) — alpha\n"
    [said] = struck.said
    assert said.startswith("7 lines nested under an entry line this run removes removed with it")  # the blank lines go unsaid


def test_a_new_entry_goes_after_its_sibling_entrys_loose_paragraph_not_between():
    """The rebuild puts a new entry after its sibling's list item (`_block_end`, the same grammar):
    put between the entry and its loose paragraph, it would take the paragraph for its own."""
    index = f"# Memory\n\n- [Alpha](alpha.md) — alpha\n\n  {NOTE}\nand its lazy line\n\n- [Gamma](gamma.md) — gamma, a hook as long as the new one\n"
    item = memory_md.IndexItem("alpha_two.md", "Alpha two", "more alpha")
    rebuilt = memory_md.rebuild(index, "Memory", [item], [], budget=17_000, min_hook=90)
    assert rebuilt.text == index.replace("lazy line\n", "lazy line\n- [Alpha two](alpha_two.md) — more alpha\n")


SETEXT = ("Memory\n======\n\nDeploys\n-------\n\n- [Copy](copy.md) — copy\n\n"
          "Rules\n-----\n\n- [Alpha](alpha.md) — alpha\n- [Gamma](gamma.md) — gamma\n")
SETEXT_KEPT = "Memory\n======\n\nRules\n-----\n\n- [Alpha](alpha.md) — alpha\n- [Gamma](gamma.md) — gamma\n"
EMPTIED = "line 7 under 'Deploys' (the heading goes too, its section now empty)"


def test_a_setext_heading_the_merge_empties_goes_as_an_atx_heading_does(tmp_path):
    """The merge retires copy.md, the only entry under `Deploys` over `-------`: the heading and its
    underline go with it, as `## Deploys` does (and the ATX twin of the index, edited alike, shows it)."""
    store_with(tmp_path, SETEXT)
    plan, text = applied(tmp_path)
    assert [a["kind"] for a in plan["actions"]] == ["merge_duplicate"] and not plan["run"]["skipped"]
    assert text == SETEXT_KEPT
    atx = memory_md.strike(SETEXT.replace("Memory\n======", "# Memory").replace("Deploys\n-------", "## Deploys")
                           .replace("Rules\n-----", "## Rules"), {"copy.md"}, {}).text
    assert atx == SETEXT_KEPT.replace("Memory\n======", "# Memory").replace("Rules\n-----", "## Rules")


def test_a_setext_heading_the_prune_empties_goes_and_the_plan_says_so(tmp_path):
    """A note quoted under the emptied setext heading says the heading goes too, as under an ATX one."""
    store_with(tmp_path, SETEXT.replace("copy\n\n", f"copy\n  {NOTE}\n\n"))
    text, notes, said = applied_alone(tmp_path, [PRUNE])
    assert text == SETEXT_KEPT
    told = ("1 line nested under an entry line this run removes removed with it, the index keeping no entry of a file "
            f"holding that file's content: `{NOTE}` at line 8 under 'Deploys' (the heading goes too, its section now empty)")
    assert said == f"refers to nothing that exists; applying it: {told}"


def test_in_a_sub_index_a_setext_heading_the_merge_empties_goes(tmp_path):
    folder = sub_indexed_twins(tmp_path)
    (folder / "index-ops.md").write_text(SETEXT.replace("Memory\n======", "Ops\n==="), encoding="utf-8")
    plan, text = applied(tmp_path, "index-ops.md")
    assert [a["kind"] for a in plan["actions"]] == ["merge_duplicate"] and not plan["run"]["skipped"]
    assert text == SETEXT_KEPT.replace("Memory\n======", "Ops\n===")


@pytest.mark.parametrize("text", [
    "---\nname: Ops index\ndescription: ops rules\n---\n\n- [Copy](copy.md) — copy\n",  # front matter
    "- [Copy](copy.md) — copy\nwrapped hook\n---\n",  # a lazy line, then a rule (CommonMark: no setext underline)
    "Intro line one\nintro line two\n-----\n",  # a paragraph of two lines: not read as a heading here
    "  Indented text\n-----\n",  # indented, as an ATX heading read here is not
])
def test_only_a_line_of_text_starting_a_paragraph_is_read_as_a_setext_heading(text):
    assert [p.heading for p in memory_md.parse(text) if p.heading] == []
    assert not any(p.underline for p in memory_md.parse(text))


def test_setext_headings_are_read_with_their_level_and_sections():
    parsed = memory_md.parse(SETEXT)
    assert [(p.n, p.heading) for p in parsed if p.heading] == [(0, (1, "Memory")), (3, (2, "Deploys")), (8, (2, "Rules"))]
    assert [c.heading for c in memory_md.chunks(SETEXT)] == ["Deploys", "Rules", "Rules"]


@pytest.mark.parametrize("line", ["  nested text", "lazy text"])
def test_quoting_many_lines_under_a_removed_entry_takes_linear_work(line):
    """Each quoted line read every section of the index again for its `at line N under 'S'`: the
    20,000 lines of one pruned entry's item took 40 s to plan."""
    def strike(n: int) -> None:
        memory_md.strike("# A\n\n- [Copy](copy.md) — copy\n" + f"{line}\n" * n + "- [Gamma](gamma.md) — g\n", {"copy.md"}, {})

    assert calls_made(lambda: strike(4_000)) < GROWTH_LIMIT * calls_made(lambda: strike(1_000))


def test_a_reference_definition_right_under_a_merged_entry_is_edited_once_not_also_carried_as_its_line(tmp_path):
    """Review (session 16): `[c]: copy.md` at column 0 right under `- [Copy][c] — copy` read both as
    the item's lazy continuation line (moved under the survivor's entry, still naming copy.md) and as
    the definition of a file gone (removed): the edit failed its 1:1 check and MEMORY.md was left
    listing the archived file, the plan silent. The definition is the definition: removed, said once."""
    index = "# Memory\n\n- [Alpha](alpha.md) — alpha\n- [Copy][c] — copy\n[c]: copy.md\n- [Gamma](gamma.md) — gamma\n"
    store_with(tmp_path, index)
    plan, text = applied(tmp_path)
    [merge] = plan["actions"]
    assert "reference definition" in merge["reason"] and "moved under" not in merge["reason"]
    assert not plan["run"]["skipped"] and not any("not edited" in n for n in plan["run"]["notes"])
    assert text == "# Memory\n\n- [Alpha](alpha.md) — alpha\n- [Gamma](gamma.md) — gamma\n"
