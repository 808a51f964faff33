"""Links a plan leaves dangling: `[[name]]` wiki links to a memory the plan merges, consolidates or
archives are reported in a `dangling_link` finding, with where they could point instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import REAL_STORES, WILD, mem, plan_json

from pipeline.actions import ConsolidateAction, MergeDuplicateAction
from pipeline.model import Action, Corpus
from pipeline.rules.dangling_links import dangling_links

FOLDER = ".claude/memory/"


def _claude(key: str, body: str, name: str = "") -> object:
    return mem(FOLDER + key, body, layout="claude", title=name)


def _corpus(*memories) -> Corpus:
    return Corpus(layout="claude", root="/nowhere", memories=list(memories))


def _dangling(corpus: Corpus, actions: list[Action]) -> list[dict]:
    return [f.model_dump(mode="json") for f in dangling_links(corpus, actions)]


def _with_tree_titles(corpus: Corpus, titles: dict[str, list[str]]) -> Corpus:
    """The corpus with the titles its tree indexes give numbered files, as the claude reader reads them."""
    corpus.extra["tree_titles"] = titles
    return corpus


def test_links_to_a_merged_duplicate_point_at_its_survivor():
    corpus = _corpus(
        _claude("build_tip.md", "Warm the cache first.", name="build-tip"),
        _claude("build_tip_copy.md", "Warm the cache first.", name="build-tip-copy"),
        _claude("release.md", "Before a release see [[build-tip-copy]] and [[Build_Tip_Copy|the tip]].", name="release"),
        _claude("other.md", "Unrelated: [[release]] stays, [[nothing-here]] was never a memory."),
    )
    merge = MergeDuplicateAction(targets=[FOLDER + "build_tip.md", FOLDER + "build_tip_copy.md"], survivor=FOLDER + "build_tip.md", reason="r")
    [finding] = _dangling(corpus, [merge])
    assert finding["kind"] == "dangling_link"
    assert finding["targets"] == [FOLDER + "build_tip_copy.md", FOLDER + "release.md"]
    assert "[[build-tip-copy]]" in finding["reason"] and "linked from 1 file: .claude/memory/release.md" in finding["reason"]
    assert f"could point at [[build-tip]] ({FOLDER}build_tip.md)" in finding["reason"]


def test_a_link_by_file_name_counts_and_an_archive_has_no_successor():
    corpus = _corpus(
        _claude("old_api.md", "The v1 endpoint.", name="Old API"),
        _claude("guide.md", "See [[old_api]] for the endpoint list."),
    )
    [finding] = _dangling(corpus, [Action(kind="archive", targets=[FOLDER + "old_api.md"], reason="r")])
    assert finding["targets"] == [FOLDER + "guide.md", FOLDER + "old_api.md"]
    assert "could point at" not in finding["reason"]


def test_links_between_members_of_a_consolidation_are_reported_in_the_new_file():
    corpus = _corpus(
        _claude("review-r1.md", "Round one findings.", name="review-r1"),
        _claude("review-r2.md", "Round two: all of [[review-r1]] fixed.", name="review-r2"),
        _claude("index-notes.md", "Latest round: [[review-r2]]."),
    )
    new_file = FOLDER + "review.md"
    consolidate = ConsolidateAction(
        targets=[FOLDER + "review-r1.md", FOLDER + "review-r2.md"], reason="r",
        outputs=[{"path": new_file, "frontmatter": {"name": "Review"}, "body": "Round one findings.\n\nRound two: all of [[review-r1]] fixed.", "size": 3}],
    )
    r1, r2 = _dangling(corpus, [consolidate])  # by the memory taken away
    assert "[[review-r1]]" in r1["reason"] and "[[review-r2]]" in r2["reason"]
    assert r1["targets"] == [FOLDER + "review-r1.md", new_file]
    assert "which takes in its text, links it too" in r1["reason"] and "linked from" not in r1["reason"]
    assert r2["targets"] == [FOLDER + "index-notes.md", FOLDER + "review-r2.md"]
    assert "could point at [[Review]] (.claude/memory/review.md)" in r2["reason"]


def test_nothing_is_reported_without_a_retirement_or_a_link_to_one():
    corpus = _corpus(_claude("a.md", "See [[b]].", name="a"), _claude("b.md", "Body.", name="b"), _claude("c.md", "Plain.", name="c"))
    assert _dangling(corpus, []) == []
    assert _dangling(corpus, [Action(kind="archive", targets=[FOLDER + "c.md"], reason="r")]) == []
    # an entry kept inside MEMORY.md is no file: its place does not answer a link
    kept_inside = mem(FOLDER + "MEMORY.md#notes/3", "Kept inside the index.", layout="claude")
    linking = _claude("d.md", "Numbers: [[3]] and [[9, hash_32bytes]].", name="d")
    assert _dangling(_corpus(kept_inside, linking), [Action(kind="archive", targets=[kept_inside.key], reason="r")]) == []
    # a retired memory linking another retired one: its own links go with it
    assert _dangling(corpus, [Action(kind="archive", targets=[FOLDER + "a.md", FOLDER + "b.md"], reason="r")]) == []


def test_a_real_store_consolidation_reports_every_file_linking_its_members():
    """webeverything links memories by front-matter name; the stub consolidates two of them."""
    store = WILD / "webeverything"
    plan = plan_json(store, "--model", "stub")
    [consolidate] = [a for a in plan["actions"] if a["kind"] == "consolidate"]
    folder = store / "agent-memory-src"
    for member in consolidate["targets"]:
        name = re.search(r"^name: (\S+)$", (store / member).read_text(encoding="utf-8"), re.M).group(1)
        linking = sorted(
            f"agent-memory-src/{p.name}" for p in folder.glob("*.md")
            if f"[[{name}]]" in p.read_text(encoding="utf-8") and f"agent-memory-src/{p.name}" not in consolidate["targets"]
        )
        assert linking, f"the store links {name}"  # what makes this case worth checking
        [finding] = [f for f in plan["findings"] if f["kind"] == "dangling_link" and f"[[{name}]]" in f["reason"]]
        assert set(linking) <= set(finding["targets"]) and member in finding["targets"]
        assert f"linked from {len(linking)} files" in finding["reason"]


def test_the_fixture_stores_have_no_dangling_links(tmp_path: Path):
    from helpers import FIXTURES, copy_store

    for layout in ("bank", "claude", "crux", "zylos"):
        plan = plan_json(copy_store(FIXTURES / layout, tmp_path / layout), "--model", "stub")
        assert [f for f in plan["findings"] if f["kind"] == "dangling_link"] == []


@pytest.mark.parametrize("link", ["First read [[tip-copy]].\n", "First read [the tip][tip].\n\n[tip]: tip_copy.md\n"],
                         ids=["wiki", "reference definition"])
def test_an_apply_says_in_its_report_which_links_it_left_dangling(tmp_path: Path, link: str):
    """A nightly run has no one reading its plan: the links it leaves dangling are in its notes and
    its run report (a reference-style link's definition too)."""
    import json

    from helpers import run_cli

    folder = tmp_path / ".claude" / "memory"
    folder.mkdir(parents=True)
    body = "---\nname: {name}\ndescription: build tip\ntype: feedback\n---\n\nWarm the build cache before the release build.\n"
    (folder / "tip.md").write_text(body.format(name="tip"))
    (folder / "tip_copy.md").write_text(body.format(name="tip-copy"))
    (folder / "release.md").write_text("---\nname: release\ndescription: release steps\ntype: project\n---\n\n" + link)
    (folder / "MEMORY.md").write_text("# Memory\n\n- [tip](tip.md) — tip\n- [tip copy](tip_copy.md) — tip\n- [release](release.md) — steps\n")
    res = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-11-29")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert [a["kind"] for a in out["applied"]] == ["merge_duplicate"]
    [note] = [n for n in out["notes"] if "[[tip-copy]]" in n]
    assert "linked from 1 file: .claude/memory/release.md" in note and "could point at [[tip]] (.claude/memory/tip.md)" in note
    report = (tmp_path / ".memconsolidate" / "reports" / f"{out['run_id']}.md").read_text(encoding="utf-8")
    assert note in report


def test_links_to_a_consolidated_member_are_proposed_to_point_at_what_holds_it_now():
    from pipeline.rules.dangling_links import relinks

    holder = mem(FOLDER + "141-feedback_plans.md", "Both plans.", layout="claude", title="feedback_plans",
                 meta={"consolidated_from": ["117-feedback_self_contained.md", "131-feedback_executor.md"]})
    linking = _claude("notes.md", "See [[feedback_self_contained]], [[Feedback_Executor|the executor note]] and [[notes]].")
    still_there = _claude("131-feedback_executor.md", "Not archived yet.", name="feedback_executor")
    [action] = relinks(_corpus(holder, linking)).actions
    assert action.kind == "update_ref" and action.targets == [FOLDER + "notes.md"] and action.needs_user
    assert [(r["before"], r["after"]) for r in action.replacements] == [
        ("feedback_self_contained", "feedback_plans"), ("Feedback_Executor", "feedback_plans")]
    body = linking.body
    assert all(body[r["start"]:r["end"]] == r["before"] for r in action.replacements)
    # a name a memory still has is no dangling link; the holder's own links to its members stay
    [action] = relinks(_corpus(holder, linking, still_there)).actions
    assert [r["before"] for r in action.replacements] == ["feedback_self_contained"]
    assert relinks(_corpus(holder.model_copy(update={"body": "Was [[feedback_self_contained]]."}))).actions == []


def test_after_a_consolidation_the_next_plan_relinks_and_undo_gives_the_link_back(tmp_path: Path):
    import json

    from helpers import run_cli
    from test_claude_consolidate_names import AGENT, _numbered_store

    root = _numbered_store(tmp_path / "repo")
    linking = root / AGENT / "150-feedback_review_checklist.md"
    original = ("---\nname: feedback_review_checklist\ndescription: what a review checks\nmetadata:\n  type: feedback\n---\n\n"
                "Before review, reread [[feedback_self_contained_plans]].\n")
    linking.write_text(original)
    first = run_cli("plan", str(root), "--json", "--model", "stub", "--now", "2026-11-29", "--max-retire", "1")
    [finding] = [f for f in json.loads(first.stdout)["findings"] if f["kind"] == "dangling_link"]
    assert "the next plan proposes that edit" in finding["reason"]
    res = run_cli("apply", str(root), "--yes", "--json", "--model", "stub", "--now", "2026-11-29", "--max-retire", "1", "--select", "consolidate")
    assert "consolidate" in [a["kind"] for a in json.loads(res.stdout)["applied"]]
    plan = json.loads(run_cli("plan", str(root), "--json", "--model", "none", "--now", "2026-11-29").stdout)
    [relink] = [a for a in plan["actions"] if a["kind"] == "update_ref"]
    [new_file] = [p for p in (root / AGENT).glob("151-*.md")]
    new_name = new_file.stem.split("-", 1)[1]
    assert relink["targets"] == [f"{AGENT}150-feedback_review_checklist.md"] and relink["needs_user"]
    res = run_cli("apply", str(root), "--yes", "--json", "--model", "none", "--now", "2026-11-29", "--select", "update_ref")
    assert res.returncode == 0, res.stderr
    assert linking.read_text() == original.replace("[[feedback_self_contained_plans]]", f"[[{new_name}]]")
    run = json.loads(res.stdout)["run_id"]
    assert run_cli("undo", str(root), "--run", run).returncode == 0
    assert linking.read_text() == original


def test_a_name_still_answered_by_a_memory_that_stays_or_from_another_folder_is_no_dangling_link():
    def project(key: str, name: str, body: str = "x"):
        return mem(key, body, layout="claude", title=name)

    # two duplicates named alike: the survivor still answers [[retry]]
    same_name = _corpus(project("f/a.md", "retry"), project("f/b.md", "retry"), project("f/c.md", "c", "see [[retry]]"))
    merge = MergeDuplicateAction(targets=["f/a.md", "f/b.md"], survivor="f/a.md", reason="r")
    assert _dangling(same_name, [merge]) == []
    # each folder is a store of its own: [[overview]] in g/ is g's overview
    folders = _corpus(project("f/overview.md", "overview"), project("g/overview.md", "overview"), project("g/user.md", "u", "see [[overview]]"))
    assert _dangling(folders, [Action(kind="prune_stale", targets=["f/overview.md"], reason="r")]) == []
    # a merge's protected member stays beside the survivor
    kept = _corpus(project("f/a.md", "a"), project("f/b.md", "b"), project("f/k.md", "k"), project("f/c.md", "c", "see [[k]]"))
    protected = MergeDuplicateAction(targets=["f/a.md", "f/b.md", "f/k.md"], survivor="f/a.md", kept=["f/k.md"], reason="r")
    assert _dangling(kept, [protected]) == []


def test_an_entry_kept_inside_memory_md_links_within_its_folder():
    entry = mem(FOLDER + "MEMORY.md#api/1", "Use [[old_api]] for the v1 endpoints.", layout="claude")
    gone = _claude("old_api.md", "The v1 endpoint.", name="Old API")
    [finding] = _dangling(_corpus(entry, gone), [Action(kind="archive", targets=[gone.key], reason="r")])
    assert finding["targets"] == [FOLDER + "MEMORY.md#api/1", FOLDER + "old_api.md"]


def test_no_relink_is_proposed_for_an_entry_kept_inside_memory_md():
    from pipeline.rules.dangling_links import relinks

    holder = mem(FOLDER + "plans.md", "Both plans.", layout="claude", title="plans", meta={"consolidated_from": ["old_plan.md"]})
    entry = mem(FOLDER + "MEMORY.md#notes/1", "See [[old_plan]].", layout="claude")
    linking = _claude("notes.md", "See [[old_plan]].")
    assert [a.targets for a in relinks(_corpus(holder, entry, linking)).actions] == [[FOLDER + "notes.md"]]


# Links that dangle before any plan: reported, and mended (by the user's leave) where one memory of
# the folder has the same name spelled otherwise.


def test_a_link_spelled_otherwise_than_the_one_memory_of_that_name_is_proposed_respelled():
    from pipeline.rules.dangling_links import relinks

    target = _claude("project_fairchild.md", "The board.", name="project_fairchild")
    linking = _claude("quirk.md", "Export quirk, see [[project-fairchild]] and [[Project Fairchild|the board]].", name="quirk")
    out = relinks(_corpus(target, linking))
    [action] = out.actions
    assert action.targets == [FOLDER + "quirk.md"] and action.needs_user
    assert [(r["before"], r["after"]) for r in action.replacements] == [
        ("project-fairchild", "project_fairchild"), ("Project Fairchild", "project_fairchild")]
    assert "(the same words)" in action.reason and out.findings == []
    # type words, stopwords and the file's number are not what tells two names apart
    numbered = _claude("39-feedback_never_take_unprepared_decision.md", "Prepare first.")
    asking = _claude("dont_hedge.md", "Builds on [[never-take-an-unprepared-decision]].")
    [action] = relinks(_corpus(numbered, asking)).actions
    assert [r["after"] for r in action.replacements] == ["feedback_never_take_unprepared_decision"]


def test_a_link_no_single_memory_answers_is_reported_once_per_folder_not_guessed():
    from pipeline.rules.dangling_links import relinks

    twins = [_claude("retry_policy.md", "A."), _claude("retry-policy-v2.md", "B.", name="retry policy")]
    linking = _claude("notes.md", "See [[retry-policy]], [[never-written]] and [[old_plan]].")
    corpus = _corpus(*twins, linking)
    corpus.extra["archived_names"] = {".claude/memory": ["old_plan.md"]}
    out = relinks(corpus)
    assert out.actions == []  # two memories spell "retry policy": which one is the user's to say
    [finding] = out.findings
    assert finding.kind == "dangling_link" and finding.targets == [FOLDER + "notes.md"]
    assert finding.reason == ("3 links reach no file of its folder: [[retry-policy]]; [[never-written]]; "
                              "[[old_plan]] (archived by an earlier run)")


def test_code_is_no_link_and_a_numbered_file_answers_its_number():
    from pipeline.rules.dangling_links import relinks

    numbered = _claude("106-feedback_backlog_is_tracker.md", "The backlog is the tracker.")
    body = ("Run `[[ -f x ]]` first; the CBOR is `[[9, hash]]`.\n\n```bash\n[[ -d build ]] && make\n```\n\n"
            "See [[106]] and [[106. Backlog Is The Tracker]].\n")
    linking = _claude("drain.md", body)
    corpus = _with_tree_titles(_corpus(numbered, linking), {numbered.key: ["Backlog Is The Tracker"]})
    assert relinks(corpus) == relinks(_corpus())
    # and a plan that archives the numbered file says those links dangle
    [finding] = _dangling(corpus, [Action(kind="archive", targets=[numbered.key], reason="r")])
    assert finding["targets"] == [FOLDER + "106-feedback_backlog_is_tracker.md", FOLDER + "drain.md"]


def test_a_respelled_link_applies_as_link_text_only_and_undo_gives_it_back(tmp_path: Path):
    import json

    from helpers import run_cli

    folder = tmp_path / ".claude" / "memory"
    folder.mkdir(parents=True)
    (folder / "project_fairchild.md").write_text("---\nname: project_fairchild\ndescription: the board\ntype: project\n---\n\nKiCad board.\n")
    original = "---\nname: kicad_quirk\ndescription: export quirk\ntype: project\n---\n\nThe export drops a layer; see [[project-fairchild]].\r\n"
    (folder / "kicad_quirk.md").write_bytes(original.encode())
    (folder / "MEMORY.md").write_text("# Memory\n\n- [board](project_fairchild.md) — board\n- [quirk](kicad_quirk.md) — quirk\n")
    plan = plan_json(tmp_path, "--model", "none")
    [relink] = [a for a in plan["actions"] if a["kind"] == "update_ref"]
    assert relink["needs_user"] and "[[project-fairchild]] -> [[project_fairchild]]" in relink["reason"]
    bare = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-11-29")
    assert json.loads(bare.stdout)["applied"] == []  # never without the user
    res = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-11-29", "--select", "update_ref")
    assert res.returncode == 0, res.stderr
    assert (folder / "kicad_quirk.md").read_bytes() == original.replace("[[project-fairchild]]", "[[project_fairchild]]").encode()
    assert [a for a in plan_json(tmp_path, "--model", "none")["actions"] if a["kind"] == "update_ref"] == []
    assert run_cli("undo", str(tmp_path), "--run", json.loads(res.stdout)["run_id"]).returncode == 0
    assert (folder / "kicad_quirk.md").read_bytes() == original.encode()


def test_the_real_folders_links_that_dangle_are_reported_or_mended():
    """fairchild links [[project-fairchild]] where the file is project_fairchild.md; siglens-review
    links three memories no file of its folder holds."""
    fairchild = plan_json(WILD / "fairchild", "--model", "none")
    [relink] = [a for a in fairchild["actions"] if a["kind"] == "update_ref"]
    assert [(r["before"], r["after"]) for r in relink["replacements"]] == [("project-fairchild", "project_fairchild")]
    review = plan_json(WILD / "siglens-review", "--model", "none")
    found = [f for f in review["findings"] if f["kind"] == "dangling_link"]  # one per memory holding such links
    assert len(found) == 3 and all(f["reason"].startswith("1 link reaches no file of its folder: [[") for f in found)
    assert any("[[feedback_verify_review_bot_claims]]" in f["reason"] for f in found)
    # a [[Heading]] naming a section of the folder's MEMORY.md reaches it (orchestkit)
    ork = plan_json(REAL_STORES / "orchestkit", "--model", "none")
    assert not [f for f in ork["findings"] if f["kind"] == "dangling_link" and "split-bundles.test.ts Pattern" in f["reason"]]


# What a respelling never does (a review's cases): send a link to another memory whose name differs
# by a number, a negation or an order word, or by its type word; send a link to a memory archived
# by an earlier run, or one the reader could not read, to a namesake.


def _folder_with(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    folder = tmp_path / ".claude" / "memory"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    (folder / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"- [{n}]({n}) — x\n" for n in files))
    return folder


def _fm(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: about {name}\ntype: project\n---\n\n{body}"


def _relinks_of(root: Path) -> tuple[list[dict], list[dict]]:
    plan = plan_json(root, "--model", "none")
    return ([a for a in plan["actions"] if a["kind"] == "update_ref"],
            [f for f in plan["findings"] if f["kind"] == "dangling_link"])


def test_a_respelled_link_keeps_every_other_character_crlf_bom_emoji_alias_and_heading(tmp_path: Path):
    import json

    from helpers import run_cli

    body = ("Ünïcödé 🚀🚀 line\r\nSee [[project-fairchild|the board]] and [[ project-fairchild#Layers ]].\r\n"
            "`[[project-fairchild]]` is code.\r\nAgain [[Project Fairchild]] 😀.\r\n")
    original = "\ufeff" + _fm("kicad_quirk", body).replace("\n", "\r\n").replace("\r\r\n", "\r\n")
    folder = _folder_with(tmp_path, {"project_fairchild.md": _fm("project_fairchild", "KiCad board.\n"),
                                     "kicad_quirk.md": original.encode("utf-8")})
    res = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-11-29", "--select", "update_ref")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["skipped"] == []
    want = (original.replace("[[project-fairchild|", "[[project_fairchild|").replace("[[ project-fairchild#", "[[project_fairchild#")
            .replace("Again [[Project Fairchild]]", "Again [[project_fairchild]]"))
    assert (folder / "kicad_quirk.md").read_bytes().decode("utf-8") == want


def test_numbers_negations_and_order_words_tell_names_apart(tmp_path: Path):
    _folder_with(tmp_path, {"phase-1-rollout.md": _fm("phase-1-rollout", "Phase one.\n"),
                            "feedback_mock_the_database.md": _fm("feedback_mock_the_database", "Mock it in unit tests.\n"),
                            "lint_before_commit.md": _fm("lint_before_commit", "Run lint before commit.\n"),
                            "notes.md": _fm("notes", "Next: [[phase-2-rollout]]; [[do-not-mock-the-database]]; [[lint-after-commit]].\n")})
    actions, [finding] = _relinks_of(tmp_path)
    assert actions == [] and finding["reason"].startswith("3 links reach no file of its folder: ")


def test_a_type_word_tells_names_apart_and_an_unread_or_archived_file_is_no_namesake(tmp_path: Path):
    from pipeline.rules.dangling_links import relinks

    # project_deploy.md cannot be read: it still answers [[project_deploy]], and [[project-deploy]]
    # is not sent to feedback_deploy.md, another memory
    _folder_with(tmp_path, {"feedback_deploy.md": _fm("feedback_deploy", "Deploy feedback.\n"),
                            "project_deploy.md": b"---\nname: project_deploy\n---\n\n\xff\xfe bad bytes\n",
                            "notes.md": _fm("notes", "See [[project-deploy]] and [[project-feedback-deploy]].\n")})
    actions, _ = _relinks_of(tmp_path)
    assert actions == []
    other = _claude("feedback_deploy.md", "Deploy feedback.", name="feedback_deploy")
    linking = _claude("notes.md", "See [[project_deploy]] and [[deploy]].", name="notes")
    corpus = _corpus(other, linking)
    corpus.extra["archived_names"] = {".claude/memory": ["project_deploy.md"]}
    out = relinks(corpus)
    # [[deploy]] has no type word: it may mean feedback_deploy, and so may the archived project_deploy
    assert out.actions == [] and "[[project_deploy]] (archived by an earlier run)" in out.findings[0].reason


def test_a_link_inside_memory_md_is_reported_with_what_it_could_point_at():
    from pipeline.model import Memory
    from pipeline.rules.dangling_links import relinks

    target = _claude("project_fairchild.md", "The board.", name="project_fairchild")
    entry = Memory(key=FOLDER + "MEMORY.md#notes/1", layout="claude", title="n", body="See [[project-fairchild]].")
    out = relinks(_corpus(target, entry))
    assert out.actions == []  # MEMORY.md's entries are not edited in place
    [finding] = out.findings
    assert finding.targets == [FOLDER + "MEMORY.md#notes/1"]
    assert finding.reason.endswith("[[project-fairchild]] (could point at [[project_fairchild]]: the same words)")


def test_a_name_a_link_cannot_hold_is_linked_by_its_file_name_and_a_name_like_a_number_reference_answers():
    from pipeline.rules.dangling_links import relinks
    from pipeline.rules.link_names import link_targets

    target = _claude("fairchild_board.md", "The board.", name="Fairchild #2 board")
    linking = _claude("notes.md", "See [[fairchild-2-board]].", name="notes")
    [action] = relinks(_corpus(target, linking)).actions
    assert [r["after"] for r in action.replacements] == ["fairchild_board"]
    assert list(link_targets("See [[fairchild_board]].")) == ["fairchild_board"]
    named_so = _claude("setup.md", "Setup.", name="3. Setup")
    assert relinks(_corpus(named_so, _claude("n.md", "See [[3. Setup]].", name="n"))).findings == []


def test_a_markdown_link_to_what_the_plan_takes_away_is_reported_too():
    """A red-team's case: a memory listing `[Team lunch copy](team_lunch_copy.md) — NEVER book less
    than 12 seats`; a merge retired team_lunch_copy.md and nothing said the link would dangle. Links
    to URLs, other folders or inside code are not the folder's files."""
    corpus = _corpus(
        _claude("team_lunch.md", "Fridays at noon.", name="team_lunch"),
        _claude("team_lunch_copy.md", "Fridays at noon.", name="team_lunch_copy"),
        _claude("summary.md", "- [Team lunch copy](team_lunch_copy.md#when) — NEVER book less than 12 seats\n"
                "- [elsewhere](../other/team_lunch_copy.md), [web](https://x.test/team_lunch_copy.md), `[c](team_lunch_copy.md)`\n",
                name="summary"),
    )
    merge = MergeDuplicateAction(targets=[FOLDER + "team_lunch.md", FOLDER + "team_lunch_copy.md"], survivor=FOLDER + "team_lunch.md", reason="r")
    [finding] = _dangling(corpus, [merge])
    assert finding["targets"] == [FOLDER + "summary.md", FOLDER + "team_lunch_copy.md"]
    assert "could point at [[team_lunch]]" in finding["reason"]
    from pipeline.rules.link_names import linked_files

    text = "[a](x.md) [b](./y.md#h) [c](../z.md) [d](https://w.md) `[e](v.md)` [f](u.txt) [g](../../../out.md)"
    assert list(linked_files("f/g", text)) == ["f/g/x.md", "f/g/y.md", "f/z.md"]


# Markdown links that dangle before any plan get what `[[links]]` get: a finding, or a respelling
# the user approves where one file of the folder is meant. Not judged: URLs, anchors, images, code,
# paths out of the store or into a folder the reader did not list (a repository's docs).


def _agent_folders(root: Path, folders: dict[str, dict[str, str]]) -> None:
    for agent, files in folders.items():
        folder = root / ".claude" / "agent-memory" / agent
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        (folder / "MEMORY.md").write_text("# Memory\n\n" + "".join(f"- [{n}]({n}) — x\n" for n in files), encoding="utf-8")


def test_a_markdown_link_that_already_dangles_is_reported_or_respelled_and_undo_gives_it_back(tmp_path: Path):
    import json

    from helpers import run_cli

    notes = _fm("notes", (
        "The board: [board](project-fairchild.md#layers) and [ok](project_fairchild.md).\r\n"
        "Gone: [draft](never_written.md). Other agent: [deploy](../ops/feedback-deploy.md), [runbook](../ops/runbook_v2.md).\r\n"
        "Not ours: [web](https://example.test/x.md) [mail](mailto:me@example.test) [top](#top) ![diagram](diagram.md)\r\n"
        "`[code](in_code.md)` [spec](../../../docs/spec.md) [escape](../../../../../outside.md) [txt](notes.txt)\r\n"))
    _agent_folders(tmp_path, {
        "writer": {"project_fairchild.md": _fm("project_fairchild", "KiCad board.\n"), "notes.md": notes},
        "ops": {"feedback_deploy.md": _fm("feedback_deploy", "Deploy on Fridays.\n")},
    })
    actions, findings = _relinks_of(tmp_path)
    [relink] = actions
    assert relink["targets"] == [".claude/agent-memory/writer/notes.md"] and relink["needs_user"]
    assert [(r["before"], r["after"]) for r in relink["replacements"]] == [
        ("project-fairchild.md", "project_fairchild.md"), ("feedback-deploy.md", "feedback_deploy.md")]
    assert "[board](project-fairchild.md#layers) -> project_fairchild.md (the same words)" in relink["reason"]
    [finding] = findings
    assert finding["targets"] == [".claude/agent-memory/writer/notes.md"]
    assert finding["reason"] == "2 links reach no file of its folder: [draft](never_written.md); [runbook](../ops/runbook_v2.md)"
    res = run_cli("apply", str(tmp_path), "--yes", "--json", "--model", "none", "--now", "2026-11-29", "--select", "update_ref")
    assert res.returncode == 0, res.stderr
    path = tmp_path / ".claude" / "agent-memory" / "writer" / "notes.md"
    assert path.read_bytes() == (notes.replace("](project-fairchild.md#", "](project_fairchild.md#")
                                 .replace("../ops/feedback-deploy.md", "../ops/feedback_deploy.md").encode())
    assert run_cli("undo", str(tmp_path), "--run", json.loads(res.stdout)["run_id"]).returncode == 0
    assert path.read_bytes() == notes.encode()


def test_a_markdown_link_to_an_archived_or_consolidated_file_and_an_index_entry():
    from pipeline.model import Memory
    from pipeline.rules.dangling_links import relinks

    holder = mem(FOLDER + "plans.md", "Both plans.", layout="claude", title="plans", meta={"consolidated_from": ["old plan.md"]})
    linking = _claude("notes.md", "See [a](old%20plan.md), [b](retired.md) and [c](Plans.md).", name="notes")
    entry = Memory(key=FOLDER + "MEMORY.md#notes/1", layout="claude", title="n", body="- [lost](lost.md) — an index entry")
    corpus = _corpus(holder, linking, entry)
    corpus.indexes = {FOLDER + "MEMORY.md": [holder.key, linking.key]}
    corpus.extra["archived_names"] = {".claude/memory": ["retired.md"]}
    out = relinks(corpus)
    [action] = out.actions  # the name as the href spells it, percent-encoded; a file's name matched casefolded
    assert [(r["before"], r["after"]) for r in action.replacements] == [("old%20plan.md", "plans.md")]
    # an index entry without a file is index drift's (rebuild_index), not a link to report twice
    [finding] = out.findings
    assert finding.targets == [linking.key] and finding.reason.endswith("[b](retired.md) (archived by an earlier run)")


def test_a_markdown_link_names_a_file_of_the_store_or_nothing():
    from pipeline.rules.link_names import store_file

    assert store_file("a/b", "x.md#h") == "a/b/x.md" and store_file("a/b", "./x%20y.md") == "a/b/x y.md"
    assert store_file("a/b", "../c/x.md") == "a/c/x.md" and store_file(".", "x.md") == "x.md"
    for href in ("../../../x.md", "../x.md/../../../y.md", "/etc/x.md", "https://h/x.md", "mailto:x.md", "#x", "x.png", "..\\x.md"):
        assert store_file("a/b" if href != "../x.md/../../../y.md" else "a", href) is None, href


# A tree index numbers its leaves (`- 104. Edit-Work Runs In A Lane Clone`): a link spelling that
# numbered title as a slug (`[[104-edit-work-runs-in-a-lane-clone]]`) means leaf 104, whatever its
# file is called (webeverything's `104-feedback_commit_to_default_branch_ok.md`). Only a name file 104
# goes by does: `[[104-anything-else]]` is no link to it.


def test_a_link_by_a_numbered_titles_slug_answers_that_number(tmp_path: Path):
    folder = _folder_with(tmp_path, {
        "104-feedback_commit_to_default_branch_ok.md": _fm("feedback_commit_to_default_branch_ok", "Edits land via a lane clone.\n"),
        "105. Claim ignores git state.md": _fm("claim", "Ownership is the status, not the tree.\n"),
        "2024-05-30-standup.md": _fm("standup", "Standup notes.\n"),
        "drain.md": _fm("drain", "Lanes: [[104-edit-work-runs-in-a-lane-clone]], [[105-claim-ignores-git-state]], [[105]].\n"
                                 "Dates are no numbers: [[2024-06-01-standup]]; nor is a number alone a slug: [[106-x]].\n"),
    })
    (folder / "MEMORY.md").write_text("# Memory\n\n- 104. Edit-Work Runs In A Lane Clone — lanes\n- [standup](2024-05-30-standup.md)\n"
                                      "- [claim](105.%20Claim%20ignores%20git%20state.md)\n- [drain](drain.md)\n")
    _, [finding] = _relinks_of(tmp_path)
    assert finding["reason"] == "2 links reach no file of its folder: [[2024-06-01-standup]]; [[106-x]]"
    # and a plan taking leaf 104 away says that link dangles
    leaf = FOLDER + "104-feedback_commit_to_default_branch_ok.md"
    corpus = _with_tree_titles(_corpus(_claude("104-feedback_commit_to_default_branch_ok.md", "Lanes.", name="feedback_commit_to_default_branch_ok"),
                                       _claude("drain.md", "See [[104-edit-work-runs-in-a-lane-clone]].", name="drain")),
                               {leaf: ["Edit-Work Runs In A Lane Clone"]})
    [retired] = _dangling(corpus, [Action(kind="archive", targets=[FOLDER + "104-feedback_commit_to_default_branch_ok.md"], reason="r")])
    assert retired["targets"] == [FOLDER + "104-feedback_commit_to_default_branch_ok.md", FOLDER + "drain.md"]


def test_webeverythings_numbered_title_links_answer_and_its_sibling_markdown_link_dangles():
    """Its tree index lists `- 104. Edit-Work Runs In A Lane Clone` for 104-feedback_commit_to_default_branch_ok.md,
    which two memories link as [[104-edit-work-runs-in-a-lane-clone]]; one memory links
    `[docs/agent/backlog-workflow.md](backlog-workflow.md)`, a file its folder does not hold."""
    plan = plan_json(WILD / "webeverything", "--model", "none")
    found = [f["reason"] for f in plan["findings"] if f["kind"] == "dangling_link"]
    assert not [r for r in found if "[[104-edit-work-runs-in-a-lane-clone]]" in r]
    assert not [r for r in found if "[[95. Plug = Proposed Missing Standard]]" in r or "[[106. Backlog Is The Tracker]]" in r]
    assert [r for r in found if "[docs/agent/backlog-workflow.md](backlog-workflow.md)" in r]
    # links into the repository's docs, its backlog or out of the store are not the store's to judge
    assert not [r for r in found if "](docs/agent/" in r or "](../" in r]


# A markdown link names a file by its path, into another memory folder of the store as well
# (`[runbook](../ops/runbook.md)`): a plan taking that file away leaves it dangling there too.

AGENTS = ".claude/agent-memory/"


def _agent(key: str, body: str, name: str = "") -> object:
    return mem(AGENTS + key, body, layout="claude", title=name)


def test_a_markdown_link_into_another_folder_to_what_the_plan_takes_away_is_reported():
    corpus = _corpus(
        _agent("ops/runbook.md", "Restart the workers.", name="runbook"),
        _agent("ops/runbook_copy.md", "Restart the workers.", name="runbook_copy"),
        _agent("ops/old_deploy.md", "Deploy by hand.", name="old_deploy"),
        _agent("writer/notes.md", "On call: [the runbook](../ops/Runbook_Copy.md#restart) and [deploy](../ops/old_deploy.md).\n"
               "Not it: [mine](runbook_copy.md), [other](../qa/runbook_copy.md), `[code](../ops/old_deploy.md)`.", name="notes"),
    )
    merge = MergeDuplicateAction(targets=[AGENTS + "ops/runbook.md", AGENTS + "ops/runbook_copy.md"], survivor=AGENTS + "ops/runbook.md", reason="r")
    archive = Action(kind="archive", targets=[AGENTS + "ops/old_deploy.md"], reason="r")
    deploy, copy = _dangling(corpus, [merge, archive])
    assert copy["targets"] == [AGENTS + "ops/runbook_copy.md", AGENTS + "writer/notes.md"]
    assert "linked from 1 file: .claude/agent-memory/writer/notes.md" in copy["reason"]
    assert f"could point at [[runbook]] ({AGENTS}ops/runbook.md)" in copy["reason"]
    assert deploy["targets"] == [AGENTS + "ops/old_deploy.md", AGENTS + "writer/notes.md"] and "could point at" not in deploy["reason"]


def test_a_markdown_link_into_another_folder_to_a_consolidated_member_names_the_new_file_and_is_relinked_next():
    from pipeline.rules.dangling_links import relinks

    members = [_agent("ops/deploy-r1.md", "Round one.", name="deploy-r1"), _agent("ops/deploy-r2.md", "Round two.", name="deploy-r2")]
    linking = _agent("writer/notes.md", "See [round two](../ops/deploy-r2.md).", name="notes")
    new_file = AGENTS + "ops/deploy.md"
    consolidate = ConsolidateAction(
        targets=[m.key for m in members], reason="r",
        outputs=[{"path": new_file, "frontmatter": {"name": "deploy"}, "body": "Round one.\n\nRound two.", "size": 2}])
    [finding] = _dangling(_corpus(*members, linking), [consolidate])
    assert finding["targets"] == [AGENTS + "ops/deploy-r2.md", AGENTS + "writer/notes.md"]
    assert f"could point at [[deploy]] ({new_file})" in finding["reason"] and "the next plan proposes that edit" in finding["reason"]
    # once applied: the new file lists its members, and the next plan's relink keeps the href's folder
    holder = _agent("ops/deploy.md", "Round one.\n\nRound two.", name="deploy").model_copy(
        update={"meta": {"consolidated_from": ["deploy-r1.md", "deploy-r2.md"]}})
    corpus = _corpus(holder, linking)
    corpus.indexes = {AGENTS + "ops/MEMORY.md": [holder.key], AGENTS + "writer/MEMORY.md": [linking.key]}
    [action] = relinks(corpus).actions
    assert [(r["before"], r["after"]) for r in action.replacements] == [("deploy-r2.md", "deploy.md")]


def test_a_markdown_link_to_a_retired_file_dangles_though_a_memory_that_stays_has_its_name():
    """A `[[link]]` by name still reaches the survivor named alike; a markdown link names the file."""
    corpus = _corpus(_claude("a.md", "Retry twice.", name="retry"), _claude("retry.md", "Retry twice.", name="retry"),
                     _claude("c.md", "See [[retry]] and [the policy](retry.md).", name="c"))
    merge = MergeDuplicateAction(targets=[FOLDER + "a.md", FOLDER + "retry.md"], survivor=FOLDER + "a.md", reason="r")
    [finding] = _dangling(corpus, [merge])
    assert finding["targets"] == [FOLDER + "c.md", FOLDER + "retry.md"] and f"({FOLDER}a.md)" in finding["reason"]
    # a file the plan writes at that very path again answers it
    rewrite = ConsolidateAction(targets=[FOLDER + "retry.md"], reason="r",
                                outputs=[{"path": FOLDER + "retry.md", "frontmatter": {"name": "retry"}, "body": "Retry.", "size": 1}])
    assert _dangling(corpus, [rewrite]) == []


# `N_title.md` is numbered as `N-title.md` and `N. Title.md` are: `[[N]]`, `[[N_title]]`, `[[title]]`,
# and a numbered reference spelled as a slug, `[[N-other-words]]` or `[[N_other_words]]`, reach it.


def test_a_file_named_number_underscore_title_answers_its_number_and_title(tmp_path: Path):
    from pipeline.rules.link_names import file_names, link_parts, link_target_forms

    assert link_parts("f/12_deploy_notes.md") == ("12", "deploy_notes") == link_parts("f/12-deploy_notes.md")
    assert link_parts("f/12. deploy_notes.md") == ("12", "deploy_notes") and link_parts("f/12.5_x.md") == (None, "12.5_x")
    assert file_names("f/12_deploy_notes.md") == {"12_deploy_notes", "deploy_notes", "12", "12#deploy notes"}
    assert link_target_forms("12_Deploy_Steps") == ("12_deploy_steps", "12#deploy steps")
    assert link_target_forms("2024_06_01_standup") == ("2024_06_01_standup", "2024#06 01 standup")
    _folder_with(tmp_path, {
        "12_deploy_notes.md": _fm("Friday deploys", "Deploy on Fridays.\n"),
        "notes.md": _fm("notes", "See [[12]], [[12_deploy_notes]], [[deploy_notes]], [[12-deploy-notes]], [[12. Friday Deploys]].\n"
                                  "Not it: [[13]], [[2024_06_01_standup]], [[12-deploy-on-fridays]].\n"),
    })
    _, [finding] = _relinks_of(tmp_path)
    assert finding["reason"] == "3 links reach no file of its folder: [[13]]; [[2024_06_01_standup]]; [[12-deploy-on-fridays]]"
    corpus = _corpus(_claude("12_deploy_notes.md", "Deploy.", name="deploy notes"), _claude("n.md", "See [[12]].", name="n"))
    [retired] = _dangling(corpus, [Action(kind="archive", targets=[FOLDER + "12_deploy_notes.md"], reason="r")])
    assert retired["targets"] == [FOLDER + "12_deploy_notes.md", FOLDER + "n.md"]


def test_a_link_respelled_to_a_numbered_file_gets_its_name_without_the_number():
    from pipeline.rules.dangling_links import relinks

    numbered = _claude("39_feedback_never_take_unprepared_decision.md", "Prepare first.")
    asking = _claude("dont_hedge.md", "Builds on [[never-take-an-unprepared-decision]].")
    [action] = relinks(_corpus(numbered, asking)).actions
    assert [r["after"] for r in action.replacements] == ["feedback_never_take_unprepared_decision"]


# A numbered reference reaches file N by a name it goes by, never by its number alone: the slug of its
# file name without the number, of its `name`, or of a title a tree index of its folder gives it
# (MEMORY.md's `- N. Title` lines, or a sub-index's). `[[3-d-printing]]` beside `3-setup.md` and
# `[[3. D Printing]]` are no links to it (a review's case: they hid links that reach nothing).


def test_a_numbered_reference_by_a_name_file_n_does_not_go_by_reaches_nothing(tmp_path: Path):
    folder = _folder_with(tmp_path, {
        "3-setup.md": _fm("setup", "The workshop has a bench and a vise.\n"),
        "12-release-checklist.md": _fm("release-checklist", "Tag, build, upload.\n"),
        "4-printer.md": _fm("printer", "The printer needs levelling; see [[3-d-printing]] and [[12-old-retired-note]].\n"),
        "bench.md": _fm("bench", "Also [[3. D Printing]]; but [[3-Setup]], [[3_SETUP]], [[3. Setup]], [[3-workshop-setup]],\n"
                                  "[[12. Release Checklist]], [[12-ship-it]] and [[4. Print Room]] all reach their file.\n"),
        "index-shop.md": "# Shop\n\n- 4. Print Room — the printer\n- 12. Ship It — before a release\n",
    })
    (folder / "MEMORY.md").write_text("# Memory\n\n- [shop](index-shop.md) — the shop's tree\n- 3. Workshop Setup — bench\n"
                                      "- [bench](bench.md) — bench\n")
    actions, found = _relinks_of(tmp_path)
    assert actions == []
    assert sorted(f["reason"] for f in found) == [
        "1 link reaches no file of its folder: [[3. D Printing]]",
        "2 links reach no file of its folder: [[3-d-printing]]; [[12-old-retired-note]]",
    ]
    assert [f["targets"] for f in found] == [[FOLDER + "4-printer.md"], [FOLDER + "bench.md"]]


def test_archiving_file_n_claims_only_the_numbered_references_that_name_it():
    setup, printer = FOLDER + "3-setup.md", FOLDER + "4-printer.md"
    corpus = _with_tree_titles(_corpus(
        _claude("3-setup.md", "The workshop has a bench.", name="setup"),
        # the title a tree index gives file 4 is no name of file 3 either
        _claude("4-printer.md", "The printer needs levelling; see [[3-d-printing]] and [[3-print-room]].", name="printer"),
        _claude("bench.md", "The vise: [[3-workshop-setup]].", name="bench"),
    ), {setup: ["Workshop Setup"], printer: ["Print Room"]})
    [finding] = _dangling(corpus, [Action(kind="archive", targets=[setup], reason="r")])
    assert finding["targets"] == [setup, FOLDER + "bench.md"]
    assert "linked from 1 file: .claude/memory/bench.md" in finding["reason"]
