"""Reference-style markdown links (`[text][ref]`, `[ref][]`, `[ref]` with a definition line
`[ref]: other.md "title"`) are links: the definition names the file, so a plan taking that file away
reports it, a relink rewrites the definition's href (every use follows it), and a definition that
reaches nothing is reported; in MEMORY.md and its sub-indexes a use is an entry or inline link as an
inline link is, and a run taking its file away points its definition at the file holding that content
or removes it. A relink or respelling of an href keeps the author's spelling: angle brackets stay angle
brackets (`<my notes.md>`), a percent-encoded href stays percent-encoded."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from helpers import mem, plan_json, run_cli

from pipeline.actions import MergeDuplicateAction
from pipeline.model import Action, Corpus
from pipeline.rules.dangling_links import dangling_links, relinks
from pipeline.rules.link_names import markdown_links_in, sibling_file

FOLDER = ".claude/memory/"


def _claude(key: str, body: str, name: str = "") -> object:
    return mem(FOLDER + key, body, layout="claude", title=name)


def _corpus(*memories) -> Corpus:
    return Corpus(layout="claude", root="/nowhere", memories=list(memories))


def _relinks(*memories):
    """`relinks` of a folder holding `memories`, its MEMORY.md listing them (markdown links are judged in listed folders)."""
    corpus = _corpus(*memories)
    corpus.indexes = {FOLDER + "MEMORY.md": [m.key for m in memories]}
    return relinks(corpus)


def _fm(name: str, body: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: about {name}\ntype: project\n{extra}---\n\n{body}"


def _store(root: Path, files: dict[str, str]) -> Path:
    folder = root / ".claude" / "memory"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    (folder / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"- [{n}]({quote(n)}) — x\n" for n in files), encoding="utf-8")
    return folder


def _consolidated(root: Path, holder: str, members: list[str], notes: str) -> Path:
    """A folder holding `holder`, an applied consolidation of `members` (gone), and notes.md, `notes`."""
    listed = "consolidated_from:\n" + "".join(f"  - {m}\n" for m in members)
    return _store(root, {holder: _fm(holder.removesuffix(".md"), "Both plans.\n", listed), "notes.md": notes})


def _relink_of(root: Path) -> dict:
    """The plan's one `update_ref`, with no dangling link left to report."""
    plan = plan_json(root, "--model", "none")
    [relink] = [a for a in plan["actions"] if a["kind"] == "update_ref"]
    assert relink["targets"] == [FOLDER + "notes.md"] and relink["needs_user"]
    assert not [f for f in plan["findings"] if f["kind"] == "dangling_link"]
    return relink


def _apply_relinks_and_undo(root: Path, path: Path, want: str) -> None:
    """Apply the plan's relinks (the user's leave), check the file reads `want`, undo, check it is back."""
    before = path.read_bytes()
    res = run_cli("apply", str(root), "--yes", "--json", "--model", "none", "--now", "2026-11-29", "--select", "update_ref")
    assert res.returncode == 0, res.stderr
    assert path.read_bytes().decode("utf-8") == want
    assert run_cli("undo", str(root), "--run", json.loads(res.stdout)["run_id"]).returncode == 0
    assert path.read_bytes() == before


def test_a_reference_definition_is_a_markdown_link_outside_code():
    text = ("See [the runbook][rb], [rb][] and [rb].\r\n"
            "[rb]: runbook.md \"Runbook\"\r\n"
            "  [two]: <my notes.md> 'notes'\n"
            "[three]: a%20b.md (title)\n"
            "[^1]: footnote.md\n"
            "[bad]: runbook.md trailing words\n"
            "```\n[fenced]: fenced.md\n```\n\n"
            "    [indented]: indented.md\n")
    hrefs = [(m.group("href"), m.group("angle")) for m in markdown_links_in(text)]
    assert hrefs == [("runbook.md", None), ("my notes.md", "<"), ("a%20b.md", None)]


