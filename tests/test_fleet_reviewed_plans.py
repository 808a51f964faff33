"""`fleet apply --plans-dir DIR`: each store gets exactly the actions of the plan `fleet plan
--plans-dir DIR` saved for it and a person reviewed, each pinned by its fingerprint; a store
changed since, without a saved plan, or whose plan file is not its own plan is failed untouched.
The plan files are data a person's folder holds: none of them names a path or a store."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from fleet_helpers import lines
from helpers import FIXTURES, NOW, copy_store, plan_json, run_cli, snapshot

from pipeline.actions import parse_action
from pipeline.fleet.plans import MAX_PLAN_FILE_BYTES, NotAsReviewed, plan_file_name, read_reviewed
from pipeline.journal import committed_runs

_FACTS = ("Deploys happen on Tuesdays.", "The staging database is reset weekly.", "Logs are kept for thirty days.",
          "Alerts page the on-call engineer.", "The wiki lives on the intranet.", "Invoices are sent monthly.",
          "Passwords rotate every ninety days.", "The office closes at six.")


def _bank(store: Path, bank: str, *texts: str) -> Path:
    """A bank `bank` of `store` holding these memories, one a day from 2026-08-01."""
    (store / bank).mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"{bank}{n}", "text": text, "entities": [], "tags": [], "confidence": 0.8, "corroboration": 1,
             "pinned": False, "source": "session", "created_at": f"2026-08-{n + 1:02d}T08:00:00Z",
             "updated_at": f"2026-08-{n + 1:02d}T08:00:00Z", "invalid_at": None, "superseded_by": None, "revision": 1}
            for n, text in enumerate(texts)]
    (store / bank / "memories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return store


def _bank_store(store: Path) -> Path:
    """A bank store whose plan merges one duplicate pair (automatic) and nothing else."""
    return _bank(store, "a", "Backups run nightly at 02:00.", "Backups run nightly at 02:00", *_FACTS)


def _hashes(store: Path) -> dict[str, str]:
    """sha256 of every file of the store, its own `.memconsolidate/` folder included."""
    return {p.relative_to(store).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(store.rglob("*")) if p.is_file() and not p.is_symlink()}


def _plan_file(plans: Path, store: Path) -> Path:
    return plans / plan_file_name(str(store.resolve()))


def _fleet_plan(plans: Path, *stores: Path) -> None:
    res = run_cli("fleet", "plan", *map(str, stores), "--now", NOW, "--plans-dir", str(plans))
    assert res.returncode == 0, res.stderr


def _fleet_apply(plans: Path, *stores: Path, extra: tuple[str, ...] = ()):
    res = run_cli("fleet", "apply", *map(str, stores), "--now", NOW, "--plans-dir", str(plans), "--yes", *extra)
    return res, lines(res.stdout)


def _applied_kinds(store: Path) -> list[str]:
    (run,) = committed_runs(store)
    return run.info["applied"]


def test_unchanged_stores_get_exactly_their_reviewed_actions_and_nothing_planned_since(tmp_path):
    bank = _bank_store(tmp_path / "bank")
    crux = copy_store(FIXTURES / "crux", tmp_path / "crux")
    zylos = copy_store(FIXTURES / "zylos", tmp_path / "zylos")
    plans = tmp_path / "plans"
    _fleet_plan(plans, bank, crux, zylos)
    saved = {s: json.loads(_plan_file(plans, s).read_text()) for s in (bank, crux, zylos)}
    # After the review: a second duplicate pair, planned after the reviewed action (its number kept),
    # and a line the zylos agent appends to its live session log, which the reviewed rotation takes along.
    _bank(bank, "zz", "The cache is flushed hourly.", "the cache is flushed hourly")
    with open(zylos / "sessions" / "current.md", "a") as fh:
        fh.write("- 09:12 a line the agent wrote after the review\n")
    assert len(plan_json(bank, "--now", NOW)["actions"]) == 2

    res, records = _fleet_apply(plans, bank, crux, zylos)
    assert res.returncode == 0, res.stderr
    for store, plan in saved.items():
        r = records[str(store)]
        automatic = [a["kind"] for a in plan["actions"] if not a["needs_user"]]
        assert r["status"] == "ok" and r["plan_file"] == str(_plan_file(plans, store)), r
        assert r["counts"]["applied"] == len(automatic) > 0 and _applied_kinds(store) == automatic
    # the merge planned after the review is still pending; the reviewed one was applied
    assert [a["targets"] for a in plan_json(bank, "--now", NOW)["actions"]] == [["zz/zz0", "zz/zz1"]]


def test_a_store_changed_since_its_plan_was_reviewed_is_refused_untouched_and_the_others_go_on(tmp_path):
    bank = _bank_store(tmp_path / "bank")
    crux = copy_store(FIXTURES / "crux", tmp_path / "crux")
    plans = tmp_path / "plans"
    _fleet_plan(plans, bank, crux)
    saved = json.loads(_plan_file(plans, crux).read_text())
    n, promoted = next((n, a) for n, a in enumerate(saved["actions"], start=1) if a["kind"] == "promote")
    with open(crux / promoted["targets"][0], "a") as fh:
        fh.write("Edited after the review.\n")
    before = _hashes(crux)

    res, records = _fleet_apply(plans, bank, crux)
    assert res.returncode == 1, res.stderr
    assert records[str(bank)]["status"] == "ok" and records[str(bank)]["counts"]["applied"] == 1
    r = records[str(crux)]
    assert r["status"] == "failed" and r["run_id"] is None, r
    (error,) = r["errors"]
    assert error.startswith(f"reviewed plan {_plan_file(plans, crux).name}: the store changed since the review (action {n} is now ")
    assert f"{promoted['fingerprint']} is no longer in the plan" in error and "nothing was applied" in error
    assert "--select" not in error and "fleet plan --plans-dir" in error  # the user pinned nothing: said of the review
    # nothing written but the lock a planning apply takes, no run journaled
    after = _hashes(crux)
    assert {k: v for k, v in after.items() if not k.startswith(".memconsolidate/")} == before
    assert set(after) - set(before) <= {".memconsolidate/lock", ".memconsolidate/.gitignore"}
    assert committed_runs(crux) == [] and not (crux / ".memconsolidate" / "runs").exists()
    assert f"failed: {crux}: reviewed plan" in res.stderr


def test_a_store_without_a_saved_plan_fails_unread_and_the_others_go_on(tmp_path):
    planned = _bank_store(tmp_path / "planned")
    unplanned = copy_store(FIXTURES / "claude", tmp_path / "unplanned")
    plans = tmp_path / "plans"
    _fleet_plan(plans, planned)
    before = _hashes(unplanned)

    res, records = _fleet_apply(plans, planned, unplanned)
    assert res.returncode == 1 and records[str(planned)]["status"] == "ok", res.stderr
    r = records[str(unplanned)]
    assert r["status"] == "failed" and r["layout"] == "claude" and r["plan_file"] == str(_plan_file(plans, unplanned))
    assert r["errors"] == [f"reviewed plan {_plan_file(plans, unplanned).name}: none in {plans.resolve()} "
                           "(the store was not planned there); nothing was applied"]
    assert _hashes(unplanned) == before  # not even locked


def _rewritten(action: dict, **changes) -> dict:
    """`action` changed as an attacker would, its fingerprint made again so that it still matches."""
    edited = {k: v for k, v in action.items() if k != "fingerprint"} | changes
    return {**edited, "fingerprint": parse_action(edited).fingerprint()}


def _planted(saved: dict, other: dict) -> dict[str, str]:
    """What may lie in a store's plan file, by case: each is refused for its store."""
    first = saved["actions"][0]
    return {
        "another store's plan": json.dumps(other),
        "another layout": json.dumps(saved | {"layout": "claude"}),
        "another schema": json.dumps(saved | {"schema": "memconsolidate.plan/9"}),
        "a target leaving the store": json.dumps(saved | {"actions": [_rewritten(first, targets=["../../precious.txt", first["targets"][1]])]}),
        "an absolute target": json.dumps(saved | {"actions": [_rewritten(first, targets=["/etc/passwd", first["targets"][1]])]}),
        "a hash key leaving the store": json.dumps(saved | {"actions": [_rewritten(first, target_hashes={"../x": "0" * 64})]}),
        "an action edited, its fingerprint not": json.dumps(saved | {"actions": [first | {"survivor": first["targets"][1]}]}),
        "an unknown field": json.dumps(saved | {"actions": [first | {"run": "rm -rf /"}]}),
        "not JSON": "\x00{garbage",
        "a JSON list": "[]",
        "nested too deep": "[" * 200_000 + "]" * 200_000,
    }


