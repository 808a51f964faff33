"""Every real Claude Code store in ../shared/real-stores/wild/, planned in place as a long-lived
checkout sees it (copied to tmp_path, mtimes aged 200 days as scripts/wild_stores.py does): no
automatic `prune_stale`, and at most 2 stub conflicts over all stores (issue 11)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
from pathlib import Path

import pytest

from helpers import REPO, run_cli

WILD = REPO.parent / "shared" / "real-stores" / "wild"
NOW = "2026-12-01"
AGE_DAYS = 200

pytestmark = pytest.mark.skipif(not WILD.is_dir(), reason=f"the wild stores are not beside the clone ({WILD})")


def _wild_script():
    """scripts/wild_stores.py, whose aged copy this test shares (one way to age a store)."""
    spec = importlib.util.spec_from_file_location("wild_stores", REPO / "scripts" / "wild_stores.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def aged_copy(src: Path, dest: Path) -> Path:
    when = (dt.datetime.fromisoformat(NOW) - dt.timedelta(days=AGE_DAYS)).timestamp()
    _wild_script().aged_copy(src, dest, when)
    return dest


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> dict[str, dict | str]:
    tmp = tmp_path_factory.mktemp("wild")
    out: dict[str, dict | str] = {}
    for src in sorted(p for p in WILD.iterdir() if p.is_dir()):
        store = aged_copy(src, tmp / src.name)
        res = run_cli("plan", str(store), "--json", "--model", "stub", "--now", NOW, "--no-cache")
        out[src.name] = res.stdout if res.returncode == 0 else f"exit {res.returncode}: {res.stderr.strip()}"
    return {k: json.loads(v) if not v.startswith("exit ") else v for k, v in out.items()}


def test_every_wild_store_is_planned(plans):
    missing = {k: v for k, v in plans.items() if isinstance(v, str)}
    if set(missing) - {"webeverything"}:
        pytest.fail(f"stores not planned: {missing}")
    if "webeverything" in missing:
        # Its memory folder is reached through an in-repository symlink; discovery is issue 11 item 2
        # (another branch). Until then it is not found at all, which is not a judgement to check here.
        pytest.skip(f"webeverything not found on this branch (store discovery, item 2): {missing['webeverything'][:120]}")


def test_no_automatic_prune_in_any_wild_store(plans):
    automatic = [(name, a["targets"][0]) for name, p in plans.items() if isinstance(p, dict)
                 for a in p["actions"] if a["kind"] == "prune_stale" and not a["needs_user"]]
    assert automatic == []


def test_at_most_two_stub_conflicts_over_all_wild_stores(plans):
    conflicts = [(name, a["targets"], a["reason"]) for name, p in plans.items() if isinstance(p, dict)
                 for a in p["actions"] if a["kind"] == "conflict"]
    assert len(conflicts) <= 2, conflicts
    for _name, _targets, reason in conflicts:
        assert "\u201c" in reason  # each quotes the two clauses that clash
