"""A reviewed rotation of the live session log, applied by its pin after the agent wrote on.

zylos' agent appends to `sessions/current.md` all day: between a nightly `plan` and a reviewed
`apply --yes --select N=FINGERPRINT` it always has, and the rotation's fingerprint covers the log's
sha256 as the plan read it. So the pinned rotation was always refused ("the plan changed since it
was printed"): a reviewed rotation could never be applied on a live agent. Now the pin holds while
the log is the bytes the plan read followed by whole lines, which move with it into the dated log
(as rotate-session.js renames the whole file); an edit or a cut of the reviewed bytes still refuses.
The rotation records how many bytes the plan read (`read_bytes`), so the writer checks the one place
they end; a pin, a code without that length, is tried on reads ending on the log's last lines only.
"""

from __future__ import annotations

import hashlib
import re
import json
import os
from pathlib import Path

import pytest

from helpers import NOW, real_zylos_store, run_cli, snapshot

import pipeline.actions as actions_module
import pipeline.apply as apply_module
from pipeline.actions import RotateSessionAction, WholeRead
from pipeline.config import Settings
from pipeline.errors import UsageError
from pipeline.storage.since_plan import lines_added, recent_reads
from pipeline.workflow import apply_store, plan_store

S = Settings.model_validate({"now": NOW, "llm": {"model": "none"}})
ENV = {**os.environ, "MEMCONSOLIDATE_CLOCK": f"{NOW}T09:30:00+00:00"}
LOG = "sessions/current.md"
ROTATED = "sessions/2026-11-28.md"
REVIEWED = "# Session Log: 2026-11-28\n\n## 10:00 - Memory Sync\n- Processed conversations #1-#9\n"
LATE = "\n## 23:50 - Deployed the bot\n- Set the webhook\n"


def live_store(tmp_path: Path, log: bytes | str = REVIEWED) -> Path:
    root = tmp_path / "memory"
    (root / "sessions").mkdir(parents=True)
    (root / "identity.md").write_text("# Identity\n")
    (root / "state.md").write_text("# Active State\n")
    (root / LOG).write_bytes(log.encode() if isinstance(log, str) else log)
    return root


def printed_rotation(root: Path) -> dict:
    res = run_cli("plan", str(root), "--json", "--model", "none", "--now", NOW, env=ENV)
    assert res.returncode == 0, res.stderr
    [action] = [a for a in json.loads(res.stdout)["actions"] if a["kind"] == "rotate_session"]
    return action


def agent_appends(root: Path, data: bytes | str) -> None:
    with open(root / LOG, "ab") as fh:  # what the agent does: open, append, close
        fh.write(data.encode() if isinstance(data, str) else data)


def apply_pinned(root: Path, action: dict, number: int = 1):
    return run_cli("apply", str(root), "--yes", "--json", "--select", f"{number}={action['fingerprint']}",
                   "--model", "none", "--now", NOW, env=ENV)


@pytest.mark.parametrize("log,late,lines", [
    (REVIEWED, LATE, 3),
    (REVIEWED.replace("\n", "\r\n"), LATE.replace("\n", "\r\n"), 3),  # a CRLF log keeps its endings
    # the agent first ended the log's unterminated last line: that line break is no line of its own
    (REVIEWED.rstrip("\n"), LATE, 2),
    (REVIEWED.rstrip("\n"), "\n", 0),
    (REVIEWED, LATE * 40, 120),
], ids=["lines", "crlf", "after-an-unterminated-line", "only-ended-the-last-line", "many-lines"])
def test_a_pinned_rotation_applies_after_the_agent_appended_lines(tmp_path, log, late, lines):
    root = live_store(tmp_path, log)
    action = printed_rotation(root)
    assert action["read_bytes"] == len(log.encode())  # where the agent's lines begin, pinned with the rest
    agent_appends(root, late)
    grown = (root / LOG).read_bytes()
    res = apply_pinned(root, action)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    # the action applied is the one reviewed: the pinned fingerprint, the log's hash as the plan read it
    assert [(a["kind"], a["fingerprint"], a["target_hashes"]) for a in out["applied"]] == [
        ("rotate_session", action["fingerprint"], action["target_hashes"])]
    # nothing lost: the reviewed bytes and the agent's lines moved together into the dated log
    assert (root / ROTATED).read_bytes() == grown == log.encode() + late.encode()
    fresh = (root / LOG).read_text(encoding="utf-8")
    assert fresh.startswith("# Session Log: 2026-11-29") and "## 10:00" not in fresh and "23:50" not in fresh
    said = f"{lines} lines appended since the plan moved with it to {ROTATED}"
    assert [n for n in out["notes"] if "appended since the plan" in n] == ([f"{LOG}: {said}"] if lines else [])
    told = f"Rotated the 2026-11-28 session log to {ROTATED}, with the {lines} lines appended to it since the plan"
    assert (told in fresh) == bool(lines) and (f"Rotated the 2026-11-28 session log to {ROTATED}\n" in fresh) == (not lines)


