"""Code fences and inline links in the MEMORY.md grammar (claude/memory_md.py), as an agent writes them.

- A fence closes only on a fence line of its own character, at least as long, with no info string
  (CommonMark): a ```` ```python ```` line inside a ```` ```` ```` block is code, not its end.
- A fence no later line closes leaves where its code ends unknown: the index is read (the lines
  after it as text: no file listed after it is taken for unindexed and listed a second time), never
  edited, and a MEMORY.md holding memories itself gives none (the one holding the fence would run to
  the end of the file, and its retirement take the later sections with it). The reader says why.
- An inline link's text may hold bracketed groups (`[see [x]](x.md)`): read in linear time, the same
  links as the pattern it replaces on any line (differential test), a 128 KB line of `[[x]` too.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings as hsettings, strategies as st

from helpers import NOW, cpu_growth, snapshot

from pipeline.actions import PruneStaleAction
from pipeline.api import apply_plan, build_plan, open_store, undo
from pipeline.config import Settings
from pipeline.model import Action
from pipeline.layouts.claude import memory_md
from pipeline.rules.link_names import HREF
from pipeline.text.lines import fenced_blocks

AGENT = ".claude/agent-memory/a"
S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})


def topic(name: str) -> str:
    return f"---\nname: {name}\ndescription: about {name} and its things\ntype: reference\n---\n\nNotes on {name}.\n"


def store(root: Path, index: str, names: tuple[str, ...] = ("alpha", "beta", "gamma")) -> Path:
    folder = root / AGENT
    folder.mkdir(parents=True)
    for name in names:
        (folder / f"{name}.md").write_text(topic(name), encoding="utf-8")
    (folder / "MEMORY.md").write_text(index, encoding="utf-8")
    return folder


def kinds(plan) -> list[tuple[str, list[str]]]:
    return [(a.kind, a.targets) for a in plan.actions]


def parse_problems(plan) -> list[str]:
    return [f.reason for f in plan.findings if f.kind == "parse_error"]


# ---------------------------------------------------------------------------------------------
# fences, as CommonMark pairs them


def test_a_fence_closes_on_its_own_character_at_least_as_long_without_an_info_string():
    lines = ["````", "```python", "- [x](x.md)", "```", "````", "~~~", "```", "~~", "~~~~  ", "after", "```js", "still open"]
    fences = fenced_blocks(lines)
    assert fences.code == [True] * 9 + [False] * 3
    assert fences.unclosed == [10]  # read as a line of its own, the lines after it as text


def test_a_line_of_inline_code_opens_no_fence():
    assert fenced_blocks(["```x```", "- [a](a.md)", "```"]).unclosed == [2]


# ---------------------------------------------------------------------------------------------
# a topic-file index


UNCLOSED = "# Memory\n\n- [Alpha](alpha.md) — first\n\n```bash\necho hi\n\n## Later\n\n- [Beta](beta.md) — second\n"


def test_an_index_with_an_unclosed_fence_is_read_whole_reported_and_never_rebuilt(tmp_path):
    folder = store(tmp_path, UNCLOSED)  # gamma.md is listed nowhere: drift, which a rebuild would fix
    corpus, settings = open_store(tmp_path, S)
    # Beta, listed after the fence, is listed: no rebuild adds a second `- [beta](beta.md)`
    assert sorted(e.target for e in corpus.index_entries) == [f"{AGENT}/alpha.md", f"{AGENT}/beta.md"]
    plan = build_plan(corpus, settings)
    assert parse_problems(plan) == [memory_md.unclosed_fence_said(5)]
    assert "rebuild_index" not in [a.kind for a in plan.actions]  # apply would skip it every time
    # a rebuild asked for anyway (a caller's) leaves it as it is, and says why
    before = snapshot(tmp_path)
    result = apply_plan(corpus, plan, settings, actions=[Action(kind="rebuild_index", targets=[f"{AGENT}/MEMORY.md"], reason="asked")])
    [(_, why)] = result.changes.skipped
    assert "code fence at line 5 is never closed" in why
    assert snapshot(tmp_path) == before
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == UNCLOSED


def test_a_file_archived_beside_an_index_with_an_unclosed_fence_leaves_the_index_as_it_is(tmp_path):
    folder = store(tmp_path, UNCLOSED)
    before = snapshot(tmp_path)
    corpus, settings = open_store(tmp_path, S)
    plan = build_plan(corpus, settings)
    prune = PruneStaleAction(targets=[f"{AGENT}/beta.md"], reason="refers to nothing that exists")
    result = apply_plan(corpus, plan, settings, actions=[prune])
    assert not (folder / "beta.md").exists()
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == UNCLOSED  # not one of its lines removed
    assert any("code fence at line 5 is never closed" in note for note in result.changes.notes)
    undo(tmp_path, result.run_id)
    assert snapshot(tmp_path) == before


MISPAIRED = ("# Memory\n\n- [Alpha](alpha.md) — first\n\n"
             "````markdown\n```python\n- [Old](old.md) — an example entry, in code\n```\n````\n\n"
             "- [Beta](beta.md) — second\n")


def test_a_fence_inside_a_longer_one_is_code_and_a_rebuild_keeps_every_line_of_the_block(tmp_path):
    folder = store(tmp_path, MISPAIRED)
    corpus, settings = open_store(tmp_path, S)
    assert sorted(e.target for e in corpus.index_entries) == [f"{AGENT}/alpha.md", f"{AGENT}/beta.md"]  # not old.md
    before = snapshot(tmp_path)
    plan = build_plan(corpus, settings)
    [rebuild] = [a for a in plan.actions if a.kind == "rebuild_index"]
    assert rebuild.reason == f"1 file not indexed: {AGENT}/gamma.md"  # no entry without a file to remove
    result = apply_plan(corpus, plan, settings, actions=[rebuild])
    after = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert after.startswith(MISPAIRED) and after.count("- [Beta](beta.md)") == 1 and "(gamma.md)" in after
    undo(tmp_path, result.run_id)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# a MEMORY.md holding the memories itself


SECTIONS = "# Notes\n\n## Build\n\n- build with make\n\n{fence}\n\n## Deploy\n\n- deploy on Fridays\n\n## Style\n\n- tabs, never spaces\n"


def test_a_block_of_fences_inside_a_longer_one_is_one_memory_and_the_sections_after_it_theirs(tmp_path):
    fence = "~~~~\n```\nmake all\n~~~\n```\n~~~~"  # old: the `~~~` closed the block, the last `~~~~` opened one
    chunks = memory_md.chunks(SECTIONS.format(fence=fence))
    assert [(c.heading, c.title) for c in chunks] == [
        ("Build", "build with make"), ("Build", "~~~~"), ("Deploy", "deploy on Fridays"), ("Style", "tabs, never spaces")]


def test_a_memory_md_holding_memories_with_an_unclosed_fence_gives_none_and_says_why(tmp_path):
    folder = tmp_path / AGENT
    folder.mkdir(parents=True)
    text = SECTIONS.format(fence="```sh\nmake all")
    (folder / "MEMORY.md").write_text(text, encoding="utf-8")
    corpus, settings = open_store(tmp_path, S)
    assert corpus.memories == []  # the one holding the fence would run to the end of the file
    plan = build_plan(corpus, settings)
    assert parse_problems(plan) == [memory_md.unclosed_fence_said(7)]
    assert not [a for a in plan.actions if any("MEMORY.md#" in t for t in a.targets)]


# ---------------------------------------------------------------------------------------------
# inline links, in linear time


# The pattern `inline_links` replaces: its link text's groups made it try each `[` to the line's end.
OLD_LINK = re.compile(rf"\[(?P<title>(?:[^\[\]]|\[[^\]]*\])*)\]\({HREF}(?:\s+\"[^\"]*\")?\)")
PIECES = ["[", "]", "(", ")", "[x]", "](", "x.md", "a b.md", "<a b.md>", "<x.md", ' "t"', '"', "x", " ", "\\", "`", "!", "\t"]


def old_links(s: str) -> list[tuple[int, int, str, str, str | None]]:
    return [(m.start(), m.end(), m.group("title"), m.group("href"), m.group("angle")) for m in OLD_LINK.finditer(s)]


def new_links(s: str) -> list[tuple[int, int, str, str, str | None]]:
    return [(lk.start, lk.end, lk.title, lk.target.group("href"), lk.target.group("angle")) for lk in memory_md.inline_links(s)]


@hsettings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_inline_links_reads_what_the_old_pattern_read_on_link_ish_lines(line):
    assert new_links(line) == old_links(line)


@hsettings(max_examples=1000, deadline=None)
@given(st.text(alphabet="[]()<> \"x.md", max_size=60))
def test_inline_links_reads_what_the_old_pattern_read_on_any_bracket_text(line):
    assert new_links(line) == old_links(line)


def test_a_128_kb_line_of_brackets_is_read():
    line = "[[x]" * (128 * 1024 // 4)
    assert memory_md.parse(line)[0].links == []
    [(start, end, title, name)] = memory_md.parse(line + "](a.md)")[0].links
    assert (start, end, title, name) == (0, len(line) + 7, line[1:], "a.md")


def test_reading_a_line_of_brackets_grows_linearly_with_it():
    # each `[` has a text ending at the last `]`, then `(` and no href: the old pattern scanned
    # to the end from every one (32 KB: 2.5 s; 128 KB: 47 s), growing 16-fold for 4 times the line
    def read(line: str) -> None:
        memory_md.parse(line)

    small, large = "[[x]" * 2048 + "](", "[[x]" * 8192 + "]("
    assert cpu_growth(read, small, large) < 8


def test_a_sub_index_with_an_unclosed_fence_is_not_struck_when_a_file_it_lists_is_archived(tmp_path):
    sub = "# Topics\n\n- [Alpha](alpha.md) — first\n- [Beta](beta.md) — second\n\n```\nan example\n"
    folder = store(tmp_path, "# Memory\n\n- [Topics](topics.md) — every topic\n- [Gamma](gamma.md) — third\n")
    (folder / "topics.md").write_text(sub, encoding="utf-8")
    before = snapshot(tmp_path)
    corpus, settings = open_store(tmp_path, S)
    assert corpus.extra["sub_indexes"] == {f"{AGENT}/MEMORY.md": [f"{AGENT}/topics.md"]}
    plan = build_plan(corpus, settings)
    result = apply_plan(corpus, plan, settings, actions=[PruneStaleAction(targets=[f"{AGENT}/alpha.md"], reason="gone")])
    assert not (folder / "alpha.md").exists()
    assert (folder / "topics.md").read_text(encoding="utf-8") == sub  # its Alpha line stays, as every other
    assert any("topics.md: not edited for this run's changes, the code fence at line 6 is never closed" in n
               for n in result.changes.notes)
    undo(tmp_path, result.run_id)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# what an index never edited misses, said before its fence is fixed


def test_the_drift_of_an_index_with_an_unclosed_fence_is_a_finding_and_never_an_action(tmp_path):
    # gamma.md is listed nowhere; delta.md, listed after the fence (read as text), is no file
    store(tmp_path, UNCLOSED + "- [Delta](delta.md) — gone\n")
    corpus, settings = open_store(tmp_path, S)
    plan = build_plan(corpus, settings)
    assert not [a for a in plan.actions if a.kind in ("rebuild_index", "trim_budget")]
    [review] = [f for f in plan.findings if f.kind == "manual_review"]
    assert review.targets == [f"{AGENT}/MEMORY.md"]
    assert review.reason == (f"1 file not indexed: {AGENT}/gamma.md; 1 entry without a file: {AGENT}/delta.md (“gone”): left as it is, "
                             "the index being read but never edited while it has the parse_error said of it: fix that, "
                             "and the next plan proposes rebuild_index")
    before = snapshot(tmp_path)
    apply_plan(corpus, plan, settings)  # nothing of it is the run's to fix
    assert snapshot(tmp_path) == before


def test_an_index_with_an_unclosed_fence_and_no_drift_gets_no_finding_but_its_parse_error(tmp_path):
    store(tmp_path, UNCLOSED + "- [Gamma](gamma.md) — third\n")
    plan = build_plan(*open_store(tmp_path, S))
    assert [(f.kind, f.targets) for f in plan.findings if f.kind in ("parse_error", "manual_review")] == [
        ("parse_error", [f"{AGENT}/MEMORY.md"])]


def test_a_sub_index_with_an_unclosed_fence_is_a_parse_error_as_memory_md_is(tmp_path):
    sub = "# Topics\n\n- [Alpha](alpha.md) — first\n- [Beta](beta.md) — second\n\n```\nan example\n"
    folder = store(tmp_path, "# Memory\n\n- [Topics](topics.md) — every topic\n- [Gamma](gamma.md) — third\n"
                             "- [Delta](delta.md) — gone\n")
    (folder / "topics.md").write_text(sub, encoding="utf-8")
    corpus, settings = open_store(tmp_path, S)
    plan = build_plan(corpus, settings)
    assert [(f.targets, f.reason) for f in plan.findings if f.kind == "parse_error"] == [
        ([f"{AGENT}/topics.md"], memory_md.unclosed_fence_said(6))]
    # MEMORY.md itself is edited as before: the rebuild of its own drift never touches the sub-index
    [rebuild] = [a for a in plan.actions if a.kind == "rebuild_index"]
    assert rebuild.targets == [f"{AGENT}/MEMORY.md"]
    apply_plan(corpus, plan, settings, actions=[rebuild])
    assert "delta.md" not in (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert (folder / "topics.md").read_text(encoding="utf-8") == sub
