"""Issue 15 wired in: `absolutize_dates` (and `update_ref`, same payload, same path) planned and
applied in place in every layout, journaled and undone byte for byte.

Each test builds its own memories (on a copy of a fixture store, for the layout's scaffolding),
runs plan + apply through the command line or `apply_store`, and checks the bytes: only the
replaced phrases change (front matter, CRLF, BOM, code, quotations and names stay), an edit of
text changed since the plan is refused, and undo gives the store back as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from helpers import FIXTURES, NOW, apply_json, plan_json, run_cli, snapshot

from pipeline.apply import apply_plan
from pipeline.config import Settings
from pipeline.journal import undo
from pipeline.layouts.registry import open_store
from pipeline.actions import UpdateRefAction
from pipeline.model import Action
from pipeline.plan import build_plan
from pipeline.render.plan import render_plan as render
from pipeline.storage.text_edits import EditRefused, edit_bytes, replacements_of
from pipeline.workflow import apply_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
BOM = b"\xef\xbb\xbf"
CLAUDE_A = ".claude/agent-memory/backend-architect/"


def store(tmp_path: Path, layout: str) -> Path:
    root = tmp_path / layout
    shutil.copytree(FIXTURES / layout, root, symlinks=True)
    return root


def undo_cli(root: Path, run_id: str) -> None:
    res = run_cli("undo", str(root), "--run", run_id)
    assert res.returncode == 0, res.stderr


def date_actions(plan: dict, key: str) -> list[dict]:
    return [a for a in plan["actions"] if a["kind"] == "absolutize_dates" and a["targets"] == [key]]


def round_trip(root: Path, *select: str) -> tuple[dict, dict[str, bytes]]:
    """apply (only `select`, when given), then undo: the store is byte-identical again. Returns the
    apply's JSON and the files as they were right after it."""
    before = snapshot(root)
    out = apply_json(root, *[a for s in select for a in ("--select", s)])
    after = snapshot(root)
    undo_cli(root, out["run_id"])
    assert snapshot(root) == before
    return out, after


# ---------------------------------------------------------------------------------------------
# crux: the memory and its twin, together


CRUX_PRIMARY = "memories/learning/deploy-day-moved.memory.crux.md"
CRUX_TWIN = "memories/learning/deploy-day-moved.memory.md"


def crux_pair(root: Path) -> None:
    front = (
        "---\r\ntitle: \"Deploy day moved\"\r\ntype: learning\r\ndescription: Moved the deploy yesterday\r\n"
        "strength: 2\r\ncreated: 2026-04-01\r\nmodified: 2026-04-01\r\n---\r\n"
    )
    primary = front + (
        "Yesterday we moved the deploy to Fridays.\r\n"
        "Run `deploy --since yesterday` to see it; the \"Yesterday\" dashboard keeps its name.\r\n"
        "```\r\nbackup taken yesterday\r\n```\r\n"
    )
    twin = front + (
        "Yesterday we moved the deploy to Fridays, after the outage two weeks ago.\r\n"
        "```\r\nbackup taken yesterday\r\n```\r\n"
    )
    (root / CRUX_PRIMARY).write_bytes(BOM + primary.encode())
    (root / CRUX_TWIN).write_bytes(twin.encode())


def test_crux_plan_apply_undo_edits_the_pair_and_nothing_else(tmp_path):
    root = store(tmp_path, "crux")
    crux_pair(root)
    plan = plan_json(root, "--model", "none")
    [action] = date_actions(plan, CRUX_PRIMARY)
    assert action["needs_user"] is False and action["written"] == "2026-04-01"
    assert sorted(action["target_hashes"]) == [CRUX_PRIMARY, CRUX_TWIN]
    fields = sorted((r["field"], r["before"], r["after"]) for r in action["replacements"])
    assert fields == [
        ("body", "Yesterday", "On 2026-03-31"),
        ("description", "yesterday", "on 2026-03-31"),
        ("twin_body", "Yesterday", "On 2026-03-31"),
        ("twin_body", "two weeks ago", "the week of 2026-03-16"),
    ]
    before = snapshot(root)
    out, after = round_trip(root, "absolutize_dates")
    assert [a["kind"] for a in out["applied"]] == ["absolutize_dates"]
    primary, twin = after[CRUX_PRIMARY], after[CRUX_TWIN]
    assert primary.startswith(BOM) and b"\r\n" in primary and b"\n" not in primary.replace(b"\r\n", b"")
    assert primary == before[CRUX_PRIMARY].replace(b"Yesterday we", b"On 2026-03-31 we").replace(
        b"Moved the deploy yesterday", b"Moved the deploy on 2026-03-31")
    # code span, quotation and fence left alone (item 3)
    assert b"`deploy --since yesterday`" in primary and b"\"Yesterday\" dashboard" in primary
    assert b"backup taken yesterday" in primary and b"backup taken yesterday" in twin
    assert twin == before[CRUX_TWIN].replace(b"Yesterday we", b"On 2026-03-31 we").replace(
        b"two weeks ago", b"the week of 2026-03-16").replace(b"Moved the deploy yesterday", b"Moved the deploy on 2026-03-31")


