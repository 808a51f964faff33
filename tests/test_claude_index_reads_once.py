"""The MEMORY.md grammar reads each thing of an index once (claude/memory_md.py), and what the
rebuild leaves unwritten is a typed result (claude/index_rebuild.NotWritten), with the behaviour
each refactor kept:

- a line's reference definition is matched once, its `label` on the parsed line for every reader
  of the index's labels (`_labels`, `_parse_line`, `_definitions_edited`), `link_names.reference_uses`
  included: it is asked only of the lines the parse read as no definition;
- the lines nested under removed entries find their new entry in one walk of the index, not one
  per removed entry;
- a consolidation's line (`restyler`) scans its entry link once, not on each step of the hook
  trimming's bisection;
- an index the run leaves as it was is "already up to date", no problem said; one it cannot edit
  is said in the folder's REPORT.md and the run's notes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from helpers import NOW, cpu_growth, snapshot

from pipeline.actions import PruneStaleAction
from pipeline.api import apply_plan, build_plan, open_store, undo
from pipeline.config import Settings
from pipeline.layouts.claude import memory_md
from pipeline.model import Action
from pipeline.rules import link_names

AGENT = ".claude/agent-memory/a"
S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})


# ---------------------------------------------------------------------------------------------
# reference definitions


REFS = ("# Ops\n\n- [Old][o] — old runbook\n- [Keep](keep.md) — see also [the old one][o]\n"
        "- [Pinned][O] — the old runbook, says Bob\n\n[o]: <old.md>\n[k]: keep.md\n")


def test_each_lines_reference_definition_is_matched_once(monkeypatch):
    lines = len(memory_md.parse(REFS))
    matched: list[str] = []
    match = memory_md.reference_definition

    def counted(line: str):
        matched.append(line)
        return match(line)

    monkeypatch.setattr(memory_md, "reference_definition", counted)
    struck = memory_md.strike(REFS, {"old.md"}, {}, homes={"old.md": "keep.md"})
    # before: matched by `_labels`, again by `_parse_line`, again in `_edited`'s `_labels` and by
    # `_definitions_edited`, and the note pointed at keep.md once more (`_pointed_at`): 29 times
    assert len(matched) == lines
    assert [(p.label, p.definition) for p in memory_md.parse(REFS) if p.label] == [("o", "old.md"), ("k", "keep.md")]
    # the note's use keeps the definition, pointed at the home in its own spelling; the other use is struck
    assert struck.text == ("# Ops\n\n- [Keep](keep.md) — see also ~~the old one~~\n- [Pinned][O] — the old runbook, says Bob\n\n"
                           "[o]: <keep.md>\n[k]: keep.md\n")


def test_a_reference_use_is_read_without_matching_its_line_as_a_definition_again(monkeypatch):
    lines = len(memory_md.parse(REFS))
    matched: list[str] = []
    for module in (memory_md, link_names):  # the grammar's own, and the one `reference_uses` called
        match = module.reference_definition

        def counted(line: str, match=match):
            matched.append(line)
            return match(line)

        monkeypatch.setattr(module, "reference_definition", counted)
    struck = memory_md.strike(REFS, {"old.md"}, {}, homes={"old.md": "keep.md"})
    assert len(matched) == lines  # before: 17 for 9 lines, `reference_uses` matching each line holding a `[` again
    assert "- [Pinned][O] — the old runbook, says Bob" in struck.text  # its use still read: the definition kept
    assert struck.text.endswith("[o]: <keep.md>\n[k]: keep.md\n")


def test_a_label_is_its_first_definitions_even_one_naming_a_url_and_none_in_code():
    lines = memory_md.parse("- [A][a] — x\n\n[a]: https://example.test\n[ A ]: alpha.md\n```\n[b]: beta.md\n```\n- [B][b] — y\n"
                            "- [C][c] — use before its definition\n[C]: gamma.md\n")
    assert lines[0].links == []  # `[a]` is the URL's: the later `[ A ]: alpha.md` defines nothing new
    assert lines[2].definition is None
    assert lines[3].definition == "alpha.md"  # the line itself reaches alpha.md
    assert lines[5].definition is None and lines[7].links == []  # a definition in code is none
    assert [lk[3] for lk in lines[8].links] == ["gamma.md"]
    assert memory_md.linked(lines, {"alpha.md", "beta.md", "gamma.md"}) == ["alpha.md", "gamma.md"]


# ---------------------------------------------------------------------------------------------
# the lines nested under removed entries


def test_lines_nested_under_removed_entries_move_under_each_ones_new_entry():
    text = ("# Ops\n\n- [Old A](a.md) — old a\n  a's nested note\n- [Old B](b.md) — old b\n  b's nested note\n"
            "- [Keep](keep.md) — kept\n- [C](c.md) — a member\n- [Old D](d.md) — old d\n  d's nested note\n")
    replace = {"c.md": memory_md.IndexItem("new.md", "New", "the new file")}
    struck = memory_md.strike(text, {"a.md", "b.md", "c.md", "d.md"}, {}, replace, {"a.md": "keep.md", "b.md": "new.md"})
    # (the new entry a bare link: its hook would pass the index's longest entry line, `house_width`)
    assert struck.text == "# Ops\n\n- [Keep](keep.md) — kept\n  a's nested note\n- [New](new.md)\n  b's nested note\n"
    # d.md has no home: its note goes with it, quoted
    assert any("d's nested note" in said for said in struck.said)


def test_moving_the_lines_nested_under_many_removed_entries_takes_linear_work():
    def strike(n: int) -> None:
        text = "# A\n\n" + "".join(f"- [G{i}](g{i}.md) — g\n  note {i}\n" for i in range(n)) + "- [Keep](keep.md) — k\n"
        gone = {f"g{i}.md" for i in range(n)}
        memory_md.strike(text, gone, {}, homes=dict.fromkeys(gone, "keep.md"))

    # before: each removed entry walked the index to the kept one, and `_notes_on` each gone file's
    # home's listings: 3,000 entries took 1.35 s, 1,500 0.33 s (0.14 s and 0.055 s now)
    assert cpu_growth(strike, 375, 1_500) < 8


# ---------------------------------------------------------------------------------------------
# a consolidation's line, through the hook trimming


def test_a_consolidations_line_scans_its_entry_link_once_however_often_its_hook_is_cut(monkeypatch):
    scans = Counter()
    link_at = memory_md._link_at

    def counted(s: str, start: int):
        scans[s] += 1
        return link_at(s, start)

    monkeypatch.setattr(memory_md, "_link_at", counted)
    old_line = "- **[Old](<old notes.md>)** — " + "the old runbook's words " * 12
    existing = f"# Memory\n\n{old_line}\n- [Keep](keep.md) — " + "kept words of the owner " * 12 + "\n"
    new = memory_md.IndexItem("new%20notes.md", "New", "what the new file holds, at length " * 6)
    rebuilt = memory_md.rebuild(existing, "Memory", [], ["old notes.md"], budget=300, min_hook=20, load_bytes=500,
                                replace={"old notes.md": new}, gone_numbers={})
    assert rebuilt.replaced == ["old notes.md"]
    assert any("hand-written hook" in w for w in rebuilt.warnings)  # cut: the bisection ran
    assert scans == {old_line: 1}  # before: once per hook length tried
    [line] = [line for line in rebuilt.text.splitlines() if "New" in line]
    assert line.startswith("- **[New](<new notes.md>)** — what the new file holds")  # its bold and angle brackets kept


def test_a_consolidations_line_keeps_the_lines_style_with_a_hook_and_without():
    item = memory_md.IndexItem("7-new.md", "New", "")
    [linked, numbered, bare] = memory_md.parse("- [Old](old.md) : old\n- 003) Old title – old\n* **[Old](old.md)**")
    assert memory_md.restyler(linked, item)("a  new\nhook") == "- [New](7-new.md) : a new hook"
    assert memory_md.restyler(linked, item)("") == "- [New](7-new.md)"
    assert memory_md.restyler(numbered, item)("h") == "- 7) New – h"
    assert memory_md.restyler(numbered, memory_md.IndexItem("new.md", "New", ""))("") == "- [New](new.md)"
    assert memory_md.restyler(bare, item)("h") == "* **[New](7-new.md)** — h"


# ---------------------------------------------------------------------------------------------
# an index the run does not write


def topic(name: str) -> str:
    return f"---\nname: {name}\ndescription: about {name} and its things\ntype: reference\n---\n\nNotes on {name}.\n"


def store(root: Path, index: str) -> Path:
    folder = root / AGENT
    folder.mkdir(parents=True)
    for name in ("alpha", "beta", "gamma"):
        (folder / f"{name}.md").write_text(topic(name), encoding="utf-8")
    (folder / "MEMORY.md").write_text(index, encoding="utf-8")
    return folder


def report_of(folder: Path, run_id: str) -> str:
    return (folder / ".archive" / run_id / "REPORT.md").read_text(encoding="utf-8")


INDEX = "# Memory\n\n- [Alpha](alpha.md) — first\n- [Beta](beta.md) — second\n- [Gamma](gamma.md) — third\n"


def test_a_rebuild_of_an_index_already_up_to_date_is_skipped_as_such_and_no_problem_is_said(tmp_path):
    folder = store(tmp_path, INDEX)
    corpus, settings = open_store(tmp_path, S)
    plan = build_plan(corpus, settings)
    rebuild = Action(kind="rebuild_index", targets=[f"{AGENT}/MEMORY.md"], reason="asked")
    prune = PruneStaleAction(targets=[f"{AGENT}/gamma.md"], reason="refers to nothing that exists")
    before = snapshot(tmp_path)
    # the gamma line goes; once done, the index asked for no more: nothing left unwritten to report
    result = apply_plan(corpus, plan, settings, actions=[prune])
    assert "NOT REBUILT" not in report_of(folder, result.run_id) and not result.changes.skipped
    undo(tmp_path, result.run_id)
    assert snapshot(tmp_path) == before
    result = apply_plan(corpus, plan, settings, actions=[rebuild])
    assert [why for _, why in result.changes.skipped] == ["index already up to date"]
    assert not any("not edited" in n for n in result.changes.notes)
    assert snapshot(tmp_path) == before


def test_an_index_the_run_cannot_edit_is_said_not_rebuilt_in_the_report_and_the_notes(tmp_path):
    index = INDEX + "\n```sh\nmake all\n"
    folder = store(tmp_path, index)
    corpus, settings = open_store(tmp_path, S)
    plan = build_plan(corpus, settings)
    prune = PruneStaleAction(targets=[f"{AGENT}/gamma.md"], reason="refers to nothing that exists")
    result = apply_plan(corpus, plan, settings, actions=[prune])
    fence = memory_md.unclosed_fence_said(7)
    assert f"| `MEMORY.md` | NOT REBUILT | MEMORY.md left untouched: {fence} |" in report_of(folder, result.run_id)
    assert f"{AGENT}/MEMORY.md: not edited for this run's changes (MEMORY.md left untouched: {fence}); it may still " \
           "list what was archived or miss what was written: fix that, and the next plan proposes rebuild_index" in result.changes.notes
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == index