def test_a_plan_file_that_is_not_the_stores_reviewed_plan_is_refused_before_the_store_is_touched(tmp_path):
    stores = {name: _bank_store(tmp_path / "stores" / f"s{i:02d}") for i, name in enumerate([
        "another store's plan", "another layout", "another schema", "a target leaving the store", "an absolute target",
        "a hash key leaving the store", "an action edited, its fingerprint not", "an unknown field", "not JSON",
        "a JSON list", "nested too deep", "too large", "a symlink", "a FIFO", "a folder", "ok"])}
    other = copy_store(FIXTURES / "crux", tmp_path / "other")
    (tmp_path / "stores" / "precious.txt").write_text("outside every store\n")
    plans = tmp_path / "plans"
    _fleet_plan(plans, other, *stores.values())
    other_plan = json.loads(_plan_file(plans, other).read_text())
    for name, store in stores.items():
        planted = _planted(json.loads(_plan_file(plans, store).read_text()), other_plan)  # made from its own plan
        if name in planted:
            _plan_file(plans, store).write_text(planted[name])
    with open(_plan_file(plans, stores["too large"]), "r+b") as fh:
        fh.truncate(MAX_PLAN_FILE_BYTES + 1)  # sparse: nothing that large is written, nor read
    for name, make in (("a symlink", lambda f: f.symlink_to(_plan_file(plans, stores["ok"]))), ("a FIFO", os.mkfifo),
                       ("a folder", os.mkdir)):
        _plan_file(plans, stores[name]).unlink()
        make(_plan_file(plans, stores[name]))
    before = {name: snapshot(store) for name, store in stores.items()}

    res, records = _fleet_apply(plans, *stores.values())
    assert res.returncode == 1, res.stderr
    expected = {
        "another store's plan": f"a plan of the crux store '{other}', not of this bank store",
        "another layout": "a plan of the claude store",
        "another schema": "schema 'memconsolidate.plan/9', not memconsolidate.plan/1",
        "a target leaving the store": "action 1 names '../../precious.txt', no path inside the store",
        "an absolute target": "action 1 names '/etc/passwd', no path inside the store",
        "a hash key leaving the store": "action 1 names '../x', no path inside the store",
        "an action edited, its fingerprint not": "not a plan: actions.0: Value error, fingerprint",
        "an unknown field": "not a plan: actions.0.merge_duplicate.run: Extra inputs are not permitted",
        "not JSON": "not JSON",
        "a JSON list": "not a plan: Input should be a valid dictionary",
        "nested too deep": "not JSON",
        "too large": f"cannot be read: file too large ({MAX_PLAN_FILE_BYTES + 1} bytes > {MAX_PLAN_FILE_BYTES})",
        "a symlink": "cannot be read: a symlink (never followed)",
        "a FIFO": "cannot be read: not a regular file",
        "a folder": "cannot be read: not a regular file",
    }
    for name, store in stores.items():
        r = records[str(store)]
        if name == "ok":
            assert r["status"] == "ok" and r["counts"]["applied"] == 1, r
            continue
        (error,) = r["errors"]
        assert r["status"] == "failed" and error.startswith(f"reviewed plan {_plan_file(plans, store).name}: "), (name, r)
        assert expected[name] in error and error.endswith("; nothing was applied") and "\n" not in error, (name, error)
        assert snapshot(store) == before[name] and not (store / ".memconsolidate").exists(), name
    assert (tmp_path / "stores" / "precious.txt").read_text() == "outside every store\n"