def test_crux_a_twin_changed_since_the_plan_leaves_both_files_alone(tmp_path):
    root = store(tmp_path, "crux")
    crux_pair(root)

    def agent_edits_the_twin(plan, n):
        with open(root / CRUX_TWIN, "ab") as fh:
            fh.write(b"\r\nnoted by the agent\r\n")
        return True

    primary = (root / CRUX_PRIMARY).read_bytes()
    _, result = apply_store(str(root), S, lambda _: None, ["absolutize_dates"], None, agent_edits_the_twin)
    [(action, why)] = [(a, w) for a, w in result.changes.skipped if a.kind == "absolutize_dates"]
    assert "changed since the plan" in why
    assert (root / CRUX_PRIMARY).read_bytes() == primary  # the pair stays consistent: neither is edited
    assert (root / CRUX_TWIN).read_bytes().endswith(b"noted by the agent\r\n")


# ---------------------------------------------------------------------------------------------
# claude: body and front-matter description


CLAUDE_KEY = CLAUDE_A + "project_key_rotation.md"


def claude_file(root: Path, text: str, name: str = "project_key_rotation.md") -> str:
    (root / CLAUDE_A / name).write_bytes(text.encode())
    return CLAUDE_A + name


def test_claude_plan_apply_undo_edits_body_and_description(tmp_path):
    root = store(tmp_path, "claude")
    text = (
        "---\nname: key-rotation\n# rotated by ops\ndescription: 'API key rotated 3 days ago'\ntype: project\n"
        "created: 2026-10-10\n---\n\nThe API key was rotated 3 days ago; next Monday we drop the old one.\n"
        "Check `rotate --since \"3 days ago\"` and the Today I Learned page.\n"
        "Rule: if the export fails, run it again the next day.\n"
    )
    key = claude_file(root, text)
    plan = plan_json(root, "--model", "none")
    [action] = date_actions(plan, key)
    report = render(build_plan(*open_store(root, S)))
    assert "body: “3 days ago” → “on 2026-10-07”" in report
    assert "description: “3 days ago” → “on 2026-10-07”" in report
    out, after = round_trip(root, "absolutize_dates")
    assert any(a["targets"] == [key] for a in out["applied"])
    assert after[key].decode() == text.replace(
        "rotated 3 days ago;", "rotated on 2026-10-07;").replace("next Monday", "on 2026-10-12").replace(
        "'API key rotated 3 days ago'", "'API key rotated on 2026-10-07'")


def test_claude_front_matter_only_the_line_reader_takes_is_edited_as_that_reader_reads_it(tmp_path):
    """`description: deploy: rotated 3 days ago` is no YAML (a second `: `), but Claude Code and the
    reader take it line by line: the edits the plan proposes on it apply (red-team bug 6: skipped
    every night as "malformed YAML front matter")."""
    root = store(tmp_path, "claude")
    text = (
        "---\nname: key-rotation\ndescription: deploy: rotated 3 days ago\ntype: project\ncreated: 2026-10-10\n---\n\n"
        "The API key was rotated 3 days ago.\n"
    )
    key = claude_file(root, text)
    [action] = date_actions(plan_json(root, "--model", "none"), key)
    assert {r["field"] for r in action["replacements"]} == {"body", "description"}
    out, after = round_trip(root, "absolutize_dates")
    assert [key] in [a["targets"] for a in out["applied"]] and [s for s in out["skipped"] if s["targets"] == [key]] == []
    assert after[key].decode() == text.replace("3 days ago", "on 2026-10-07")


