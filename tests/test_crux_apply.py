"""Apply on crux stores: the seed's file moves, archives instead of deletes, tracker merges, content
actions, the REM summary and the rebuilt index; undo, a second apply and a crash leave the store whole.

The fixture run is compared with the tree under tests/data/expected/crux. After a deliberate change,
regenerate it with `UPDATE_EXPECTED=1 pytest tests/test_crux_apply.py` and read the diff by eye: it
must be what a careful person would have done by hand.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers import FIXTURES, NOW, REAL_STORES, REPO, copy_real, files, kill_apply_then_recover, plan_json, run_cli, snapshot

from pipeline.config import Settings
from pipeline.journal import Op, execute
from pipeline.actions import CompressAction, ConsolidateAction, RebalanceVolumesAction, parse_action
from pipeline.model import Action
from pipeline.layouts.crux import reader as crux, writer as crux_write
from pipeline.layouts.crux.render import render_frontmatter, set_tracker_strength
from pipeline.storage.files import split_frontmatter

EXPECTED = REPO / "tests" / "data" / "expected" / "crux"
REAL = REAL_STORES / "crux"  # read in place, copied writable to apply
L = "memories/learning/"
T = ".crux/reference-tracking/"
ARCH = ".ai-ignored/memories/sources/20261129/"
REM = ".ai-ignored/executed/rem-20261129.md"
UNREADABLE = L + "currency-rounding-rules.memory.md"


@pytest.fixture
def store(fixture_store) -> Path:
    return fixture_store("crux")


def apply(root: Path, *extra: str, now: str = NOW, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli("apply", str(root), "--now", now, "--model", "none", "--yes", *extra, env=env)


def apply_json(root: Path, *extra: str) -> dict:
    res = apply(root, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def write_expected(tree: dict[str, bytes]) -> None:
    shutil.rmtree(EXPECTED, ignore_errors=True)
    for key, data in tree.items():
        path = EXPECTED / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def settings_for(root: Path) -> Settings:
    return crux.configure(root, Settings(now=dt.date.fromisoformat(NOW)))


def run_changes(root: Path, actions: list[Action], resolve: str | None = None):
    s = settings_for(root)
    corpus = crux.load(root, s)
    return corpus, crux_write.changes(corpus, actions, s, "run-1", resolve)


def automatic(plan: dict) -> list[dict]:
    return [a for a in plan["actions"] if not a["needs_user"]]


def meta(data: bytes) -> dict:
    return split_frontmatter(data.decode()).meta


def tracker(data: bytes) -> dict:
    return yaml.safe_load(data.decode())


# ---------------------------------------------------------------------------------------------
# The fixture, end to end through the command line


def test_fixture_apply_matches_the_expected_tree(store):
    before = files(store)
    out = apply_json(store)
    assert [a["kind"] for a in out["applied"]] == [
        "merge_duplicate", "promote", "promote", "promote", "demote", "demote", "demote",
        "archive", "archive", "archive", "sync_strength", "remove_orphan_tracker", "rebuild_index",
    ]
    assert out["skipped"] == []
    after = files(store)
    if os.environ.get("UPDATE_EXPECTED") == "1":
        write_expected(after)
    expected = files(EXPECTED)
    assert sorted(after) == sorted(expected)
    for key in sorted(expected):
        assert after[key] == expected[key], f"{key} differs from tests/data/expected/crux/{key}"
    # retired files are moved, not rewritten
    assert after[ARCH + "migrations-run-before-the-rolling-deploy.memory.md"] == before[L + "migrations-run-before-the-rolling-deploy.memory.md"]
    assert after[ARCH + "trackers/legacy-soap-client-timeouts.refs.yml"] == before[T + "legacy-soap-client-timeouts.refs.yml"]
    # nothing disappears: every original byte string is still somewhere in the store
    kept = set(after.values())
    for key, data in before.items():
        if key not in after or after[key] != data:
            moved = data in kept
            edited = key.endswith(".memory.md") or key.endswith(".yml")
            assert moved or edited, key
    # files no action touches are byte-identical
    for key in ("memories/core/never-log-full-card-numbers.memory.md", UNREADABLE, T + "never-log-full-card-numbers.refs.yml",
                ".crux/crux-memories.json", "memories/archived/ie11-checkout-polyfills.memory.md"):
        assert after[key] == before[key]


def test_the_rem_summary_has_the_seed_sections_and_counts(store):
    apply_json(store)
    text = (store / REM).read_text()
    headings = [l for l in text.splitlines() if l.startswith("#")]
    assert headings == [
        "# REM Sleep Summary — 2026-11-29", "## Changes Applied", "### Promotions (3)", "### Demotions (3)",
        "### Archived (3)", "### Consolidated (1 groups, 2 memories merged)", "### Volume Rebalanced (0 topics)",
        "### Compressed (0)", "### Strength Rebalanced (1)", "### Conflicts Resolved (0)", "### Cleaned Up (1)",
        "### Rule Promotion Candidates (1)", "## Skipped", "## Corpus Summary",
    ]
    assert '- "Tag releases only from commits on main": learning → core' in text
    assert '- "A GraphQL gateway could trim mobile checkout payloads": idea → archived' in text
    assert '- "Verify webhook signatures on the raw body before parsing": tracker strength 3 → 5' in text
    assert "- legacy-soap-client-timeouts.refs.yml (orphaned)" in text
    assert '- "Never log full card numbers or CVCs" (42 references)' in text
    # the corpus as it is after the run: 28 memories, one duplicate retired
    assert "- Total memories: 27 (26 standalone, 1 consolidated across 1 topics)" in text
    assert "- By type: core=5, redflag=0, goal=1, learning=13, experiment=1, idea=3, archived=4" in text
    assert "- Tracked (with .refs.yml): 14\n- Untracked: 13\n" in text


def test_a_moved_file_changes_only_its_type_lines(store):
    key = "memories/agents/release-bot/learning/tag-releases-from-main-only.memory.md"
    old = (store / key).read_bytes()
    apply_json(store)
    assert not (store / key).exists()
    new = (store / "memories/agents/release-bot/core/tag-releases-from-main-only.memory.md").read_bytes()
    expected = (
        old.replace(b'type: "learning"\n', b'type: "core"\n')
        .replace(b"modified: 2026-11-27\n", b"modified: 2026-11-29\n")
        .replace(b"release-bot]\n---\n", b'release-bot]\npromoted_from: "learning"\n---\n')
    )
    assert new == expected
    assert split_frontmatter(new.decode()).body == split_frontmatter(old.decode()).body


def test_undo_restores_byte_for_byte(store):
    before = snapshot(store)
    apply_json(store)
    assert snapshot(store) != before
    res = run_cli("undo", str(store))
    assert res.returncode == 0, res.stderr
    assert snapshot(store) == before


def test_a_second_apply_changes_only_what_the_demotion_clock_changes(store):
    first = apply_json(store)
    demoted = {a["to_path"]: a["to_type"] for a in first["applied"] if a["kind"] in ("demote", "archive")}
    rem = (store / REM).read_bytes()
    plan = plan_json(store, "--model", "none")
    # Nothing the run did is proposed again: no merge, no promotion, no sync, no cleanup, no index
    # rebuild. What remains is the demote rule counting days from the same last_referenced for a
    # memory it has just moved down (see the report: the clock is not restarted by a demotion).
    left = automatic(plan)
    assert {a["kind"] for a in left} <= {"demote", "archive"}
    for a in left:
        assert demoted.get(a["targets"][0]) == a["from_type"], a
    second = apply_json(store)
    assert sorted(a["targets"][0] for a in second["applied"] if a["kind"] != "rebuild_index") == sorted(
        a["targets"][0] for a in left
    )
    assert (store / REM).read_bytes() == rem  # never overwritten: a second run that day writes rem-20261129-2.md
    assert (store / ".ai-ignored/executed/rem-20261129-2.md").is_file() == bool(left)
    for _ in range(3):
        if not automatic(plan_json(store, "--model", "none")):
            break
        apply_json(store)
    assert automatic(plan_json(store, "--model", "none")) == []
    settled = snapshot(store)
    res = apply(store)
    assert res.returncode == 0 and "Nothing to apply" in res.stdout
    assert snapshot(store) == settled


# ---------------------------------------------------------------------------------------------
# Bad input: untouched


def test_malformed_files_stay_untouched(store, tmp_path):
    (store / L / "latin1-notes.memory.md").write_bytes("---\ntitle: caf\xe9\n---\nbody\n".encode("latin-1"))
    (store / L / "binary-blob.memory.md").write_bytes(b"\x00\x01\x02 not text")
    outside = tmp_path / "outside.memory.md"
    outside.write_text('---\ntitle: "secret title"\ntype: learning\n---\nsecret\n')
    (store / L / "linked-outside.memory.md").symlink_to(outside)
    (store / T / "broken.refs.yml").write_text("slug: broken\nreferences: [1\n")
    odd = [UNREADABLE, L + "latin1-notes.memory.md", L + "binary-blob.memory.md", T + "broken.refs.yml"]
    before = {k: (store / k).read_bytes() for k in odd}
    out = apply_json(store)
    assert out["skipped"] == []
    for key in odd:
        assert (store / key).read_bytes() == before[key], key
    assert (store / L / "linked-outside.memory.md").is_symlink()
    index = (store / ".crux/memory-index.yml").read_text()
    for key in odd[:3] + [L + "linked-outside.memory.md"]:
        assert index.count(f"file: {key}\n") == 1, key
    assert "secret" not in index
    assert not [a for a in automatic(plan_json(store, "--model", "none")) if a["kind"] == "rebuild_index"]


def test_an_unreadable_index_is_archived_whole_before_the_rebuild(store):
    index = store / ".crux/memory-index.yml"
    index.write_bytes(b"memories: [broken\n")
    out = apply_json(store)
    assert "rebuild_index" in [a["kind"] for a in out["applied"]]
    assert (store / ARCH / "memory-index.yml").read_bytes() == b"memories: [broken\n"
    assert index.read_text().startswith("# Generated by crux-skill-memory-index")
    assert not [a for a in automatic(plan_json(store, "--model", "none")) if a["kind"] == "rebuild_index"]


def test_actions_naming_unreadable_or_unknown_files_never_touch_them(store):
    good = L + "ack-webhooks-before-processing.memory.md"
    actions = [
        Action(kind="merge_duplicate", targets=[good, UNREADABLE], survivor=good, reason="crafted"),
        Action(kind="merge_duplicate", targets=[UNREADABLE, good], survivor=UNREADABLE, reason="crafted"),
        Action(kind="promote", targets=[UNREADABLE], from_type="learning", to_type="core", reason="crafted"),
        Action(kind="archive", targets=[L + "no-such.memory.md"], from_type="learning", to_type="archived", reason="crafted"),
        Action(kind="sync_strength", targets=[UNREADABLE, T + "currency-rounding-rules.refs.yml"], reason="crafted"),
    ]
    _, cs = run_changes(store, actions)
    assert cs.ops == [] and cs.applied == []
    whys = [why for _, why in cs.skipped]
    assert whys == [
        f"{UNREADABLE}: unreadable file: left untouched",
        f"survivor {UNREADABLE}: unreadable file: left untouched",
        f"{UNREADABLE}: unreadable file: left untouched",
        f"{L}no-such.memory.md: not a memory file of this store",
        f"{UNREADABLE}: unreadable file: left untouched",
    ]


def test_a_memory_whose_twin_is_unreadable_is_not_moved(store):
    (store / "memories/core/never-log-full-card-numbers.memory.crux.md").write_bytes(b"---\ntitle: [broken\n---\n")
    key = "memories/core/never-log-full-card-numbers.memory.md"
    _, cs = run_changes(store, [Action(kind="demote", targets=[key], from_type="core", to_type="learning", reason="x")])
    assert cs.ops == []
    assert cs.skipped[0][1] == f"{key}: its twin memories/core/never-log-full-card-numbers.memory.crux.md is unreadable: left untouched"


# ---------------------------------------------------------------------------------------------
# Moves, twins, several actions on one memory


def test_twins_move_with_their_originals_and_get_the_same_edits(store):
    crux_key = "memories/core/verify-webhook-signatures.memory.crux.md"
    plain_key = "memories/core/verify-webhook-signatures.memory.md"
    before = files(store)
    a = Action(kind="demote", targets=[crux_key], from_type="core", to_type="learning", reason="constructed")
    _, cs = run_changes(store, [a])
    assert [(op.kind, op.path, op.dest) for op in cs.ops if op.kind == "move"] == [
        ("move", crux_key, L + "verify-webhook-signatures.memory.crux.md"),
        ("move", plain_key, L + "verify-webhook-signatures.memory.md"),
    ]
    execute(store, cs.ops, run_id="run-1")
    after = files(store)
    for old, new in ((crux_key, L + "verify-webhook-signatures.memory.crux.md"), (plain_key, L + "verify-webhook-signatures.memory.md")):
        assert old not in after
        m_old, m_new = meta(before[old]), meta(after[new])
        assert (m_new["type"], m_new["demoted_from"], str(m_new["modified"])) == ("learning", "core", NOW)
        assert {k: v for k, v in m_new.items() if k not in ("type", "demoted_from", "modified")} == {
            k: v for k, v in m_old.items() if k not in ("type", "modified")
        }
        assert list(m_new)[: len(m_old)] == list(m_old)  # key order kept, the new key appended
        assert split_frontmatter(after[new].decode()).body == split_frontmatter(before[old].decode()).body
    assert "reducedBy: 64%\n" in after[L + "verify-webhook-signatures.memory.crux.md"].decode()  # written as it was
    # trackers are keyed by slug: untouched by a move
    assert after[T + "verify-webhook-signatures.refs.yml"] == before[T + "verify-webhook-signatures.refs.yml"]


def test_a_move_never_overwrites(store):
    (store / "memories/core/cache-feature-flags-at-the-edge.memory.md").write_text("---\ntype: core\n---\nother\n")
    a = Action(kind="promote", targets=["memories/idea/cache-feature-flags-at-the-edge.memory.md"], from_type="idea",
               to_type="core", reason="constructed")
    _, cs = run_changes(store, [a])
    assert cs.ops == []
    assert cs.skipped == [(a, "memories/core/cache-feature-flags-at-the-edge.memory.md already exists: a move never overwrites a file")]


def dup_store(store: Path) -> tuple[str, str]:
    """A duplicate of retry-with-idempotency-keys with its own tracker."""
    src = (store / L / "retry-with-idempotency-keys.memory.md").read_text()
    copy = src.replace('id: "98ef987"', 'id: "1a2b3c4"').replace("strength: 15", "strength: 4").replace(
        "created: 2026-06-15", "created: 2026-09-01")
    (store / L / "idempotency-key-retries.memory.md").write_text(copy)
    (store / T / "idempotency-key-retries.refs.yml").write_text(
        "# Managed by crux-skill-memory-reference-tracker — do not edit manually\n"
        "slug: idempotency-key-retries\nreferences: 4\nlast_referenced: 2026-11-27\nstrength: 4\n"
        "recent_references:\n  - conversation_id: \"auto-hook-20261127T1000\"\n    count: 1\n    last: 2026-11-27\n"
    )
    return L + "retry-with-idempotency-keys.memory.md", L + "idempotency-key-retries.memory.md"


def test_a_duplicate_merge_sums_strength_and_merges_trackers(store):
    survivor, dup = dup_store(store)
    plan = plan_json(store, "--model", "none")
    merge = next(a for a in plan["actions"] if a["kind"] == "merge_duplicate" and survivor in a["targets"])
    assert merge["survivor"] == survivor and dup in merge["targets"]
    before = files(store)
    _, cs = run_changes(store, [parse_action(merge)])
    execute(store, cs.ops, run_id="run-1")
    after = files(store)
    assert after[ARCH + "idempotency-key-retries.memory.md"] == before[dup]
    assert after[ARCH + "trackers/idempotency-key-retries.refs.yml"] == before[T + "idempotency-key-retries.refs.yml"]
    assert dup not in after and T + "idempotency-key-retries.refs.yml" not in after
    assert meta(after[survivor])["strength"] == 19
    t = tracker(after[T + "retry-with-idempotency-keys.refs.yml"])
    assert (t["references"], str(t["last_referenced"]), t["strength"]) == (19, "2026-11-27", 19)
    assert [r["conversation_id"] for r in t["recent_references"]] == ["auto-hook-20261127T1000", "auto-hook-20261125T0915"]
    assert after[T + "retry-with-idempotency-keys.refs.yml"].startswith(b"# Managed by crux-skill-memory-reference-tracker")


def test_a_merge_survivor_that_is_also_promoted_moves_once_whatever_the_order(store):
    survivor, dup = dup_store(store)
    merge = Action(kind="merge_duplicate", targets=[survivor, dup], survivor=survivor, reason="identical")
    promote = Action(kind="promote", targets=[survivor], from_type="learning", to_type="core", reason="strength")
    demote_dup = Action(kind="demote", targets=[dup], from_type="learning", to_type="idea", reason="stale")
    results = []
    for actions in ([merge, promote, demote_dup], [demote_dup, promote, merge]):
        _, cs = run_changes(store, actions)
        moves = [(op.path, op.dest) for op in cs.ops if op.kind == "move"]
        assert len({p for p, _ in moves}) == len(moves)  # never two moves of one file
        results.append((moves, [(a.kind, why) for a, why in cs.skipped]))
    assert results[0][0] == results[1][0]
    assert ("demote", "archived by merge_duplicate in this run") in results[0][1]
    _, cs = run_changes(store, [merge, promote])
    execute(store, cs.ops, run_id="run-1")
    moved = store / "memories/core/retry-with-idempotency-keys.memory.md"
    m = meta(moved.read_bytes())
    assert (m["type"], m["promoted_from"], m["strength"]) == ("core", "learning", 19)
    assert not (store / survivor).exists()


def test_prune_archives_the_memory_and_its_tracker(store):
    key = L + "remove-feature-flags-after-launch.memory.md"
    before = files(store)
    a = Action(kind="prune_stale", targets=[key], reason="FULLY_STALE: every file it names is gone")
    _, cs = run_changes(store, [a])
    assert cs.applied == [a]
    execute(store, cs.ops, run_id="run-1")
    after = files(store)
    assert after[ARCH + "remove-feature-flags-after-launch.memory.md"] == before[key] and key not in after
    assert after[ARCH + "trackers/remove-feature-flags-after-launch.refs.yml"] == before[T + "remove-feature-flags-after-launch.refs.yml"]
    assert '"Delete a feature flag within two sprints of full rollout": learning → archived (fully stale; moved to' in after[REM].decode()
    orphans = [x["targets"] for x in automatic(plan_json(store, "--model", "none")) if x["kind"] == "remove_orphan_tracker"]
    assert orphans == [[T + "legacy-soap-client-timeouts.refs.yml"]]  # the fixture's own orphan, not the pruned one's


def test_an_archive_folder_inside_the_memories_folder_is_refused(store):
    cfg = store / ".crux/crux-memories.json"
    data = json.loads(cfg.read_text())
    data["cruxMemories"]["storage"]["compressionSourceArchive"] = "memories/old"
    cfg.write_text(json.dumps(data))
    out = apply_json(store)
    why = dict(((s["kind"], s["why"]) for s in out["skipped"]))
    assert why["merge_duplicate"] == "the archive folder memories/old/20261129 is inside memories: archived files would be read back"
    assert "promote" in [a["kind"] for a in out["applied"]]
    assert not (store / "memories/old").exists()


def test_conflict_newer_archives_the_older_and_keep_both_notes_once(store):
    a, b = L + "ledger-call-order-ledger-first.memory.md", L + "ledger-call-order-payments-first.memory.md"
    dates = {k: meta((store / k).read_bytes()).get("modified") for k in (a, b)}
    older = min((a, b), key=lambda k: dates[k])
    conflict = Action(kind="conflict", targets=[a, b], reason="opposite call orders", needs_user=True)
    _, none = run_changes(store, [conflict])
    assert none.ops == [] and none.skipped[0][1] == "conflicts are applied only with --resolve newer|keep-both"
    _, cs = run_changes(store, [conflict], resolve="newer")
    assert [(op.path, op.dest) for op in cs.ops if op.kind == "move"] == [(older, ARCH + older.rsplit("/", 1)[1])]
    before = files(store)
    _, cs = run_changes(store, [conflict], resolve="keep-both")
    assert not [op for op in cs.ops if op.kind == "move"]
    execute(store, cs.ops, run_id="run-1")
    after = files(store)
    for side, other in ((a, b), (b, a)):
        m = meta(before[other])
        note = f'\n> Note (memconsolidate, {NOW}): conflicts with "{m["title"]}" ({other[len(L):-len(".memory.md")]}) — kept both.\n'
        old_modified = f"modified: {meta(before[side])['modified']}\n".encode()
        assert after[side] == before[side].replace(old_modified, f"modified: {NOW}\n".encode()) + note.encode()
    _, again = run_changes(store, [conflict], resolve="keep-both")
    assert again.ops == [] and again.skipped[0][1] == "both sides already carry the note"


# ---------------------------------------------------------------------------------------------
# Content actions from the stages (hand-made, in the contract's shape)

MEMBERS = [L + "ack-webhooks-before-processing.memory.md", L + "dedupe-webhook-events-by-event-id.memory.md",
           L + "webhook-retries-use-exponential-backoff.memory.md"]


def sha7(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:7]


def consolidation(volumes: int) -> Action:
    title = "Webhook delivery: acknowledge fast, dedupe, expect retries"
    base = {"type": "learning", "created": "2026-10-15", "modified": NOW, "source": "20261015-webhook-hardening",
            "tags": ["webhooks", "latency", "reliability", "payments", "idempotency", "retries"],
            "consolidated_from": ["2403c45", "bf8c860", "fbd665f"]}
    if volumes == 1:
        fm = {"id": sha7(title), "title": title, "description": "How to receive provider webhooks safely.", **base, "strength": 4}
        fm = {k: fm[k] for k in ("id", "title", "description", "type", "strength", "created", "modified", "source", "tags",
                                 "consolidated_from")}
        outputs = [{"path": L + "webhook-delivery.memory.md", "frontmatter": fm,
                    "body": "# Webhook delivery\n\n- Acknowledge within 2 s; process asynchronously.\n"
                            "- Dedupe by event id.\n- Retries back off exponentially for 72 h.\n", "size": 5}]
        return ConsolidateAction(targets=MEMBERS, source="stub:metadata", reason="3 memories share 75% of their tags",
                      to_type="learning", topic=None, fallback=False, outputs=outputs)
    outputs = []
    for n, (strength, body) in enumerate(((3, "# Part 1\n\n" + "- acknowledge fast\n" * 6), (1, "# Part 2\n\n- retries\n")), start=1):
        fm = {"id": sha7(f"webhook-delivery part {n}"), "title": f"Webhook delivery, part {n}", "description": f"Part {n}.",
              **base, "strength": strength, "consolidation_topic": "webhook-delivery", "consolidation_part": n}
        outputs.append({"path": f"{L}webhook-delivery-pt{n}.memory.md", "frontmatter": fm, "body": body,
                        "size": len(body.splitlines())})
    return ConsolidateAction(targets=MEMBERS, source="stub:metadata", reason="over maxConsolidatedSize",
                  to_type="learning", topic="webhook-delivery", volumes=2, fallback=False, outputs=outputs)


def test_consolidate_single_volume_writes_archives_and_merges_trackers(store):
    before = files(store)
    action = consolidation(1)
    _, cs = run_changes(store, [action])
    assert cs.applied == [action] and cs.skipped == []
    execute(store, cs.ops, run_id="run-1")
    after = files(store)
    new = after[L + "webhook-delivery.memory.md"].decode()
    assert new.startswith('---\nid: "') and 'tags: [webhooks, latency, reliability, payments, idempotency, retries]\n' in new
    assert 'consolidated_from: ["2403c45", "bf8c860", "fbd665f"]\n' in new and "created: 2026-10-15\n" in new
    assert new.endswith("---\n\n" + action.outputs[0]["body"])
    for key in MEMBERS:
        assert key not in after and after[ARCH + key.rsplit("/", 1)[1]] == before[key]
    t = tracker(after[T + "webhook-delivery.refs.yml"])
    assert (t["references"], str(t["last_referenced"]), t["strength"]) == (2, "2026-11-10", 4)
    assert after[ARCH + "trackers/webhook-retries-use-exponential-backoff.refs.yml"] == before[T + "webhook-retries-use-exponential-backoff.refs.yml"]
    c = crux.load(store, settings_for(store))
    m = c.by_key()[L + "webhook-delivery.memory.md"]
    assert (m.strength, m.extra["consolidated_from"], m.extra["tracker"]) == (4, ["2403c45", "bf8c860", "fbd665f"], T + "webhook-delivery.refs.yml")
    assert f"file: {L}webhook-delivery.memory.md\n" in after[".crux/memory-index.yml"].decode()
    assert '- "Webhook delivery: acknowledge fast, dedupe, expect retries" ← 3 memories (16 → 5 lines)' in after[REM].decode()


def test_the_merged_file_of_a_consolidation_can_be_compressed_in_the_same_run(store):
    action = consolidation(1)
    merged = action.outputs[0]
    fm = {**merged["frontmatter"], "compressed": True, "compressionTarget": 33, "beforeTokens": 40, "afterTokens": 20,
          "reducedBy": "50%", "compressedDate": NOW, "sourceArchive": ARCH + "webhook-delivery.memory.md"}
    twin = L + "webhook-delivery.memory.crux.md"
    compress = CompressAction(targets=[merged["path"]], source="stub:compress", reason="written by the consolidate",
                      outputs=[{"path": twin, "frontmatter": fm, "body": "⟦CRUX:memory\nΓ{ack<2s; dedupe id; retries 72h}\n⟧\n", "size": 3}])
    for actions in ([action, compress], [compress, action]):
        _, cs = run_changes(store, actions)
        assert [a.kind for a in cs.applied] == [a.kind for a in actions] and cs.skipped == []
    execute(store, cs.ops, run_id="run-1")
    assert not (store / merged["path"]).exists()
    assert (store / ARCH / "webhook-delivery.memory.md").read_text().endswith(merged["body"])
    text = (store / twin).read_text()
    assert meta(text.encode())["consolidated_from"] == ["2403c45", "bf8c860", "fbd665f"] and "reducedBy: 50%\n" in text
    rem = (store / REM).read_text()
    assert "← 3 memories (16 → 3 lines)" in rem and "### Compressed (0)" in rem
    assert tracker((store / T / "webhook-delivery.refs.yml").read_bytes())["references"] == 2


def test_consolidate_into_two_volumes_distributes_trackers_by_size(store):
    (store / T / "ack-webhooks-before-processing.refs.yml").write_text(
        "slug: ack-webhooks-before-processing\nreferences: 7\nlast_referenced: 2026-11-21\nstrength: 1\nrecent_references: []\n")
    _, cs = run_changes(store, [consolidation(2)])
    assert cs.skipped == []
    execute(store, cs.ops, run_id="run-1")
    t1 = tracker((store / T / "webhook-delivery-pt1.refs.yml").read_bytes())
    t2 = tracker((store / T / "webhook-delivery-pt2.refs.yml").read_bytes())
    assert t1["references"] + t2["references"] == 9 and t1["references"] > t2["references"] >= 1
    assert str(t1["last_referenced"]) == str(t2["last_referenced"]) == "2026-11-21"
    assert (t1["strength"], t2["strength"]) == (3, 1)
    for n in (1, 2):
        m = meta((store / f"{L}webhook-delivery-pt{n}.memory.md").read_bytes())
        assert (m["consolidation_topic"], m["consolidation_part"]) == ("webhook-delivery", n)
    assert not [f for f in (store / T).iterdir() if f.name.startswith(("ack-", "dedupe-", "webhook-retries"))]
    plan = plan_json(store, "--model", "none")
    assert not [a for a in automatic(plan) if set(a["targets"]) & {f"{L}webhook-delivery-pt1.memory.md", f"{L}webhook-delivery-pt2.memory.md"}]


def test_rebalance_rewrites_volumes_and_archives_the_surplus(store):
    _, cs = run_changes(store, [consolidation(2)])
    execute(store, cs.ops, run_id="run-1")
    vols = [f"{L}webhook-delivery-pt1.memory.md", f"{L}webhook-delivery-pt2.memory.md"]
    old = {k: (store / k).read_bytes() for k in vols}
    fm = {**meta(old[vols[0]]), "strength": 4, "title": "Webhook delivery", "modified": NOW}
    fm = {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in fm.items()}
    action = RebalanceVolumesAction(targets=vols, topic="webhook-delivery", reason="the topic fits in fewer volumes",
                    outputs=[{"path": vols[0], "frontmatter": fm, "body": "# Webhook delivery\n\nall of it\n", "size": 3}])
    _, cs = run_changes(store, [action])
    assert cs.skipped == []
    execute(store, cs.ops, run_id="run-2")
    assert meta((store / vols[0]).read_bytes())["strength"] == 4 and not (store / vols[1]).exists()
    archived = sorted(p.name for p in (store / ARCH).iterdir() if p.name.startswith("webhook-delivery"))
    assert archived == ["webhook-delivery-pt1.memory.md", "webhook-delivery-pt2.memory.md"]
    assert (store / ARCH / "webhook-delivery-pt2.memory.md").read_bytes() == old[vols[1]]
    t = tracker((store / T / "webhook-delivery-pt1.refs.yml").read_bytes())
    assert (t["references"], t["strength"]) == (2, 4) and not (store / T / "webhook-delivery-pt2.refs.yml").exists()


def test_content_actions_never_overwrite_and_keep_strength_sums(store):
    (store / L / "webhook-delivery.memory.md").write_text("---\ntype: learning\n---\nsomeone else's\n")
    _, cs = run_changes(store, [consolidation(1)])
    assert cs.ops == [] and "already exists" in cs.skipped[0][1]
    (store / L / "webhook-delivery.memory.md").unlink()
    bad = consolidation(1)
    bad.outputs[0]["frontmatter"]["strength"] = 2
    _, cs = run_changes(store, [bad])
    assert cs.ops == [] and cs.skipped[0][1] == "strength not preserved: members sum to 4, outputs to 2"
    moved = Action(kind="promote", targets=[MEMBERS[0]], from_type="learning", to_type="core", reason="x")
    _, cs = run_changes(store, [consolidation(1), moved])
    assert [a.kind for a in cs.applied] == ["promote"]
    assert "is changed by promote in this run" in cs.skipped[0][1]


def test_compress_archives_the_original_before_writing_the_twin(store):
    key = L + "payment-outage-incident-runbook.memory.md"
    original = (store / key).read_bytes()
    fm = {**{k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in meta(original).items()},
          "compressed": True, "compressionTarget": 33, "beforeTokens": 900, "afterTokens": 290, "reducedBy": "68%",
          "compressedDate": NOW, "sourceArchive": ARCH + "payment-outage-incident-runbook.memory.md"}
    body = "⟦CRUX:memory\nΓ.outage{1.status page 2.pause retries 3.queue captures}\n⟧\n"
    action = CompressAction(targets=[key], source="stub:compress", reason="61 lines ≥ 40",
                    outputs=[{"path": L + "payment-outage-incident-runbook.memory.crux.md", "frontmatter": fm, "body": body, "size": 3}])
    _, cs = run_changes(store, [action])
    assert cs.skipped == []
    twin = L + "payment-outage-incident-runbook.memory.crux.md"
    # the move carries the state it was checked in: the journal refuses it if the file changed since
    sha = hashlib.sha256(original).hexdigest()
    assert cs.ops[:2] == [Op("move", key, dest=ARCH + "payment-outage-incident-runbook.memory.md", expect=sha), cs.ops[1]]
    assert (cs.ops[1].kind, cs.ops[1].path) == ("write", twin)
    execute(store, cs.ops, run_id="run-1")
    assert (store / ARCH / "payment-outage-incident-runbook.memory.md").read_bytes() == original
    assert not (store / key).exists()
    text = (store / twin).read_text()
    head = original.decode().split("\n---\n", 1)[0]
    assert text.startswith(head + "\ncompressed: true\n")  # the original's lines, verbatim, then the new keys
    assert "reducedBy: 68%\n" in text and f"sourceArchive: {ARCH}payment-outage-incident-runbook.memory.md\n" in text
    assert text.endswith("---\n\n" + body)
    assert '- "Runbook for a payment provider outage": 50 → 3 lines (94% reduction)' in (store / REM).read_text()


def test_the_stub_stages_apply_end_to_end_and_undo(store):
    before = snapshot(store)
    res = apply(store, "--json", "--model", "stub")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["skipped"] == []
    # the fixture has consolidation and compression material: the stages must have proposed both
    assert {"consolidate", "compress"} <= {a["kind"] for a in out["applied"]}
    after = files(store)
    for a in out["applied"]:
        if a["kind"] in ("consolidate", "rebalance_volumes", "compress"):
            for o in a["outputs"]:
                compressed = o["path"].replace(".memory.md", ".memory.crux.md")
                assert o["path"] in after or compressed in after, o["path"]
            for t in a["targets"]:
                if t in before:
                    assert t not in after and after[ARCH + t.rsplit("/", 1)[1]] == before[t]
    plan = plan_json(store, "--model", "stub")
    assert not [a for a in automatic(plan) if a["kind"] in ("consolidate", "rebalance_volumes", "compress", "rebuild_index")]
    assert run_cli("undo", str(store)).returncode == 0
    assert snapshot(store) == before


# ---------------------------------------------------------------------------------------------
# A crash mid-apply, and the real store


# The fixture run copies 14 files, saves its journal (step 15), then runs 24 ops (steps 16-39):
# killed while copying, right after the first change, in the middle, and before the last op.
@pytest.mark.parametrize("step", [4, 16, 27, 39])
def test_a_killed_apply_is_rolled_back_by_the_next_plan(store, step):
    before, killed = kill_apply_then_recover(store, step)
    if step > 15:
        assert killed != before  # killed after the store started to change
    assert apply(store).returncode == 0


def test_the_real_crux_store_applies_and_undoes(tmp_path):
    root = tmp_path / "real"
    copy_real(REAL, root)
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)  # the checked-in copy is read-only
    before = snapshot(root)
    # the six members earlier consolidations left behind: their archive waits for the user
    res = apply(root, "--json", now="2026-05-25")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["applied"] == [] and snapshot(root) == before
    res = apply(root, "--json", "--select", "archive", now="2026-05-25")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    out = json.loads(res.stdout)
    # chosen, they are archived as those consolidations would have
    assert [a["kind"] for a in out["applied"]] == ["archive"] * 6
    assert len(list((root / ".ai-ignored/memories/sources/20260525").glob("*.memory.md"))) == 6
    assert (root / ".ai-ignored/executed/rem-20260525.md").is_file()
    plan = run_cli("plan", str(root), "--json", "--now", "2026-05-25", "--model", "none")
    assert json.loads(plan.stdout)["actions"] == []
    res = run_cli("undo", str(root))
    assert res.returncode == 0, res.stderr
    assert snapshot(root) == before


# ---------------------------------------------------------------------------------------------
# Small pieces


def test_tracker_strength_is_a_one_line_edit():
    text = "# Managed — do not edit\nslug: a\nreferences: 5\nlast_referenced: 2026-11-22\nstrength: 3\nrecent_references:\n  - conversation_id: \"c1\"\n"
    assert set_tracker_strength(text, 5) == text.replace("strength: 3\n", "strength: 5\n")
    missing = "slug: a\nreferences: 5\nlast_referenced: 2026-11-22\nrecent_references: []\n"
    assert set_tracker_strength(missing, 2) == missing.replace("2026-11-22\n", "2026-11-22\nstrength: 2\n")
    assert set_tracker_strength("slug: [broken\n", 2) is None


def test_new_front_matter_is_written_in_the_store_style():
    fm = {"id": "0123456", "title": "A: title", "type": "learning", "strength": 3, "created": "2026-10-15",
          "tags": ["a", "b c"], "consolidated_from": ["0123456", "abc1234"], "reducedBy": "66%", "compressed": True}
    text = render_frontmatter(fm)
    assert text == ('id: "0123456"\ntitle: "A: title"\ntype: "learning"\nstrength: 3\ncreated: 2026-10-15\n'
                    'tags: [a, b c]\nconsolidated_from: ["0123456", "abc1234"]\nreducedBy: 66%\ncompressed: true\n')
    assert yaml.safe_load(text)["created"] == dt.date(2026, 10, 15)