@pytest.mark.parametrize("edit", ["reviewed-line-edited", "cut-shorter", "last-line-written-on", "line-half-written"])
def test_a_pinned_rotation_is_refused_when_the_reviewed_log_changed(tmp_path, edit):
    root = live_store(tmp_path, REVIEWED.rstrip("\n") if edit == "last-line-written-on" else REVIEWED)
    action = printed_rotation(root)
    data = (root / LOG).read_bytes()
    changed = {
        "reviewed-line-edited": data.replace(b"#1-#9", b"#1-#8") + LATE.encode(),  # an edit, then an append
        "cut-shorter": data[: data.index(b"## 10:00")],
        "last-line-written-on": data + b" and #10\n",  # the line the plan read is no longer that line
        "line-half-written": data + b"\n## 23:50 - Deployed",  # no whole line yet
    }[edit]
    (root / LOG).write_bytes(changed)
    before = snapshot(root)
    res = apply_pinned(root, action)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert "the plan changed since it was printed" in res.stderr and f"{action['fingerprint']} is no longer in the plan" in res.stderr
    assert snapshot(root) == before and not (root / ".memconsolidate" / "runs").exists()


@pytest.mark.parametrize("after_apply", ["", "\n## 09:45 - Back at work\n- Read the inbox\n"], ids=["as-left", "agent-wrote-on"])
def test_undo_of_a_pinned_rotation_puts_back_the_log_with_every_line(tmp_path, after_apply):
    """Byte for byte as before the apply, the lines appended between plan and apply included; lines the
    agent wrote to the fresh log after the apply are kept after them."""
    root = live_store(tmp_path)
    action = printed_rotation(root)
    agent_appends(root, LATE)
    before = snapshot(root)
    assert apply_pinned(root, action).returncode == 0
    agent_appends(root, after_apply)
    res = run_cli("undo", str(root), "--json", env=ENV)
    assert res.returncode == 0, res.stderr
    expected = {**before, LOG: before[LOG] + after_apply.encode()}
    assert snapshot(root) == expected
    assert json.loads(res.stdout)["kept_added"] == ({LOG: len(after_apply.encode())} if after_apply else {})


def test_a_rotation_applies_when_the_agent_appends_at_the_prompt(tmp_path, monkeypatch):
    """Interactive apply acts on the plan it showed: lines the agent appended while the person read it
    go along with the log, as with a pin (they used to skip the rotation as changed since the plan)."""
    monkeypatch.setenv("MEMCONSOLIDATE_CLOCK", ENV["MEMCONSOLIDATE_CLOCK"])
    root = live_store(tmp_path)

    def written_meanwhile(plan, chosen) -> bool:
        agent_appends(root, LATE)
        return True

    _, result = apply_store(str(root), S, lambda _: None, ["rotate_session"], None, written_meanwhile)
    assert [a.kind for a in result.changes.applied] == ["rotate_session"] and result.changes.skipped == []
    assert (root / ROTATED).read_bytes() == (REVIEWED + LATE).encode()


def test_a_pinned_rotation_of_the_real_example_log_applies_after_an_append(tmp_path):
    """zylos-core's own example of a session log (read from ../shared/real-stores, copied to tmp)."""
    root = real_zylos_store(tmp_path / "real")
    action = printed_rotation(root)
    reviewed = (root / LOG).read_bytes()
    agent_appends(root, LATE)
    res = apply_pinned(root, action)
    assert res.returncode == 0, res.stderr
    # dated 2026-02-08, older than the archive age: straight to archive/sessions/
    assert (root / "archive" / action["rotate_to"]).read_bytes() == reviewed + LATE.encode()


# --- the rule itself: the bytes the plan read, then whole lines ------------------------------------


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("read,now,added", [
    (b"a\nb\n", b"a\nb\nc\n", b"c\n"),
    (b"a\nb\n", b"a\nb\nc\nd\n", b"c\nd\n"),
    (b"a\r\nb\r\n", b"a\r\nb\r\nc\r\n", b"c\r\n"),
    (b"a\nb", b"a\nb\nc\n", b"c\n"),  # the last line ended first (no line of its own), then a line
    (b"a\r\nb", b"a\r\nb\r\nc\r\n", b"c\r\n"),
    (b"a\nb", b"a\nb\n", b""),  # only the last line ended
    (b"", b"c\n", b"c\n"),
    (b"a\nb\n", b"a\nb\n", None),  # nothing added: the same bytes, not a growth
    (b"a\nb\n", b"a\nb\nc", None),  # a line still being written
    (b"a\nb", b"a\nbc\n", None),  # the last line read was written on
    (b"a\nb\r", b"a\nb\r\nc\n", None),  # its CR made a CRLF: written on too
    (b"a\nb\n", b"a\nB\nc\n", None),  # a line read was edited
    (b"a\nb\n", b"a\n", None),  # cut shorter
])
def test_lines_added_are_whole_lines_after_the_bytes_read(read, now, added):
    assert lines_added(now, WholeRead(LOG, sha(read), len(read))) == added


