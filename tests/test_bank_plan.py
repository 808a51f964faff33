import json
import shutil

from helpers import FIXTURES, kinds, plan_json, run_cli


def test_bank_fixture_plan_exact():
    plan = plan_json(FIXTURES / "bank", "--model", "none")
    assert plan["schema"] == "memconsolidate.plan/1"
    assert plan["layout"] == "bank"
    assert plan["memories"] == 23  # m013 is superseded; m014's revision 2 replaces revision 1
    assert kinds(plan["actions"]) == [
        ("merge_duplicate", ("blog/m001", "blog/m002", "blog/m003")),
        ("merge_duplicate", ("blog/m011", "blog/m010")),
        ("merge_duplicate", ("blog/m016", "blog/m017")),
        ("promote_rule", ("blog/m012",)),
        ("promote_rule", ("ops/o001",)),
        ("promote_rule", ("ops/o007",)),
    ]
    assert all(a["needs_user"] for a in plan["actions"] if a["kind"] == "promote_rule")
    assert kinds(plan["findings"]) == [
        ("parse_error", ("blog/memories.jsonl",)),
        ("capped", ("ops/o002", "ops/o003", "ops/o004", "ops/o006")),
        ("reorder_candidate", ("blog/m004", "blog/m005")),
        ("reorder_candidate", ("blog/m006", "blog/m007")),
    ]
    assert plan["errors"] == []


def test_plan_is_byte_identical_across_runs_and_file_order(tmp_path):
    a = run_cli("plan", str(FIXTURES / "bank"), "--json", "--now", "2026-11-29", "--model", "none")
    # the same store copied with its banks created in the opposite order
    copy = tmp_path / "bank"
    copy.mkdir()
    for name in sorted((p.name for p in (FIXTURES / "bank").iterdir()), reverse=True):
        src = FIXTURES / "bank" / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, copy / name)
    b = run_cli("plan", str(copy), "--json", "--now", "2026-11-29", "--model", "none")
    pa, pb = json.loads(a.stdout), json.loads(b.stdout)
    pa.pop("root"), pb.pop("root")
    assert pa == pb
    c = run_cli("plan", str(FIXTURES / "bank"), "--json", "--now", "2026-11-29", "--model", "none")
    assert a.stdout == c.stdout