def test_a_reviewed_action_made_to_share_a_fingerprint_is_not_taken_for_the_fresh_one(tmp_path):
    """A 32-bit fingerprint can be matched by another action on purpose: the fresh action about to
    be applied must be the saved one in full (its reason aside), or nothing is applied."""
    store = _bank_store(tmp_path / "bank")
    plans = tmp_path / "plans"
    _fleet_plan(plans, store)
    reviewed = read_reviewed(plans, str(store.resolve()), store.resolve(), "bank")
    pinned = reviewed.pins(None, None)
    (fresh,) = reviewed.plan.actions
    reviewed.check_unchanged(pinned, reviewed.plan, [fresh])  # the very action: goes through
    reworded = fresh.model_copy(update={"reason": "reworded since"})
    reviewed.check_unchanged(pinned, reviewed.plan.model_copy(update={"actions": [reworded]}), [reworded])
    other = fresh.model_copy(update={"needs_user": True})  # the change a forged plan would hide
    with pytest.raises(NotAsReviewed, match=r"action 1 \(merge_duplicate \w{8}\) is not the change"):
        reviewed.check_unchanged(pinned, reviewed.plan.model_copy(update={"actions": [other]}), [other])


def test_a_forged_automatic_action_is_refused_as_changed(tmp_path):
    """A planted plan marking an action that needs the user as automatic pins a fingerprint the
    store's plan does not have: refused, the action the user was to decide on left alone."""
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    plans = tmp_path / "plans"
    _fleet_plan(plans, store)
    saved = json.loads(_plan_file(plans, store).read_text())
    n = next(n for n, a in enumerate(saved["actions"]) if a["kind"] == "promote_rule" and a["needs_user"])
    actions = [a if i != n else _rewritten(a, needs_user=False) for i, a in enumerate(saved["actions"])]
    _plan_file(plans, store).write_text(json.dumps(saved | {"actions": actions}))
    before = snapshot(store)
    res, records = _fleet_apply(plans, store)
    assert res.returncode == 1 and records[str(store)]["status"] == "failed", res.stderr
    assert "the store changed since the review" in records[str(store)]["errors"][0]
    assert snapshot(store) == before and committed_runs(store) == []