def test_a_description_only_the_line_reader_takes_is_swapped_on_its_line_or_refused():
    edits = {"description": replacements_of(UpdateRefAction(
        kind="update_ref", targets=["m.md"], reason="r",
        replacements=[{"field": "description", "start": 5, "end": 8, "before": "old", "after": "new"}]))["description"]}
    one_line = b"---\nname: n\ndescription: see: old notes\n---\nbody\n"
    assert edit_bytes(one_line, edits, True, "m.md", lenient=True) == one_line.replace(b"old", b"new")
    with pytest.raises(EditRefused, match="malformed YAML"):
        edit_bytes(one_line, edits, True, "m.md")  # a layout whose reader is YAML only refuses it
    # folded over two lines: never rendered through YAML, which this front matter is not
    folded = b"---\nname: n\ndescription: see: old\n  notes\n---\nbody\n"
    with pytest.raises(EditRefused, match="not YAML and its description is not one line"):
        edit_bytes(folded, edits, True, "m.md", lenient=True)


def test_claude_only_an_mtime_gives_a_finding_and_apply_leaves_it(tmp_path):
    root = store(tmp_path, "claude")
    key = claude_file(root, "---\nname: undated\ntype: project\n---\n\nYesterday the cache was flushed.\n", "project_undated.md")
    plan = plan_json(root, "--model", "none")
    assert date_actions(plan, key) == []
    [finding] = [f for f in plan["findings"] if f["kind"] == "relative_date" and f["targets"] == [key]]
    assert finding["class"] == "mtime_only" and finding["replacements"][0]["before"] == "Yesterday"
    before = (root / key).read_bytes()
    apply_json(root)
    assert (root / key).read_bytes() == before


def test_claude_a_body_changed_since_the_plan_is_refused(tmp_path):
    root = store(tmp_path, "claude")
    key = claude_file(root, "---\nname: k\ntype: project\ncreated: 2026-10-10\n---\n\nRotated yesterday.\n")

    def agent_writes(plan, n):
        (root / key).write_bytes((root / key).read_bytes().replace(b"Rotated", b"Key rotated"))
        return True

    _, result = apply_store(str(root), S, lambda _: None, ["absolutize_dates"], None, agent_writes)
    whys = [w for a, w in result.changes.skipped if a.targets == [key]]
    assert whys and "changed since the plan" in whys[0]
    assert (root / key).read_bytes().endswith(b"Key rotated yesterday.\n")


def test_claude_a_keep_both_note_and_a_date_edit_share_one_write(tmp_path):
    from pipeline.layouts.claude import reader, writer

    root = store(tmp_path, "claude")
    a = claude_file(root, "---\nname: a\ntype: project\ncreated: 2026-10-10\n---\n\nThe queue moved yesterday.\n", "a.md")
    b = claude_file(root, "---\nname: b\ntype: project\n---\n\nThe queue did not move.\n", "b.md")
    corpus = reader.load(root, S)
    plan = build_plan(corpus, S)
    [dates] = [x for x in plan.actions if x.kind == "absolutize_dates" and x.targets == [a]]
    conflict = Action(kind="conflict", targets=[a, b], reason="contradict", needs_user=True)
    changes = writer.changes(corpus, [dates, conflict], S, "run-1", "keep-both", plan.findings)
    writes = [op for op in changes.ops if op.path == a]
    assert len(writes) == 1
    text = writes[0].data.decode()
    assert "The queue moved on 2026-10-09." in text and "conflicts with b.md" in text


# ---------------------------------------------------------------------------------------------
# update_ref: the same payload, the same code path (judge proposes it; needs_user true)


def update_ref(root: Path, key: str, field: str, old: str, new: str, text: str) -> Action:
    at = text.index(old)
    corpus, _ = open_store(root, S)
    return UpdateRefAction(
        targets=[key], reason=f"{old} moved to {new}", source="deterministic", needs_user=True,
        replacements=[{"field": field, "start": at, "end": at + len(old), "before": old, "after": new}],
        target_hashes=corpus.by_key()[key].read_shas,
    )


