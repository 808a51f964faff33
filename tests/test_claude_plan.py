"""`plan` on the claude fixture: the exact actions and findings, no writes, stable output."""

import hashlib
import json
import os
import shutil
from pathlib import Path

from helpers import FIXTURES, NOW, copy_store, kinds, plan_json, run_cli, with_git_history

A = ".claude/agent-memory/backend-architect/"
P = ".claude/projects/-home-dev-acme-shop/memory/"


def tree_digest(root: Path) -> dict[str, tuple[str, float]]:
    return {
        p.relative_to(root).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_fixture_actions_exact(tmp_path):
    # with git history showing the files deleted: the prunes are automatic
    plan = plan_json(with_git_history(copy_store(FIXTURES / "claude", tmp_path / "claude")), "--model", "none")
    assert plan["layout"] == "claude"
    assert plan["memories"] == 23  # 24 topic files, one with malformed YAML
    assert kinds(plan["actions"]) == [
        ("merge_duplicate", (P + "project_ci_cache.md", P + "project_ci_cache_copy.md")),
        ("prune_stale", (A + "project_export_jobs.md",)),
        ("prune_stale", (A + "project_legacy_billing.md",)),
        ("rebuild_index", (A + "MEMORY.md",)),
        # "moves to a new module this week", written 2026-11-20 (issue 15)
        ("absolutize_dates", (A + "project_cache_layer.md",)),
    ]
    by = {(a["kind"], a["targets"][0]): a for a in plan["actions"]}
    assert by[("merge_duplicate", P + "project_ci_cache.md")]["survivor"] == P + "project_ci_cache.md"
    billing = by[("prune_stale", A + "project_legacy_billing.md")]
    assert billing["reason"] == (
        "fully stale, every verifiable ref is missing: src/billing/invoice.ts, src/billing/tax.ts, symbol computeTax"
    )
    assert billing["missing"] == ["src/billing/invoice.ts", "src/billing/tax.ts", "computeTax"]
    assert billing["needs_user"] is False and billing["source"] == "deterministic"
    assert by[("rebuild_index", A + "MEMORY.md")]["reason"] == (
        f"1 file not indexed: {A}project_cache_layer.md; 1 entry without a file: {A}old_notes.md (“deleted last quarter”)"
    )


def test_without_git_history_a_prune_waits_for_the_user():
    plan = plan_json(FIXTURES / "claude", "--model", "none")  # nested in this project's tree: not its history
    prunes = [a for a in plan["actions"] if a["kind"] == "prune_stale"]
    assert [a["targets"][0] for a in prunes] == [A + "project_export_jobs.md", A + "project_legacy_billing.md"]
    assert all(a["needs_user"] and "no git history" in a["needs_user_reason"] for a in prunes)


def test_fixture_findings_exact():
    plan = plan_json(FIXTURES / "claude", "--model", "none")
    others = [(f["kind"], tuple(f["targets"])) for f in plan["findings"] if f["kind"] != "stale"]
    assert others == [
        ("parse_error", (A + "broken_frontmatter.md",)),
        ("reorder_candidate", (P + "project_lint_order.md", P + "project_lint_order_reworded.md")),
    ]
    stale = {f["targets"][0]: f for f in plan["findings"] if f["kind"] == "stale"}
    assert {k: (f["class"], f.get("kept_reason")) for k, f in stale.items()} == {
        A + "feedback_error_handling.md": ("PARTIALLY_STALE", "prune-guard: type:feedback value is the lesson, not its file refs"),
        A + "notes_tooling.md": ("EVERGREEN", None),  # no front matter
        A + "project_cache_layer.md": ("PARTIALLY_STALE", "prune-guard: modified within 14d (2026-11-20)"),
        A + "project_export_jobs.md": ("FULLY_STALE", None),  # consulted, but 59 days ago
        A + "project_external_tools.md": ("EVERGREEN", None),  # only unverifiable refs
        A + "project_legacy_billing.md": ("FULLY_STALE", None),  # its consult entry is after --now
        A + "project_memory_policy.md": ("EVERGREEN", None),
        A + "project_queue_workers.md": ("PARTIALLY_STALE", "prune-guard: carries a do-not/never directive"),
        A + "project_router_refactor.md": ("PARTIALLY_STALE", None),
        A + "project_search_index.md": (
            "PARTIALLY_STALE",
            "consult-gate: looked up as 'search' on 2026-11-25 (within 14d)",
        ),
        A + "project_session_store.md": ("FRESH", None),
        A + "reference_payment_gateway.md": ("PARTIALLY_STALE", "prune-guard: type:reference value is the lesson, not its file refs"),
        A + "user_preferences.md": ("PARTIALLY_STALE", "prune-guard: type:user is never auto-pruned"),
        P + "feedback_npm.md": ("EVERGREEN", None),
        P + "feedback_pnpm.md": ("EVERGREEN", None),
        P + "project_ci_cache.md": ("EVERGREEN", None),
        P + "project_ci_cache_copy.md": ("EVERGREEN", None),
        P + "project_date_helpers.md": ("PARTIALLY_STALE", None),  # file gone, symbol still found
        P + "project_formatters.md": ("PARTIALLY_STALE", None),  # file there, a symbol gone
        P + "project_lint_order.md": ("EVERGREEN", None),
        P + "project_lint_order_reworded.md": ("EVERGREEN", None),
        P + "project_migrations.md": ("FRESH", None),
        P + "user_role.md": ("EVERGREEN", None),
    }
    assert stale[A + "project_external_tools.md"]["unverifiable"] == [
        "/etc/nginx/nginx.conf",
        "https://docs.example.com/setup/install.md",
        "vendor/acme/sdk.ts",
        "~/.claude/hooks/pre-commit.sh",
    ]
    assert stale[A + "project_router_refactor.md"]["missing"] == ["src/api/legacy_routes.ts"]
    assert stale[P + "project_formatters.md"]["missing"] == ["LegacyFormatter"]
    assert stale[P + "project_date_helpers.md"]["missing"] == ["src/utils/date_helpers.ts"]
    assert stale[P + "project_migrations.md"]["reason"] == "found: 1 file ref and 2 symbols"


def test_fixture_types_and_quirks_load():
    from pipeline.config import Settings
    from pipeline.layouts.registry import open_store

    corpus, _ = open_store(FIXTURES / "claude", Settings())
    by = {m.key: m for m in corpus.memories}
    assert by[A + "reference_payment_gateway.md"].type == "reference"  # nested metadata.type
    assert by[A + "notes_tooling.md"].type is None
    assert by[A + "project_queue_workers.md"].modified.isoformat() == "2026-04-10"  # `updated:`


def test_plan_never_writes_and_is_byte_identical(tmp_path):
    store = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude", store)
    before = tree_digest(store)
    dirs_before = sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_dir())
    runs = [run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none") for _ in range(2)]
    human = run_cli("plan", str(store), "--now", NOW, "--model", "none")
    assert all(r.returncode == 0 for r in runs + [human]), [r.stderr for r in runs + [human]]
    assert runs[0].stdout == runs[1].stdout
    assert tree_digest(store) == before
    assert sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_dir()) == dirs_before
    assert "FULLY_STALE" in human.stdout and "Traceback" not in human.stderr


def test_plan_does_not_depend_on_checkout_time(tmp_path):
    """Every age that matters comes from front matter: touching all files changes nothing."""
    store = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude", store)
    a = json.loads(run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none").stdout)
    for p in store.rglob("*"):
        if p.is_file():
            os.utime(p, (0, 0))  # 1970: every file "old"
    b = json.loads(run_cli("plan", str(store), "--json", "--now", NOW, "--model", "none").stdout)
    assert a == b
