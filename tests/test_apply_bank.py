import json

from helpers import FIXTURES, NOW, plan_json, run_cli, snapshot


def apply(store, *extra):
    return run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", *extra)


def records(path):
    return [json.loads(l) for l in path.read_text().splitlines() if l.startswith("{") and l.endswith("}")]


def test_apply_supersedes_and_reinforces_without_rewriting_history(bank_store):
    store = bank_store
    before = snapshot(store)
    res = apply(store)
    assert res.returncode == 0, res.stderr
    after = snapshot(store)
    blog = "blog/memories.jsonl"
    # append-only: the old bytes are a prefix of the new ones
    assert after[blog].startswith(before[blog])
    added = [json.loads(l) for l in after[blog][len(before[blog]):].decode().splitlines()]
    by_id = {r["id"]: r for r in added}
    assert by_id["m002"]["superseded_by"] == "m001" and by_id["m003"]["superseded_by"] == "m001"
    assert by_id["m001"]["corroboration"] == 2 + 1 + 1
    assert by_id["m010"]["superseded_by"] == "m011"  # pinned m011 survives
    assert by_id["m017"]["superseded_by"] == "m016"
    assert "m011" in by_id and by_id["m011"]["superseded_by"] is None
    assert all(r["revision"] == 2 for r in added)
    # the capped remainder and the untouched files
    assert after["ops/memories.jsonl"] == before["ops/memories.jsonl"]
    assert after["blog/rules/style.md"] == before["blog/rules/style.md"]
    # the malformed line is still there, byte for byte
    assert b'{"id": "m018", "text": "a truncated line that is not valid JSON"\n' in after[blog]


def test_undo_restores_byte_for_byte(bank_store):
    store = bank_store
    before = snapshot(store)
    assert apply(store).returncode == 0
    assert snapshot(store) != before
    res = run_cli("undo", str(store))
    assert res.returncode == 0, res.stderr
    assert snapshot(store) == before


def test_undo_refuses_when_files_changed_since(bank_store):
    store = bank_store
    assert apply(store).returncode == 0
    with open(store / "blog" / "memories.jsonl", "a") as fh:
        fh.write('{"id": "m900", "text": "written after the run"}\n')
    res = run_cli("undo", str(store))
    assert res.returncode == 1
    assert "blog/memories.jsonl gained lines since it ran, but the run appended to it in place" in res.stderr
    assert "m900" in (store / "blog" / "memories.jsonl").read_text()


def test_apply_twice_and_a_retired_record_is_never_superseded_twice(bank_store):
    store = bank_store
    assert apply(store).returncode == 0
    assert apply(store).returncode == 0  # the capped remainder (ops) goes now
    assert apply(store).returncode == 0
    plan = plan_json(store, "--model", "none")
    assert [a for a in plan["actions"] if not a["needs_user"]] == []
    recs = records(store / "blog" / "memories.jsonl") + records(store / "ops" / "memories.jsonl")
    superseded = [(r["id"]) for r in recs if r.get("superseded_by")]
    assert len(superseded) == len(set(superseded))


def test_nothing_to_apply_writes_nothing(bank_store):
    store = bank_store
    for _ in range(3):
        apply(store)
    before = snapshot(store)
    res = apply(store)
    assert res.returncode == 0 and "Nothing to apply" in res.stdout
    assert snapshot(store) == before


def test_apply_without_yes_off_a_terminal_is_refused(bank_store):
    store = bank_store
    before = snapshot(store)
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none")
    assert res.returncode == 2 and "--yes" in res.stderr
    assert snapshot(store) == before


def test_select_by_kind_and_number(bank_store):
    store = bank_store
    second = plan_json(store, "--model", "none")["actions"][1]["fingerprint"]
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", "--select", f"2={second}", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert [a["targets"] for a in out["applied"]] == [["blog/m011", "blog/m010"]]


EXPECTED = FIXTURES.parent / "tests" / "data" / "expected" / "bank"


def test_apply_matches_the_expected_tree(bank_store):
    """The fixture after `apply --model none --yes`, compared with the committed tree (run ids
    masked). Regenerate with UPDATE_EXPECTED=1 after a deliberate change, and read the diff."""
    import os

    store = bank_store
    res = run_cli("apply", str(store), "--now", NOW, "--model", "none", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    run_id = json.loads(res.stdout)["run_id"]
    after = {k.replace(run_id, "RUN_ID"): v.replace(run_id.encode(), b"RUN_ID") for k, v in snapshot(store).items()}
    report = store / ".memconsolidate" / "reports" / f"{run_id}.md"
    after[".memconsolidate/reports/RUN_ID.md"] = report.read_bytes().replace(run_id.encode(), b"RUN_ID")
    if os.environ.get("UPDATE_EXPECTED") == "1":
        import shutil

        shutil.rmtree(EXPECTED, ignore_errors=True)
        for key, data in after.items():
            if not key.endswith("/"):
                (EXPECTED / key).parent.mkdir(parents=True, exist_ok=True)
                (EXPECTED / key).write_bytes(data)
    expected = {p.relative_to(EXPECTED).as_posix(): p.read_bytes() for p in sorted(EXPECTED.rglob("*")) if p.is_file()}
    files = {k: v for k, v in after.items() if not k.endswith("/")}
    assert sorted(files) == sorted(expected)
    for key in expected:
        assert files[key] == expected[key], f"{key} differs from tests/data/expected/bank/{key}"