@pytest.mark.parametrize("length", [-1, 0, 2, 3, 5, 6, 7])
def test_lines_added_look_only_where_the_bytes_read_end(length):
    """The bytes read are known by their length as well as their sha256: the one place they end is
    looked at, no other (here they end at 4: any other length is no match, whatever the sha says)."""
    read, now = b"a\nb\n", b"a\nb\nc\n"
    assert lines_added(now, WholeRead(LOG, sha(read), 4)) == b"c\n"
    assert lines_added(now, WholeRead(LOG, sha(read), length)) is None


# --- the pin: a short code of the bytes read, checked on the log's last lines only -------------------


def test_a_pin_is_not_taken_for_an_edited_log_whose_earlier_read_happens_to_give_its_code(tmp_path, monkeypatch):
    """A pin names the bytes the plan read by a short code only; apply tries the reads ending on the
    log's last `PINNED_LINES_APPENDED` lines, never every line of it (each read tried is a chance of
    one giving the code by accident: ~2 per line of a 4 MiB log made an edited log pass about 1 time in
    5,000). Here codes are 2 hex digits, the log was edited and a line appended, and a read ending
    further back happens to give the pinned code: the apply is refused, nothing written."""
    monkeypatch.setenv("MEMCONSOLIDATE_CLOCK", ENV["MEMCONSOLIDATE_CLOCK"])
    for module in (actions_module, apply_module):
        monkeypatch.setattr(module, "FINGERPRINT_LENGTH", 2)
    monkeypatch.setattr(apply_module, "PINNED_LINES_APPENDED", 3)
    reviewed = ("# Session Log: 2026-11-28\n" + "".join(f"- entry {i}\n" for i in range(200))).encode()
    root = live_store(tmp_path, reviewed)
    _, _, plan = plan_store(str(root), S, lambda _: None)
    [(number, rotation)] = [(n, a) for n, a in enumerate(plan.actions, 1) if isinstance(a, RotateSessionAction)]
    pin = rotation.fingerprint()

    def code_if_read(log: bytes, length: int) -> str:
        return rotation.as_read(WholeRead(LOG, sha(log[:length]), length)).fingerprint()

    def edited(variant: int) -> bytes:
        return reviewed.replace(b"- entry 3\n", b"- entry 3 (rewritten %d)\n" % variant) + b"- late\n"

    def pin_given_by(log: bytes, lines_after: range) -> bool:
        """Whether a read of `log` followed by a number of whole lines in `lines_after` gives the pin."""
        ends = {end for i, byte in enumerate(log) if byte == ord("\n") for end in (i, i + 1)}  # before or after a break
        added = {end: lines_added(log, WholeRead(LOG, sha(log[:end]), end)) for end in ends}
        return any(code_if_read(log, end) == pin for end, lines in added.items() if lines is not None and lines.count(b"\n") in lines_after)

    # the first edit some read of which, more than 3 lines back, gives the pin (none nearer does)
    log = next(log for log in map(edited, range(10_000))
               if pin_given_by(log, range(4, 10_000)) and not pin_given_by(log, range(0, 4)))
    (root / LOG).write_bytes(log)
    before = snapshot(root)
    with pytest.raises(UsageError, match=f"the plan changed since it was printed .*{pin} is no longer in the plan"):
        apply_store(str(root), S, lambda _: None, [f"{number}={pin}"], None, lambda p, chosen: True)
    assert snapshot(root) == before and not (root / ".memconsolidate" / "runs").exists()


@pytest.mark.parametrize("log", [b"a\nb\nc\n", b"a\r\nb\r\n\r\nc\r\n", b"a\rb\r\nc\nd\r", b"\n\n\n", b"x\n", b"a\nb", b""])
@pytest.mark.parametrize("most", [0, 1, 2, 10])
def test_the_reads_a_pin_may_name_are_those_followed_by_at_most_so_many_lines(log, most):
    """`recent_reads` offers exactly the reads `lines_added` would take with at most `most` lines added
    after them, each with its sha256, the fewest lines after first."""
    expected = []
    for length in range(len(log) + 1):
        added = lines_added(log, WholeRead(LOG, sha(log[:length]), length))
        if added is not None and len(re.findall(rb"\r\n|\r|\n", added)) <= most:
            expected.append((length, sha(log[:length])))
    assert recent_reads(log, most) == expected[::-1]