@pytest.mark.parametrize("layout", ["claude", "crux"])
def test_update_ref_applies_through_the_same_path_and_undoes(tmp_path, layout):
    root = store(tmp_path, layout)
    if layout == "claude":
        key = CLAUDE_A + "project_cache_layer.md"
    else:
        crux_pair(root)
        key = CRUX_PRIMARY
    corpus, settings = open_store(root, S)
    body = corpus.by_key()[key].body
    old = "src/cache/redis.ts" if layout == "claude" else "Fridays"
    action = update_ref(root, key, "body", old, "src/cache/store.ts" if layout == "claude" else "Thursdays", body)
    before = snapshot(root)
    plan = build_plan(corpus, settings)
    result = apply_plan(root, corpus, plan, settings, [action], None)
    assert [a.kind for a in result.changes.applied] == ["update_ref"], result.changes.skipped
    data = (root / key).read_bytes()
    want = before[key].replace(old.encode(), (b"src/cache/store.ts" if layout == "claude" else b"Thursdays"), 1)
    assert data == want
    undo(root, result.run_id)
    assert snapshot(root) == before


# ---------------------------------------------------------------------------------------------
# zylos: entries (their own date) and tier files


def test_zylos_entries_use_their_own_date_and_a_session_log_is_edited_where_it_is_archived(tmp_path):
    root = store(tmp_path, "zylos")
    decisions = root / "reference/decisions.md"
    decisions.write_bytes(decisions.read_bytes() + (
        "\n### Deploys on Fridays\n- **Date:** 2026-03-10\n- **Decided by:** Howard\n"
        "- **Decision:** Yesterday we moved deploys to Fridays; `cron` keeps \"yesterday\".\n"
        "- **Status:** active\n- **Importance:** 3\n\n"
        "### Rotate the key\n- **Date:** 2026-05-02\n- **Decision:** Rotate the key,\n  as agreed yesterday.\n"
        "- **Status:** active\n- **Importance:** 3\n"
    ).encode())
    log = root / "sessions/2026-09-14.md"
    log.write_bytes(b"# Session Log: 2026-09-14\n\n## 10:00\nThis morning the backup failed.\n")
    plan = plan_json(root, "--model", "none")
    [fridays] = date_actions(plan, "reference/decisions.md#deploys-on-fridays")
    assert fridays["written"] == "2026-03-10" and fridays["replacements"][0]["after"] == "On 2026-03-09"
    [rotate] = date_actions(plan, "reference/decisions.md#rotate-the-key")  # a continuation line
    assert rotate["replacements"][0]["after"] == "on 2026-05-01"
    [session] = date_actions(plan, "sessions/2026-09-14.md")
    assert session["replacements"][0]["after"] == "On the morning of 2026-09-14"
    out, after = round_trip(root)  # everything automatic: the log is archived in the same run
    applied = {(a["kind"], a["targets"][0]) for a in out["applied"]}
    assert ("absolutize_dates", "sessions/2026-09-14.md") in applied and ("archive_session", "sessions/2026-09-14.md") in applied
    text = after["reference/decisions.md"].decode()
    assert "- **Decision:** On 2026-03-09 we moved deploys to Fridays; `cron` keeps \"yesterday\".\n" in text
    assert "- **Decision:** Rotate the key,\n  as agreed on 2026-05-01.\n" in text
    assert after["archive/sessions/2026-09-14.md"] == b"# Session Log: 2026-09-14\n\n## 10:00\nOn the morning of 2026-09-14 the backup failed.\n"


def test_zylos_the_live_session_log_is_a_finding_never_an_edit(tmp_path):
    root = store(tmp_path, "zylos")
    current = root / "sessions/current.md"
    current.write_bytes(b"# Session Log: 2026-11-28\n\n## 09:00\nYesterday the deploy failed.\n")
    plan = plan_json(root, "--model", "none")
    assert date_actions(plan, "sessions/current.md") == []
    [finding] = [f for f in plan["findings"] if f["kind"] == "relative_date" and f["targets"] == ["sessions/current.md"]]
    assert finding["class"] == "append_only"


def test_zylos_a_replacement_across_a_joined_line_break_is_refused(tmp_path):
    from pipeline.layouts.zylos import reader, writer

    root = store(tmp_path, "zylos")
    decisions = root / "reference/decisions.md"
    decisions.write_bytes(decisions.read_bytes() + b"\n### Wrapped\n- **Date:** 2026-05-02\n- **Decision:** Done last\n  week, finally.\n")
    corpus = reader.load(root, S)
    key = "reference/decisions.md#wrapped"
    [action] = [a for a in build_plan(corpus, S).actions if a.targets == [key]]
    assert action.replacements[0]["before"] == "last week"
    changes = writer.changes(corpus, [action], S, "run-1", None)
    [(_, why)] = changes.skipped
    assert "across a line break" in why and not changes.ops


