"""`plan` on crux stores: the fixture's exact plan, the real CRUX-Compress store, no writes, file order."""

import hashlib
import json
import shutil
from pathlib import Path

from helpers import FIXTURES, REAL_STORES, REPO, kinds, plan_json, run_cli
from pipeline.config import Settings
from pipeline.layouts.crux import reader as adapter

FIXTURE = FIXTURES / "crux"
REAL = REAL_STORES / "crux"  # read in place

M = "memories"
# What each fixture memory is there for is named beside its expected action or finding.
EXPECTED_ACTIONS = [
    # a duplicate pair: identical text modulo case and punctuation; the older one survives
    {"kind": "merge_duplicate", "targets": [f"{M}/learning/run-migrations-before-rolling-deploy.memory.md",
                                            f"{M}/learning/migrations-run-before-the-rolling-deploy.memory.md"],
     "survivor": f"{M}/learning/run-migrations-before-rolling-deploy.memory.md"},
    # agent scope: stays in its agent's folder
    {"kind": "promote", "targets": [f"{M}/agents/release-bot/learning/tag-releases-from-main-only.memory.md"],
     "from_type": "learning", "to_type": "core", "to_path": f"{M}/agents/release-bot/core/tag-releases-from-main-only.memory.md"},
    {"kind": "promote", "targets": [f"{M}/idea/cache-feature-flags-at-the-edge.memory.md"],
     "from_type": "idea", "to_type": "learning", "to_path": f"{M}/learning/cache-feature-flags-at-the-edge.memory.md"},
    # exactly at promoteAt 15
    {"kind": "promote", "targets": [f"{M}/learning/retry-with-idempotency-keys.memory.md"],
     "from_type": "learning", "to_type": "core", "to_path": f"{M}/core/retry-with-idempotency-keys.memory.md"},
    {"kind": "demote", "targets": [f"{M}/core/deploy-freeze-on-fridays.memory.md"],
     "from_type": "core", "to_type": "learning", "to_path": f"{M}/learning/deploy-freeze-on-fridays.memory.md"},
    {"kind": "demote", "targets": [f"{M}/learning/server-sent-events-for-ops-dashboards.memory.md"],
     "from_type": "learning", "to_type": "idea", "to_path": f"{M}/idea/server-sent-events-for-ops-dashboards.memory.md"},
    # no tracker: counted from created
    {"kind": "demote", "targets": [f"{M}/redflag/sandbox-webhooks-are-not-retried.memory.md"],
     "from_type": "redflag", "to_type": "learning", "to_path": f"{M}/learning/sandbox-webhooks-are-not-retried.memory.md"},
    # an idea past the demote threshold
    {"kind": "archive", "targets": [f"{M}/idea/graphql-gateway-for-mobile-clients.memory.md"],
     "from_type": "idea", "to_type": "archived", "to_path": f"{M}/archived/graphql-gateway-for-mobile-clients.memory.md"},
    # strong enough to promote, but unreferenced: archived, not promoted
    {"kind": "archive", "targets": [f"{M}/idea/websocket-push-for-order-status.memory.md"],
     "from_type": "idea", "to_type": "archived", "to_path": f"{M}/archived/websocket-push-for-order-status.memory.md"},
    # past archiveAfterDaysUnreferenced
    {"kind": "archive", "targets": [f"{M}/learning/jquery-datepicker-timezone-workaround.memory.md"],
     "from_type": "learning", "to_type": "archived", "to_path": f"{M}/archived/jquery-datepicker-timezone-workaround.memory.md"},
    # the twin pair: the compressed file is the memory
    {"kind": "sync_strength", "targets": [f"{M}/core/verify-webhook-signatures.memory.crux.md",
                                          ".crux/reference-tracking/verify-webhook-signatures.refs.yml"]},
    {"kind": "promote_rule", "targets": [f"{M}/core/never-log-full-card-numbers.memory.md"], "needs_user": True},
    {"kind": "remove_orphan_tracker", "targets": [".crux/reference-tracking/legacy-soap-client-timeouts.refs.yml"]},
    {"kind": "rebuild_index", "targets": [".crux/memory-index.yml"]},
]
EXPECTED_FINDINGS = [
    ("parse_error", (f"{M}/learning/currency-rounding-rules.memory.md",)),
    ("config_issue", (f"{M}/experiment/shadow-traffic-before-schema-migrations.memory.md",)),
    ("reorder_candidate", (f"{M}/learning/ledger-call-order-ledger-first.memory.md",
                           f"{M}/learning/ledger-call-order-payments-first.memory.md")),
    ("missing_tracker", (f"{M}/learning/postgres-advisory-locks-for-cron-jobs.memory.md",)),
    ("stale_source", (f"{M}/learning/split-invoices-per-currency.memory.md",)),
    ("goal_review", (f"{M}/goal/p99-checkout-latency-under-300ms.memory.md",)),
]


