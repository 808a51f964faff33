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
    res = run_cli("apply", str(root), "--yes", "--json", "--model", "stub", "--now", NOW, "--max-retire", "1", "--select", "consolidate")
    assert res.returncode == 0, res.stderr
    plan = plan_json(root, "--model", "none")
    [new] = [p for p in (root / AGENT).glob("141-*.md")]
    meta = yaml.safe_load(new.read_text().split("---")[1])
    assert meta["metadata"]["type"] == "feedback"
    # MEMORY.md lists it; 140, which no entry listed before, waits for the rebuild (not selected)
    assert [a["reason"] for a in plan["actions"] if a["kind"] == "rebuild_index"] == [f"1 file not indexed: {AGENT}140-project_other_topic.md"]
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


def _namer(*memories: Memory, archived: dict[str, list[str]] | None = None):
    from pipeline.model import Corpus
    from pipeline.stages.consolidate.stage import Namer

    corpus = Corpus(layout="claude", root="/nowhere", memories=list(memories))
    if archived:
        corpus.extra["archived_names"] = archived
    return Namer(corpus)


def test_the_new_name_is_no_name_a_memory_that_stays_answers_to():
    r1, r2 = _mem("f/project-a-r1.md", "project-a-r1", "project"), _mem("f/project-a-r2.md", "project-a-r2", "project")
    named_alike = _mem("f/notes.md", "Project-A", "project")  # another file, the same name (links match it in any case)
    path, name = _namer(r1, r2, named_alike).claude("f", "A", convention_of([r1, r2]))
    assert (path, name) == ("f/project-a-2.md", "project-a-2")
    a, b = _mem("f/retry-policy-a.md", "retry-policy-a"), _mem("f/retry-policy-b.md", "retry-policy-b")
    numbered = _mem("f/12-retry-policy.md", "retry-policy")  # named by the rest of its numbered file name
    assert _namer(a, b, numbered).claude("f", "Retry policy", convention_of([a, b]))[1] == "retry-policy-2"


def test_numbers_keep_their_padding_and_skip_dates_and_archived_files():
    a, b = _mem("f/007-feedback_a.md", "feedback_a"), _mem("f/012-feedback_b.md", "feedback_b")
    assert _namer(a, b).claude("f", "c", convention_of([a, b]))[0] == "f/013-feedback_c.md"
    c, d = _mem("f/7-feedback_c.md", "feedback_c"), _mem("f/8-feedback_d.md", "feedback_d")
    standup = _mem("f/2026-01-05-standup.md", "Standup", "project")  # a date, not a file number
    assert next_number([m.key for m in (c, d, standup)], "f") == 9
    # an earlier run archived number 30: its undo would bring it back
    path, _ = _namer(c, d, archived={"f": ["30-feedback_old.md"]}).claude("f", "e", convention_of([c, d]))
    assert path == "f/31-feedback_e.md"


def test_the_reader_lists_the_names_earlier_runs_archived(tmp_path):
    from pipeline.layouts.claude.reader import archived_names

    folder = tmp_path / "memory"
    (folder / ".archive" / "20261101T000000Z-aaaa").mkdir(parents=True)
    (folder / ".archive" / "20261101T000000Z-aaaa" / "30-feedback_old.md").write_text("x")
    (folder / ".archive" / "20261101T000000Z-aaaa" / "REPORT.txt").write_text("x")
    assert archived_names(folder) == ["30-feedback_old.md"]
    assert archived_names(tmp_path / "nothing-here") == []


def test_a_title_named_file_takes_no_name_its_folder_already_answers_to():
    a, b = _mem("f/deploy_a.md", "Deploy step A"), _mem("f/deploy_b.md", "Deploy step B")  # Title Case: no convention
    named_so = _mem("f/deploy-notes.md", "Deploy notes")
    assert _namer(a, b, named_so).claude("f", "Deploy notes", convention_of([a, b])) == ("f/deploy_notes_2.md", "Deploy notes 2")
    elsewhere = _mem("g/deploy-notes.md", "Deploy notes")  # another folder: links there reach their own
    assert _namer(a, b, elsewhere).claude("f", "Deploy notes", convention_of([a, b])) == ("f/deploy_notes.md", "Deploy notes")


def test_an_unreadable_file_keeps_its_number():
    from pipeline.model import Corpus, Finding
    from pipeline.stages.consolidate.stage import Namer

    c, d = _mem("f/7-feedback_c.md", "feedback_c"), _mem("f/8-feedback_d.md", "feedback_d")
    corpus = Corpus(layout="claude", root="/nowhere", memories=[c, d],
                    findings=[Finding(kind="parse_error", targets=["f/9-feedback_binary.md"], reason="not UTF-8")])
    assert Namer(corpus).claude("f", "e", convention_of([c, d]))[0] == "f/10-feedback_e.md"


def test_one_archive_run_that_cannot_be_listed_costs_only_its_own_names(tmp_path, monkeypatch):
    import os

    from pipeline.layouts.claude import reader

    folder = tmp_path / "memory"
    for run, name in (("20261101T000000Z-aaaa", "30-feedback_old.md"), ("20261102T000000Z-bbbb", "31-feedback_older.md")):
        (folder / ".archive" / run).mkdir(parents=True)
        (folder / ".archive" / run / name).write_text("x")
    real = os.scandir

    def scandir(path):
        if str(path).endswith("bbbb"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(reader.os, "scandir", scandir)
    assert reader.archived_names(folder) == ["30-feedback_old.md"]


def test_members_named_in_title_case_still_give_a_file_spelled_as_theirs():
    """torsten-haskell-oracle: kebab-case files named in Title Case gave a snake_case file among them."""
    from pipeline.stages.consolidate.claude_names import file_separator

    kebab = [_mem("f/ext-ledger-state-snapshot-format.md", "ExtLedgerState Snapshot Format"),
             _mem("f/ledger-snapshot-cbor-format.md", "Ledger snapshot CBOR format")]
    assert convention_of(kebab) is None and file_separator(kebab) == "-"
    assert _namer(*kebab).claude("f", "Ledger snapshot format", None, file_separator(kebab)) == (
        "f/ledger-snapshot-format.md", "Ledger snapshot format")
    snake = [_mem("f/deploy_a.md", "Deploy step A"), _mem("f/7-deploy_b.md", "Deploy step B")]
    assert file_separator(snake) == "_" and file_separator([_mem("f/a.md", "A")]) == "_"  # Claude Code's own default
    real = plan_json(WILD / "torsten-haskell-oracle", "--model", "stub")
    out = _output(real)["path"]
    assert out.rsplit("/", 1)[-1] == out.rsplit("/", 1)[-1].replace("_", "-")