def test_an_href_is_written_as_the_reader_reads_it_back_in_either_form():
    from pipeline.rules.link_names import href_of

    for name in ("plain.md", "my notes.md", "a#b.md", "50%.md", "x<y>.md", "café (1).md", "[draft].md"):
        for angle in (False, True):
            for encoded in (False, True):
                href = href_of(name, angle=angle, encoded=encoded)
                assert sibling_file(href) == name, (name, angle, encoded, href)
    assert href_of("my notes.md", angle=True) == "my notes.md" and href_of("my notes.md") == "my%20notes.md"
    assert href_of("café.md") == "café.md" and href_of("café.md", encoded=True) == "caf%C3%A9.md"


def test_a_merge_reports_a_link_made_only_through_a_reference_definition_with_its_survivor():
    corpus = _corpus(
        _claude("build_tip.md", "Warm the cache first.", name="build-tip"),
        _claude("build_tip_copy.md", "Warm the cache first.", name="build-tip-copy"),
        _claude("release.md", "Before a release see [the tip][tip].\n\n[tip]: build_tip_copy.md \"the build tip\"\n", name="release"),
        _claude("sample.md", "In a sample:\n\n```\n[tip]: build_tip_copy.md\n```\n\n    [tip]: build_tip_copy.md\n", name="sample"),
    )
    merge = MergeDuplicateAction(targets=[FOLDER + "build_tip.md", FOLDER + "build_tip_copy.md"], survivor=FOLDER + "build_tip.md", reason="r")
    [finding] = [f.model_dump(mode="json") for f in dangling_links(corpus, [merge])]
    assert finding["targets"] == [FOLDER + "build_tip_copy.md", FOLDER + "release.md"]  # not sample.md: its definitions are code
    assert "linked from 1 file: .claude/memory/release.md" in finding["reason"]
    assert f"could point at [[build-tip]] ({FOLDER}build_tip.md)" in finding["reason"]
    archive = Action(kind="archive", targets=[FOLDER + "build_tip_copy.md"], reason="r")
    [finding] = [f.model_dump(mode="json") for f in dangling_links(corpus, [archive])]
    assert finding["targets"] == [FOLDER + "build_tip_copy.md", FOLDER + "release.md"]


def test_a_definition_to_a_consolidated_member_is_relinked_to_what_holds_it_now(tmp_path: Path):
    notes = _fm("notes", "Both: [the plan][plan] and [plan][]; [plan].\r\n\r\n[plan]: old_plan.md \"The old plan\"\r\n"
                         "[other]: <old draft.md>\r\n\r\n```\r\n[plan]: old_plan.md\r\n```\r\n")
    folder = _consolidated(tmp_path, "plans.md", ["old_plan.md", "old draft.md"], notes)
    relink = _relink_of(tmp_path)
    assert [(r["before"], r["after"]) for r in relink["replacements"]] == [("old_plan.md", "plans.md"), ("old draft.md", "plans.md")]
    assert "[plan]: old_plan.md \"The old plan\" -> plans.md (consolidated into it)" in relink["reason"]
    want = notes.replace("[plan]: old_plan.md \"The", "[plan]: plans.md \"The").replace("<old draft.md>", "<plans.md>")
    _apply_relinks_and_undo(tmp_path, folder / "notes.md", want)


def test_a_definition_that_reaches_nothing_is_reported_or_respelled():
    target = _claude("project_fairchild.md", "The board.", name="project_fairchild")
    linking = _claude("quirk.md", "See [the board][b] and [draft][].\n\n[b]: project-fairchild.md#layers\n[draft]: never_written.md\n", name="quirk")
    out = _relinks(target, linking)
    [action] = out.actions
    assert [(r["before"], r["after"]) for r in action.replacements] == [("project-fairchild.md", "project_fairchild.md")]
    assert all(linking.body[r["start"]:r["end"]] == r["before"] for r in action.replacements)
    [finding] = out.findings
    assert finding.targets == [FOLDER + "quirk.md"]
    assert finding.reason == "1 link reaches no file of its folder: [draft]: never_written.md"