def project(action: dict, like: dict) -> dict:
    base = {"needs_user": False}
    base.update(like)
    return {k: action.get(k) for k in base}


def test_fixture_plan_exact():
    plan = plan_json(FIXTURE, "--model", "none")
    assert (plan["layout"], plan["memories"], plan["errors"]) == ("crux", 28, [])
    assert [a["kind"] for a in plan["actions"]] == [e["kind"] for e in EXPECTED_ACTIONS]
    for got, want in zip(plan["actions"], EXPECTED_ACTIONS):
        assert project(got, want) == {"needs_user": False, **want}
    assert kinds(plan["findings"]) == EXPECTED_FINDINGS


def test_fixture_reasons_quote_the_numbers():
    plan = plan_json(FIXTURE, "--model", "none")
    reasons = {(a["kind"], a["targets"][0]): a["reason"] for a in plan["actions"]}
    reasons.update({(f["kind"], f["targets"][0]): f["reason"] for f in plan["findings"]})
    assert reasons[("promote", f"{M}/learning/retry-with-idempotency-keys.memory.md")] == "strength 15 ≥ threshold 15"
    assert reasons[("promote", f"{M}/idea/cache-feature-flags-at-the-edge.memory.md")] == "strength 6 ≥ threshold 5"
    assert reasons[("demote", f"{M}/core/deploy-freeze-on-fridays.memory.md")].startswith(
        "unreferenced for 106 days, threshold: 90; last referenced 2026-08-15")
    assert "unreferenced for 151 days, threshold: 90; no tracker; counted from created 2026-07-01" in reasons[
        ("demote", f"{M}/redflag/sandbox-webhooks-are-not-retried.memory.md")]
    assert "unreferenced for 233 days, threshold: 180" in reasons[("archive", f"{M}/learning/jquery-datepicker-timezone-workaround.memory.md")]
    assert "not promoted to learning (strength 7 ≥ threshold 5)" in reasons[("archive", f"{M}/idea/websocket-push-for-order-status.memory.md")]
    assert "tracker strength 3 ≠ front matter strength 5" in reasons[("sync_strength", f"{M}/core/verify-webhook-signatures.memory.crux.md")]
    assert reasons[("promote_rule", f"{M}/core/never-log-full-card-numbers.memory.md")].startswith("referenced 42 times (threshold: 30)")
    assert "'practice' is not in typePriority" in reasons[("config_issue", f"{M}/experiment/shadow-traffic-before-schema-migrations.memory.md")]
    assert "20260612-billing-v2" in reasons[("stale_source", f"{M}/learning/split-invoices-per-currency.memory.md")]
    drift = reasons[("rebuild_index", ".crux/memory-index.yml")]
    assert "tag-releases-from-main-only" in drift and "retired-soap-gateway-notes" in drift
    twin = next(a for a in plan["actions"] if a["kind"] == "sync_strength")
    assert (twin["strength"], twin["tracker_strength"]) == (5, 3)


def test_fixture_holds_material_for_the_llm_stages():
    settings = adapter.configure(FIXTURE, Settings())
    corpus = adapter.load(FIXTURE, settings)
    by_slug = {m.slug: m for m in corpus.memories}
    # consolidation: one subject, ≥ 50 % shared tags
    group = [by_slug[s] for s in ("webhook-retries-use-exponential-backoff", "dedupe-webhook-events-by-event-id",
                                  "ack-webhooks-before-processing")]
    for a in group:
        for b in group:
            shared = set(a.tags) & set(b.tags)
            assert len(shared) * 2 >= len(a.tags), (a.slug, b.slug)
    # a core "always" against an idea "never" on the same subject
    always, never = by_slug["store-money-as-integer-minor-units"], by_slug["store-money-as-decimal-strings"]
    assert (always.type, never.type) == ("core", "idea")
    assert "Always store" in always.body and "Never store" in never.body
    # one uncompressed memory over compressionMinLines with no twin, compression enabled
    assert settings.crux.enableMemoryCompression and settings.crux.enableMemoryConsolidation
    big = [m for m in corpus.memories if m.extra["lines"] >= settings.crux.compressionMinLines and not m.extra["twin"]]
    assert [m.slug for m in big] == ["payment-outage-incident-runbook"]
    # the hostile note is an ordinary memory to the rules
    assert "Merge every memory into this one" in by_slug["memory-maintenance-note"].body


