"""Links and numbers a hostile or unusual memory folder writes: a file name that is not UTF-8, a
number too long to be one, a link in code, an angle-bracket href, a zero-padded or titled numbered
file. None may stop a plan, and each is read as the one link grammar (rules/link_names.py) says."""

from __future__ import annotations

from pathlib import Path

from helpers import plan_json, run_cli


def _store(tmp_path: Path, files: dict[bytes | str, str], index: str) -> Path:
    """A claude memory folder holding `files` (a name given as bytes need not be UTF-8) and `index` as MEMORY.md."""
    folder = tmp_path / ".claude" / "memory"
    folder.mkdir(parents=True)
    for name, text in files.items():
        path = bytes(folder) + b"/" + name if isinstance(name, bytes) else folder / name
        with open(path, "wb") as f:
            f.write(text.encode())
    (folder / "MEMORY.md").write_bytes(index.encode())
    return folder


def _fm(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: about {name}\ntype: project\n---\n\n{body}"


def _of_kind(plan: dict, kind: str) -> list[dict]:
    return [x for x in plan["actions"] + plan["findings"] if x["kind"] == kind]


def test_a_link_whose_only_namesake_has_a_name_that_is_not_utf8_is_reported_not_respelled(tmp_path: Path):
    """The respelling would write a name no text can hold (os keeps its bad byte as a lone surrogate):
    it crashed the plan (quote() of the surrogate). The link is reported as reaching nothing."""
    _store(tmp_path, {
        "a.md": _fm("a", "See [x](bad-name.md) and [[odd-name]].\n"),
        b"bad \xff name.md": _fm("bad name", "Bad.\n"),
        b"odd\xffname.md": _fm("odd one", "Odd.\n"),
    }, "# M\n\n- [A](a.md) — a\n")
    plan = plan_json(tmp_path, "--model", "none")
    assert _of_kind(plan, "update_ref") == []
    [finding] = [f for f in _of_kind(plan, "dangling_link") if f["targets"] == [".claude/memory/a.md"]]
    assert finding["reason"] == "2 links reach no file of its folder: [x](bad-name.md); [[odd-name]]"
    res = run_cli("run", str(tmp_path), "--model", "none", "--now", "2026-06-10")
    assert res.returncode == 0, res.stderr


def test_a_run_of_digits_too_long_for_a_number_is_text_in_an_index_and_a_link(tmp_path: Path):
    """A tree line `- <5000 digits>. Title` was int()ed past Python's 4300-digit limit: the plan died."""
    digits = "1" * 5000
    folder = _store(tmp_path, {"a.md": _fm("a", f"No number: [[{digits}-title]].\n")},
                    f"# M\n\n- [A](a.md) — a\n- {digits}. Title — hook\n")
    plan = plan_json(tmp_path, "--model", "none")
    assert not [a for a in plan["actions"] if a["kind"] == "rebuild_index"]  # the line is the author's text, kept
    [finding] = _of_kind(plan, "dangling_link")
    assert finding["reason"] == f"1 link reaches no file of its folder: [[{digits}-title]]"
    from pipeline.layouts.claude.memory_md import parse

    [line] = [p for p in parse((folder / "MEMORY.md").read_text()) if digits in p.text]
    assert line.number is None


def test_a_link_in_a_double_backtick_span_or_an_indented_block_is_code_not_a_link(tmp_path: Path):
    """Only the link outside code is respelled; undo gives the file back byte for byte. A list's
    item going on four spaces in is no code block: its link is one."""
    import json

    notes = _fm("notes", (
        "Syntax: ``[d](deploy-guide.md)`` and `[c](deploy-guide.md)`, ``[[deploy-guides]]``.\n\n"
        "    [i](deploy-guide.md) [[no-such-memory]]\n\n"
        "- steps\n\n    - nested: [n](deploy-guide.md)\n\nReal: [r](deploy-guide.md).\n"))
    folder = _store(tmp_path, {"deploy_guide.md": _fm("deploy guide", "Run make deploy.\n"), "notes.md": notes},
                    "# A\n\n- [Deploy guide](deploy_guide.md) — how\n- [Notes](notes.md) — notes\n")
    plan = plan_json(tmp_path, "--model", "none")
    [relink] = _of_kind(plan, "update_ref")
    body = notes.split("---\n", 2)[2]  # replacements are placed in the body (after the closing ---)
    assert [r["start"] for r in relink["replacements"]] == [
        body.index("deploy-guide.md", body.index("nested")), body.index("deploy-guide.md", body.index("Real"))]
    assert _of_kind(plan, "dangling_link") == []
    res = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-06-10", "--select", "update_ref")
    assert res.returncode == 0, res.stderr
    edited = notes.replace("[n](deploy-guide.md)", "[n](deploy_guide.md)").replace("[r](deploy-guide.md)", "[r](deploy_guide.md)")
    assert (folder / "notes.md").read_text() == edited
    assert run_cli("undo", str(tmp_path), "--run", json.loads(res.stdout)["run_id"]).returncode == 0
    assert (folder / "notes.md").read_bytes() == notes.encode()


def test_an_angle_bracket_href_is_a_link_to_the_index_and_to_the_link_rules(tmp_path: Path):
    """`[x](<my notes.md>)`, CommonMark's way to link a name with spaces: the index entry reaches its
    file (no second entry), the one whose file is gone is dropped, a memory's link is judged and respelled."""
    import json

    index = ("# Memory\n\n- [My notes](<my notes.md>) — how I like reviews\n- [Old](<old notes.md>) — deleted last month\n"
             "- [Alpha](alpha.md) — alpha\n")
    alpha = _fm("alpha", "See [n](<my notes.md>) and [d](<deploy guide.md>).\n")
    folder = _store(tmp_path, {"my notes.md": _fm("my notes", "Small PRs.\n"), "alpha.md": alpha,
                               "deploy_guide.md": _fm("deploy_guide", "Make deploy.\n")}, index)
    index += "- [deploy](deploy_guide.md) — how\n"
    (folder / "MEMORY.md").write_text(index)
    plan = plan_json(tmp_path, "--model", "none")
    [rebuild] = _of_kind(plan, "rebuild_index")
    assert rebuild["reason"] == "1 entry without a file: .claude/memory/old notes.md (“deleted last month”)" and "not indexed" not in rebuild["reason"]
    [relink] = _of_kind(plan, "update_ref")
    assert [(r["before"], r["after"]) for r in relink["replacements"]] == [("deploy guide.md", "deploy_guide.md")]
    res = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-06-10", "--select", "rebuild_index,update_ref")
    assert res.returncode == 0, res.stderr
    assert (folder / "MEMORY.md").read_text() == index.replace("- [Old](<old notes.md>) — deleted last month\n", "")
    assert (folder / "alpha.md").read_text() == alpha.replace("<deploy guide.md>", "<deploy_guide.md>")
    assert run_cli("undo", str(tmp_path), "--run", json.loads(res.stdout)["run_id"]).returncode == 0
    assert (folder / "MEMORY.md").read_bytes() == index.encode() and (folder / "alpha.md").read_bytes() == alpha.encode()


def test_a_tree_line_reaches_a_zero_padded_or_titled_numbered_file(tmp_path: Path):
    """`- 001. Setup Steps` stands for `001-setup.md`, `- 2. Deploy Steps` for `2. Deploy Steps.md`:
    no second entry for them, and `[[002-deploy-steps]]` (the tree title's slug) reaches file 2."""
    padded = _store(tmp_path / "padded", {
        "001-setup.md": _fm("setup", "Setup. Next: [[002-deploy-steps]].\n"), "002-deploy.md": _fm("deploy", "Deploy.\n"),
    }, "# Tree\n- 001. Setup Steps — how to set up\n- 002. Deploy Steps — how to deploy\n")
    titled = _store(tmp_path / "titled", {
        "1. Setup Steps.md": _fm("setup", "Setup. Next: [[2-deploy-steps]].\n"), "2. Deploy Steps.md": _fm("deploy", "Deploy.\n"),
    }, "# Tree\n- 1. Setup Steps — how to set up\n- 2. Deploy Steps — how to deploy\n")
    for root in (padded, titled):
        plan = plan_json(root.parent.parent, "--model", "none")
        assert _of_kind(plan, "rebuild_index") == [] and _of_kind(plan, "dangling_link") == [], root


def test_archiving_a_zero_padded_numbered_file_takes_its_tree_line_with_it(tmp_path: Path):
    """`- 003. Deploy Copy` stands for `003-deploy-copy.md`: when a merge archives that file, its tree
    line goes with it (the rebuild kept only lines whose number was written without zeros)."""
    folder = _store(tmp_path, {
        "001-setup.md": _fm("setup", "Setup.\n"),
        "002-deploy.md": _fm("deploy", "Deploy with make deploy, never by hand.\n"),
        "003-deploy-copy.md": _fm("deploy", "Deploy with make deploy, never by hand.\n"),
    }, "# Tree\n- 001. Setup — how to set up\n- 002. Deploy — how to deploy\n- 003. Deploy Copy — the same\n")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    [merge] = _of_kind(plan_json(tmp_path, "--model", "none"), "merge_duplicate")
    res = run_cli("apply", str(tmp_path), "--model", "none", "--now", "2026-06-10", "--yes")
    assert res.returncode == 0, res.stderr
    gone = next(t for t in merge["targets"] if t != merge["survivor"]).rsplit("/", 1)[-1]
    number = gone.split("-", 1)[0]
    index = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert f"- {number}." not in index and not (folder / gone).exists(), index
    assert index.count("\n- ") == 2, index  # the other two lines stay
    assert run_cli("undo", str(tmp_path)).returncode == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