# ---------------------------------------------------------------------------------------------
# bank: a new revision, history kept


def test_bank_a_date_edit_is_a_new_revision_and_undo_cuts_it(tmp_path):
    root = store(tmp_path, "bank")
    path = root / "ops/memories.jsonl"
    record = {"id": "o900", "text": "Yesterday the signing key was rotated.", "entities": [], "tags": [], "confidence": 0.8,
              "corroboration": 1, "pinned": False, "source": "session", "created_at": "2026-08-10T08:00:00Z",
              "updated_at": "2026-08-10T08:00:00Z", "invalid_at": None, "superseded_by": None, "revision": 1}
    path.write_bytes(path.read_bytes() + json.dumps(record).encode() + b"\n")
    plan = plan_json(root, "--model", "none")
    [action] = date_actions(plan, "ops/o900")
    assert action["replacements"] == [{"field": "body", "start": 0, "end": 9, "before": "Yesterday", "after": "On 2026-08-09"}]
    original = path.read_bytes()
    out, after = round_trip(root, "absolutize_dates")
    assert after["ops/memories.jsonl"].startswith(original)  # append-only: history untouched
    added = [json.loads(line) for line in after["ops/memories.jsonl"][len(original):].splitlines()]
    [rev] = [r for r in added if r["id"] == "o900"]
    assert rev["text"] == "On 2026-08-09 the signing key was rotated." and rev["revision"] == 2
    assert rev["superseded_by"] is None and rev["created_at"] == record["created_at"]


# ---------------------------------------------------------------------------------------------
# the shared piece on its own


def test_the_payload_is_checked_before_anything_is_written():
    text = "---\ndescription: x\n---\nMoved yesterday.\n".encode()
    good = {"field": "body", "start": 6, "end": 15, "before": "yesterday", "after": "on 2026-03-31"}

    def act(*reps):
        return replacements_of(UpdateRefAction(targets=["k"], reason="r", replacements=list(reps)))

    assert edit_bytes(text, act(good), True, "k").endswith(b"Moved on 2026-03-31.\n")
    with pytest.raises(EditRefused, match="no longer at"):
        edit_bytes(text, act({**good, "start": 5, "end": 14, "before": "yesterda"[:9].ljust(9, "y")}), True, "k")
    with pytest.raises(EditRefused, match="line break"):
        act({**good, "after": "on\n### Forged"})
    with pytest.raises(EditRefused, match="overlap"):
        act(good, {**good, "start": 10, "end": 19, "before": "erday.\nxx"[:9]})
    with pytest.raises(EditRefused, match="do not span"):
        act({**good, "end": 20})
    with pytest.raises(EditRefused, match="no field"):
        edit_bytes(text, act({**good, "field": "title"}), True, "k")


# ---------------------------------------------------------------------------------------------
# changed since the plan, in the layouts not covered above


def test_zylos_and_bank_targets_changed_since_the_plan_are_refused(tmp_path):
    zylos = store(tmp_path, "zylos")
    decisions = zylos / "reference/decisions.md"
    decisions.write_bytes(decisions.read_bytes() + b"\n### Late\n- **Date:** 2026-05-02\n- **Decision:** Moved it yesterday.\n")
    bank = store(tmp_path, "bank")
    records = bank / "ops/memories.jsonl"
    rec = {"id": "o901", "text": "Rotated yesterday.", "created_at": "2026-08-10T08:00:00Z", "updated_at": "2026-08-10T08:00:00Z", "revision": 1}
    records.write_bytes(records.read_bytes() + json.dumps(rec).encode() + b"\n")
    newer = json.dumps({**rec, "text": "Rotated yesterday, again.", "revision": 2}).encode() + b"\n"
    for root, path, key, extra in ((zylos, decisions, "reference/decisions.md#late", b"<!-- agent -->\n"),
                                   (bank, records, "ops/o901", newer)):
        def agent_writes(plan, n, path=path, extra=extra):
            path.write_bytes(path.read_bytes() + extra)
            return True

        _, result = apply_store(str(root), S, lambda _: None, ["absolutize_dates"], None, agent_writes)
        whys = [w for a, w in result.changes.skipped if a.targets == [key]] if result else []
        assert whys and "changed since the plan" in whys[0], key
        assert path.read_bytes().endswith(extra)
        assert b"on 2026" not in path.read_bytes().lower()