def test_select_picks_among_the_saved_plans_actions_and_a_plan_applying_nothing_leaves_the_store_unread(tmp_path):
    crux = copy_store(FIXTURES / "crux", tmp_path / "crux")
    bank = _bank_store(tmp_path / "bank")
    plans = tmp_path / "plans"
    _fleet_plan(plans, crux, bank)
    saved = json.loads(_plan_file(plans, crux).read_text())
    before = _hashes(bank)
    res, records = _fleet_apply(plans, crux, bank, extra=("--select", "demote"))
    assert res.returncode == 0, res.stderr
    demotes = [a for a in saved["actions"] if a["kind"] == "demote"]
    assert records[str(crux)]["counts"]["applied"] == len(demotes) > 0 and _applied_kinds(crux) == ["demote"] * len(demotes)
    r = records[str(bank)]  # no demote in its reviewed plan: nothing to apply, the store not read
    assert (r["status"], r["reason"], r["counts"]) == ("ok", "its reviewed plan applies nothing", {"applied": 0, "skipped": 0, "changed": 0})
    assert _hashes(bank) == before


@pytest.mark.parametrize("args, message", [
    (("--plans-dir", "{tmp}/no-such"), "--plans-dir {tmp}/no-such: no such folder"),
    (("--plans-dir", "{store}/.memconsolidate"), "--plans-dir {store}/.memconsolidate would lie inside the store {store}"),
])
def test_a_plans_dir_that_is_missing_or_inside_a_store_is_bad_usage(tmp_path, args, message):
    store = _bank_store(tmp_path / "bank")
    given = [a.format(tmp=tmp_path, store=store) for a in args]
    res = run_cli("fleet", "apply", str(store), *given, "--yes", "--now", NOW)
    assert res.returncode == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert message.format(tmp=tmp_path, store=store) in res.stderr
    assert not (tmp_path / "no-such").exists() and not (store / ".memconsolidate").exists()
    # without --yes, as ever: reviewed plans are no prompt
    res = run_cli("fleet", "apply", str(store), "--plans-dir", str(tmp_path), "--now", NOW)
    assert res.returncode == 2 and "pass --yes" in res.stderr, res.stderr