def test_a_relink_keeps_angle_brackets_and_percent_encoding_as_the_author_wrote_them(tmp_path: Path):
    notes = _fm("notes", "Angle: [a](<old plan.md#steps>) and [d]. Encoded: [e](old%20plan.md). Bare: [b](old_plan.md).\n\n"
                         "[d]: <old plan.md>\n")
    folder = _consolidated(tmp_path, "my plans.md", ["old plan.md", "old_plan.md"], notes)
    relink = _relink_of(tmp_path)
    assert [(r["before"], r["after"]) for r in relink["replacements"]] == [
        ("old plan.md", "my plans.md"), ("old%20plan.md", "my%20plans.md"), ("old_plan.md", "my%20plans.md"), ("old plan.md", "my plans.md")]
    want = (notes.replace("<old plan.md#", "<my plans.md#").replace("(old%20plan.md)", "(my%20plans.md)")
            .replace("(old_plan.md)", "(my%20plans.md)").replace("[d]: <old plan.md>", "[d]: <my plans.md>"))
    _apply_relinks_and_undo(tmp_path, folder / "notes.md", want)


def test_a_respelling_keeps_angle_brackets():
    target = _claude("project fairchild.md", "The board.", name="project fairchild")
    linking = _claude("quirk.md", "See [board](<project-fairchild.md>) and [old](project-fairchild.md).", name="quirk")
    [action] = _relinks(target, linking).actions
    assert [(r["before"], r["after"]) for r in action.replacements] == [
        ("project-fairchild.md", "project fairchild.md"), ("project-fairchild.md", "project%20fairchild.md")]


def test_an_owners_note_pointed_at_a_merges_survivor_keeps_its_angle_brackets(tmp_path: Path):
    """MEMORY.md's `## Pinned` note on the copy a merge archives stays, pointing at the survivor, in
    the spelling its author used: `(<alpha notes.md>)`, not `(<alpha%20notes.md>)`."""
    import os

    from helpers import apply_json, snapshot
    from test_claude_index_edits import AGENT, write
    from test_claude_index_notes import topic

    body = "Deploy alpha with make deploy."
    pinned = "- [Alpha copy](<alpha notes copy.md>) — ALWAYS read before touching prod, says Bob"
    md = (f"# Memory\n\n## Pinned\n{pinned}\n\n## Topics\n- [Alpha](<alpha notes.md>) — alpha deploy notes\n"
          "- [Alpha copy](<alpha notes copy.md>) — alpha deploy notes\n- [Gamma](gamma.md) — gamma things\n")
    folder = write(tmp_path / AGENT, {"alpha notes.md": topic("alpha", "alpha deploy", body),
                                      "alpha notes copy.md": topic("alpha copy", "alpha deploy", body),
                                      "gamma.md": topic("gamma", "gamma", "Gamma.", "user"), "MEMORY.md": md})
    os.utime(folder / "alpha notes.md", (1577836800, 1577836800))  # the older: the merge's survivor
    before = snapshot(tmp_path)
    plan = plan_json(tmp_path, "--model", "none")
    assert [a["kind"] for a in plan["actions"]] == ["merge_duplicate"]
    out = apply_json(tmp_path)
    assert not out["skipped"]
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == md.replace("(<alpha notes copy.md>) — ALWAYS", "(<alpha notes.md>) — ALWAYS").replace(
        "- [Alpha copy](<alpha notes copy.md>) — alpha deploy notes\n", "")
    assert run_cli("undo", str(tmp_path)).returncode == 0 and snapshot(tmp_path) == before