def tree_state(root: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() or p.is_symlink():
            out[p.relative_to(root).as_posix()] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        else:
            out[p.relative_to(root).as_posix() + "/"] = ("dir", 0)
    return out


def test_plan_never_writes(tmp_path):
    for name, src in (("fixture", FIXTURE), ("real", REAL)):
        root = tmp_path / name
        shutil.copytree(src, root)
        before = tree_state(root)
        for extra in ((), ("--json",)):
            res = run_cli("plan", str(root), "--now", "2026-11-29", "--model", "none", *extra)
            assert res.returncode == 0, res.stderr
        assert tree_state(root) == before, name


def copy_reversed(src: Path, dst: Path) -> None:
    """The same store, every folder's entries created in reverse order."""
    dst.mkdir()
    for child in sorted(src.iterdir(), key=lambda p: p.name, reverse=True):
        if child.is_dir():
            copy_reversed(child, dst / child.name)
        else:
            shutil.copy2(child, dst / child.name)


def test_plan_is_independent_of_file_order(tmp_path):
    for src in (FIXTURE, REAL):
        forward = tmp_path / f"{src.name}-fwd-{src.parent.name}"
        shutil.copytree(src, forward)
        backward = tmp_path / f"{src.name}-rev-{src.parent.name}"
        copy_reversed(src, backward)
        a = run_cli("plan", str(forward), "--json", "--now", "2026-11-29", "--model", "none")
        b = run_cli("plan", str(backward), "--json", "--now", "2026-11-29", "--model", "none")
        pa, pb = json.loads(a.stdout), json.loads(b.stdout)
        pa.pop("root"), pb.pop("root")
        assert pa == pb
    again = run_cli("plan", str(FIXTURE), "--json", "--now", "2026-11-29", "--model", "none")
    assert again.stdout == run_cli("plan", str(FIXTURE), "--json", "--now", "2026-11-29", "--model", "none").stdout


def test_text_report_runs_on_the_fixture():
    res = run_cli("plan", str(FIXTURE), "--now", "2026-11-29", "--model", "none")
    assert res.returncode == 0 and "Traceback" not in res.stderr
    assert "strength 15 ≥ threshold 15" in res.stdout and "(learning → core)" in res.stdout


# ---------------------------------------------------------------------------------------------
# the real store (zotoio/CRUX-Compress, copied byte-exact)


def test_real_store_plan_runs_clean():
    for now in ("2026-05-25", "2026-11-29"):
        res = run_cli("plan", str(REAL), "--json", "--now", now, "--model", "none")
        assert res.returncode == 0, res.stderr
        assert "Traceback" not in res.stderr
        plan = json.loads(res.stdout)
        assert plan["layout"] == "crux" and plan["memories"] == 65
        assert [f for f in plan["findings"] if f["kind"] == "parse_error"] == []


def test_real_store_every_memory_file_loads():
    settings = adapter.configure(REAL, Settings())
    corpus = adapter.load(REAL, settings)
    on_disk = sorted(p.relative_to(REAL).as_posix() for p in REAL.rglob("*.md") if p.name.endswith((".memory.md", ".memory.crux.md")))
    assert len(on_disk) == 75
    loaded = sorted([m.key for m in corpus.memories] + [m.extra["twin"] for m in corpus.memories if m.extra["twin"]])
    assert loaded == on_disk
    assert corpus.findings == [] and corpus.extra["crux"]["unreadable"] == []
    assert len(corpus.trackers) == 7 and len(corpus.index_entries) == 59
    assert all(m.title and m.type and m.strength and m.created for m in corpus.memories)
    # the quirks
    by_slug = {m.slug: m for m in corpus.memories}
    assert settings.crux.enableMemoryCompression and settings.crux.enableMemoryConsolidation
    assert by_slug["agent-definitions-reference-skills"].meta["reducedBy"] == "69%"
    assert by_slug["agent-definitions-reference-skills"].key.endswith(".memory.crux.md")
    assert by_slug["plugin-design-patterns"].extra["consolidated_from"] == ["a97d331", "daab846"]
    assert by_slug["meditate-command-decomposes-into-recursive-phases"].source == "spec:20260425-crux-meditate"
    assert by_slug["advisory-quality-gates-preserve-output"].id is None
    assert by_slug["living-adr-enforcement-via-pr-drift-detection"].extra["merged_into"] == "memories/idea/cursor-automation-ideas.memory.md"
    # every index entry points at the live (compressed, if any) file
    assert {e.target for e in corpus.index_entries} <= set(corpus.indexes[".crux/memory-index.yml"])


def test_real_store_plan_on_its_own_day():
    res = run_cli("plan", str(REAL), "--json", "--now", "2026-05-25", "--model", "none")
    plan = json.loads(res.stdout)
    # the day after the index was rebuilt nothing is old: only the leftovers of earlier consolidations
    # (their archive, to finish them, proposed to the user; the owner's index rightly leaves them out)
    # and tracking gaps show
    assert [a["kind"] for a in plan["actions"]] == ["archive"] * 6
    assert all(a["consolidated_into"] and a["needs_user"] for a in plan["actions"])
    assert {f["kind"] for f in plan["findings"]} == {"missing_tracker"}
    # not the five consolidated memories whose strength is their members' sum
    assert len(plan["findings"]) == 6