def test_the_pins_changed_error_survives_a_process_boundary():
    import pickle

    from pipeline.apply import PinsChanged

    sent = PinsChanged("action 3 is now demote 1234abcd", "--select 3=17fb9179: the plan changed", 3, "17fb9179")
    back = pickle.loads(pickle.dumps(sent))  # before: TypeError, a worker's error lost in transit
    assert (type(back), back.what, str(back), back.number, back.code) == (PinsChanged, sent.what, str(sent), 3, "17fb9179")


def test_a_select_pin_that_is_not_the_reviewed_plans_is_said_of_that_plan(tmp_path):
    # The saved plan never changes: a --select pin naming no action of it was mistyped or meant for
    # another store's plan; "the plan changed since it was printed ... run `memconsolidate plan`
    # again" sent the user after a change that never happened.
    store = _bank_store(tmp_path / "bank")
    plans = tmp_path / "plans"
    _fleet_plan(plans, store)
    (action,) = json.loads(_plan_file(plans, store).read_text())["actions"]
    wrong = "0" * 8 if action["fingerprint"] != "0" * 8 else "1" * 8
    before = _hashes(store)
    res, records = _fleet_apply(plans, store, extra=("--select", f"1={wrong}"))
    assert res.returncode == 1, res.stderr
    (error,) = records[str(store)]["errors"]
    assert error == (f"reviewed plan {_plan_file(plans, store).name}: --select 1={wrong} names no action of it "
                     f"(action 1 is merge_duplicate {action['fingerprint']}); nothing was applied")
    assert _hashes(store) == before


def test_a_store_that_fails_its_next_plan_leaves_no_earlier_plan_to_be_applied_as_reviewed(tmp_path):
    # Last night's plan stayed in the folder when tonight's planning of the store failed: a person
    # reviewing tonight's plans read it as tonight's, and `fleet apply --plans-dir` applied it.
    store = _bank_store(tmp_path / "bank")
    plans = tmp_path / "plans"
    _fleet_plan(plans, store)
    assert _plan_file(plans, store).is_file()
    (store / ".memconsolidate.toml").write_text("[llm]\nmax_attempts = 'many'\n")  # tonight's plan fails
    res = run_cli("fleet", "plan", str(store), "--now", NOW, "--plans-dir", str(plans))
    assert res.returncode == 1 and lines(res.stdout)[str(store)]["status"] == "failed", res.stderr
    assert not _plan_file(plans, store).exists()
    (store / ".memconsolidate.toml").unlink()
    before = _hashes(store)
    res, records = _fleet_apply(plans, store)
    assert res.returncode == 1 and records[str(store)]["status"] == "failed"
    assert "none in" in records[str(store)]["errors"][0] and _hashes(store) == before


def test_a_plans_dir_that_is_a_file_is_a_usage_error(tmp_path):
    store = _bank_store(tmp_path / "bank")
    (tmp_path / "plans").write_text("not a folder\n")
    res = run_cli("fleet", "plan", str(store), "--now", NOW, "--plans-dir", str(tmp_path / "plans"))
    assert res.returncode == 2 and "not a folder" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