def test_the_index_links_a_file_named_with_a_hash_by_an_href_that_reads_back_as_it(tmp_path: Path):
    """One href writer (`href_of`) for the index and the relinks: the rebuild wrote `(issue#2.md)`,
    which reads as `issue` and an anchor, so its own check refused it, every run."""
    from helpers import snapshot

    folder = tmp_path / ".claude" / "memory"
    folder.mkdir(parents=True)
    (folder / "issue#2.md").write_text(_fm("issue 2", "Issue two.\n"), encoding="utf-8")
    (folder / "other.md").write_text(_fm("other", "Other.\n"), encoding="utf-8")
    (folder / "MEMORY.md").write_text("# Memory\n\n- [other](other.md) — other\n", encoding="utf-8")
    before = snapshot(tmp_path)
    res = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-11-29")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert [a["kind"] for a in out["applied"]] == ["rebuild_index"] and out["skipped"] == []
    assert "- [issue 2](issue%232.md)\n" in (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert run_cli("undo", str(tmp_path), "--run", out["run_id"]).returncode == 0 and snapshot(tmp_path) == before


# MEMORY.md and its sub-indexes: a reference link (`- [Alpha][a] — hook` with `[a]: alpha.md`) is an
# entry as an inline one is; a definition reaches its file. A run taking the file away removes its
# entry lines and strikes its other uses as it does inline links', and points its definition at the
# file holding its content while a kept line (an owner's note) links through it, else removes it.

REF_INDEX = ("# Memory\n\n## Pinned\n- [Alpha copy][ac] — ALWAYS read before touching prod, says Bob\n\n"
             "## Topics\n- [Alpha][a] — alpha deploy notes\n- [Alpha copy][ac] — alpha deploy notes\n- [Gamma][] — gamma things\n\n"
             "```\n[old]: old.md\n```\n\n[a]: alpha.md\n[ac]: <alpha_copy.md> \"the copy\"\n[gamma]: gamma.md\n")


def _ref_twins(root: Path, md: str) -> Path:
    """alpha.md and its copy alpha_copy.md (a merge archives the copy, alpha.md the older), gamma.md, and `md`."""
    import os

    from test_claude_index_edits import AGENT, write
    from test_claude_index_notes import topic

    body = "Deploy alpha with make deploy."
    folder = write(root / AGENT, {"alpha.md": topic("alpha", "alpha deploy", body), "alpha_copy.md": topic("alpha copy", "alpha deploy", body),
                                  "gamma.md": topic("gamma", "gamma", "Gamma.", "user"), "MEMORY.md": md})
    os.utime(folder / "alpha.md", (1577836800, 1577836800))
    return folder


def test_an_index_of_reference_links_lists_its_files_once():
    from pipeline.layouts.claude import memory_md

    found = memory_md.reach(REF_INDEX, ["alpha.md", "alpha_copy.md", "gamma.md", "old.md"], lambda name: None)
    # the pinned line, first, is the copy's entry (the other says something of its own: a note); code is no link
    assert found.entries == ["alpha_copy.md", "alpha.md", "gamma.md"] and found.inline == []
    assert set(found.reached) == {"alpha.md", "alpha_copy.md", "gamma.md"}
    assert memory_md.listing(found.entry_lines[1]) == ("Alpha", "alpha deploy notes")
    # a sub-index of reference links is an index (its definitions are its list's targets, not prose)
    sub = "# Ops\n\n- [Deploy][d] — how\n- [Rollback][r] — undo\n\n[d]: deploy.md\n[r]: rollback.md\n[site]: https://example.test\n"
    via = memory_md.reach("- [Ops](ops.md) — ops\n", ["ops.md", "deploy.md", "rollback.md"], {"ops.md": sub}.get)
    assert via.sub_indexes == ["ops.md"] and via.reached == {"ops.md": "MEMORY.md", "deploy.md": "sub-index ops.md",
                                                             "rollback.md": "sub-index ops.md"}


def test_a_merge_points_a_reference_definition_an_owners_note_uses_at_the_survivor(tmp_path: Path):
    from helpers import apply_json, snapshot

    folder = _ref_twins(tmp_path, REF_INDEX)
    before = snapshot(tmp_path)
    plan = plan_json(tmp_path, "--model", "none")
    [merge] = plan["actions"]  # no drift: nothing "not indexed"
    assert merge["kind"] == "merge_duplicate"
    assert ("1 reference definition of a file the index no longer lists pointed at the file now holding its content, a kept line "
            "linking through it: `[ac]: <alpha_copy.md> \"the copy\"` at line 16 under 'Topics', now to alpha.md") in merge["reason"]
    out = apply_json(tmp_path)
    assert not out["skipped"]
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == (
        REF_INDEX.replace("- [Alpha copy][ac] — alpha deploy notes\n", "").replace("[ac]: <alpha_copy.md>", "[ac]: <alpha.md>"))
    assert run_cli("undo", str(tmp_path)).returncode == 0 and snapshot(tmp_path) == before


def test_a_reference_definition_goes_when_no_kept_line_links_through_it(tmp_path: Path):
    from helpers import apply_json, snapshot

    md = REF_INDEX.replace("## Pinned\n- [Alpha copy][ac] — ALWAYS read before touching prod, says Bob\n\n", "")
    folder = _ref_twins(tmp_path, md)
    before = snapshot(tmp_path)
    [merge] = plan_json(tmp_path, "--model", "none")["actions"]
    assert ("1 reference definition of a file the index no longer lists removed, no kept line linking through it: "
            "`[ac]: <alpha_copy.md> \"the copy\"` at line 13 under 'Topics'") in merge["reason"]
    assert not apply_json(tmp_path)["skipped"]
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == (
        md.replace("- [Alpha copy][ac] — alpha deploy notes\n", "").replace("[ac]: <alpha_copy.md> \"the copy\"\n", ""))
    assert run_cli("undo", str(tmp_path)).returncode == 0 and snapshot(tmp_path) == before


def test_a_struck_index_strikes_a_gone_files_reference_uses_and_a_new_file_takes_its_entry():
    from pipeline.layouts.claude import memory_md

    text = "# Ops\n\n- [Old][o] — old runbook\n- [Keep](keep.md) — see also [the old one][o]\n\n[o]: old.md\n[k]: <keep me.md>\n"
    struck = memory_md.strike(text, {"old.md"}, {})
    assert struck.text == "# Ops\n\n- [Keep](keep.md) — see also ~~the old one~~\n\n[k]: <keep me.md>\n"
    replace = {"old.md": memory_md.IndexItem("runbook.md", "Runbook", "the runbook")}
    taken = memory_md.strike(text, {"old.md"}, {}, replace, {"old.md": "runbook.md"})
    assert taken.text == ("# Ops\n\n- [Runbook](runbook.md) — the runbook\n- [Keep](keep.md) — see also ~~the old one~~\n\n"
                          "[k]: <keep me.md>\n")


def test_a_rebuild_removes_a_reference_definition_of_a_file_that_is_not_there(tmp_path: Path):
    from helpers import snapshot

    from test_claude_index_edits import AGENT, write
    from test_claude_index_notes import topic

    md = "# Memory\n\n- [Gamma][g] — gamma things\n- [Gone][] — deleted\n\n[g]: gamma.md\n[gone]: gone.md\n"
    folder = write(tmp_path / AGENT, {"gamma.md": topic("gamma", "gamma", "Gamma.", "user"), "MEMORY.md": md})
    before = snapshot(tmp_path)
    [rebuild] = plan_json(tmp_path, "--model", "none")["actions"]
    assert rebuild["kind"] == "rebuild_index" and rebuild["reason"].startswith(f"1 entry without a file: {AGENT}/gone.md")
    res = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-11-29")
    assert res.returncode == 0 and json.loads(res.stdout)["skipped"] == []
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == "# Memory\n\n- [Gamma][g] — gamma things\n\n[g]: gamma.md\n"
    assert run_cli("undo", str(tmp_path), "--run", json.loads(res.stdout)["run_id"]).returncode == 0 and snapshot(tmp_path) == before
