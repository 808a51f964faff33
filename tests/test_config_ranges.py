"""Every number a config may set has a range: an impossible value is a config error naming its key
(exit 2), and a value at either end of its range, with `--now` at either end of its own, runs every
command to the end (red-team 4 bug 3: `schedule.interval_hours = 1e12` in a store's own config, a
consult window of 999999999 days or `--now 0001-01-01` crashed with an OverflowError, exit 1;
`max_file_bytes = -1` read no memory at all and `timeout_s = inf` was taken).

The fields are read from the models, so a numeric setting added without a range fails here.
"""

from __future__ import annotations

import json
import math
import shutil
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from helpers import FIXTURES, NOW, run_cli

from pipeline.config import EARLIEST_NOW, LATEST_NOW, Settings, build_settings
from pipeline.errors import ConfigError


def _plain(annotation: Any) -> Any:
    """`int | None` -> int: the type a setting holds when it is set."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def numeric_fields(model: type[BaseModel], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], type, FieldInfo]]:
    """(dotted path, int or float, field) of every number under `model`, sections and the values of
    a mapping of sections (crux typeTransitions, by one of its keys) included."""
    out = []
    for name, field in model.model_fields.items():
        kind = _plain(field.annotation)
        if kind in (int, float):  # bool is neither
            out.append(((*path, name), kind, field))
        elif isinstance(kind, type) and issubclass(kind, BaseModel):
            out.extend(numeric_fields(kind, (*path, name)))
        elif typing.get_origin(kind) is dict:
            value = typing.get_args(kind)[1]
            if isinstance(value, type) and issubclass(value, BaseModel):
                out.extend(numeric_fields(value, (*path, name, "idea")))
    return out


FIELDS = numeric_fields(Settings)
IDS = [".".join(path) for path, _, _ in FIELDS]


def bounds(field: FieldInfo) -> tuple[Any, bool, Any, bool]:
    """(lowest, lowest allowed?, highest, highest allowed?) of a field's range; None where it has none."""
    low = high = None
    low_in = high_in = True
    for m in field.metadata:
        if isinstance(m, annotated_types.Ge):
            low = m.ge
        elif isinstance(m, annotated_types.Gt):
            low, low_in = m.gt, False
        elif isinstance(m, annotated_types.Le):
            high = m.le
        elif isinstance(m, annotated_types.Lt):
            high, high_in = m.lt, False
    return low, low_in, high, high_in


def nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    data: Any = value
    for key in reversed(path):
        data = {key: data}
    return data


def merge(into: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


def test_the_models_have_numeric_settings_in_every_section():
    # the walk itself: a change that hid the sections from it would make every test below pass vacuously
    sections = {path[0] for path, _, _ in FIELDS}
    assert {"crux", "claude", "zylos", "bank", "llm", "schedule", "journal", "max_file_bytes"} <= sections
    assert ("crux", "typeTransitions", "idea", "promoteAt") in [p for p, _, _ in FIELDS]


@pytest.mark.parametrize("path, kind, field", FIELDS, ids=IDS)
def test_every_numeric_setting_has_a_range(path, kind, field):
    low, _, high, _ = bounds(field)
    # how high is high enough, and how low low enough, is what test_every_setting_at_an_end... checks
    assert low is not None and high is not None, f"{'.'.join(path)} needs ge/gt and le/lt in its Field"


def _outside(kind: type, field: FieldInfo) -> list[Any]:
    low, low_in, high, high_in = bounds(field)
    step = 1 if kind is int else 0.5
    values = [low - step if low_in else low, high + step if high_in else high]
    if kind is float:
        values += [math.inf, -math.inf, math.nan]
    return values


OUTSIDE = [(path, value) for path, kind, field in FIELDS for value in _outside(kind, field)]


@pytest.mark.parametrize("path, value", OUTSIDE, ids=[f"{'.'.join(p)}={v}" for p, v in OUTSIDE])
def test_a_value_out_of_range_is_a_config_error_naming_the_key(path, value):
    with pytest.raises(ConfigError) as caught:
        build_settings(nested(path, value), {})
    assert str(caught.value).startswith(f"invalid setting {'.'.join(path)}: "), caught.value


def one_line_exit_2(res) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    return res.stderr.strip()


def claude_store(where: Path) -> Path:
    """A project with one memory and a consult log naming it."""
    memory = where / ".claude" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- [A](project_a.md) — a\n")
    (memory / "project_a.md").write_text("---\nname: a\ndescription: a\ntype: project\n---\nThe deploy script lives in scripts/deploy.sh.\n")
    (where / ".claude" / "logs").mkdir()
    (where / ".claude" / "logs" / "memory-consult.jsonl").write_text(
        json.dumps({"ts": "2026-11-01T10:00:00Z", "session": "s1", "tool": "Read", "query": "deploy", "names": ["project_a"]}) + "\n")
    return where


@pytest.mark.parametrize("toml, key", [
    ("[schedule]\ninterval_hours = 1e12\n", "schedule.interval_hours"),
    ("[claude]\nconsult_window_days = 999999999\n", "claude.consult_window_days"),
    ("[zylos]\nsession_archive_days = 999999999\n", "zylos.session_archive_days"),
    ("max_file_bytes = -1\n", "max_file_bytes"),
    ("[llm]\ntimeout_s = inf\n", "llm.timeout_s"),
    ("now = 0001-01-01\n", "now"),
])
def test_a_store_config_out_of_range_fails_every_nightly_run_in_one_line(tmp_path, toml, key):
    store = claude_store(tmp_path / "s")
    (store / ".memconsolidate.toml").write_text(toml)
    for _ in range(2):  # the first run used to succeed and record itself, every later one to crash
        line = one_line_exit_2(run_cli("run", str(store), "--if-due", "--model", "none"))
        assert line.startswith(f"memconsolidate: invalid setting {key}: "), line
    assert line == one_line_exit_2(run_cli("plan", str(store), "--model", "none"))


@pytest.mark.parametrize("now", ["0001-01-01", "9999-12-31", "1969-12-31"])
def test_now_at_the_ends_of_the_calendar_is_refused_like_an_impossible_date(tmp_path, now):
    store = claude_store(tmp_path / "s")
    line = one_line_exit_2(run_cli("plan", str(store), "--model", "none", "--now", now))
    assert line == f"memconsolidate: invalid --now: must be a date from {EARLIEST_NOW} to {LATEST_NOW}, not {now}"


# --- every setting at one end of its range, today at the same end ---------------------------------


def _end(kind: type, field: FieldInfo, high: bool) -> Any:
    low, low_in, top, top_in = bounds(field)
    if high:
        return top if top_in else top - 1
    if low_in:
        return low
    return low + 1 if kind is int else low + 0.001


def settings_at(high: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"now": (LATEST_NOW if high else EARLIEST_NOW).isoformat(), "llm": {"model": "stub"}}
    for path, kind, field in FIELDS:
        merge(data, nested(path, _end(kind, field, high)))
    if not high:
        # a budget of 0 calls (or $0) stops every stage before it asks: the stages are to run here at
        # their other lowest settings (one request at a time, one item a batch, the smallest sizes)
        del data["llm"]["max_calls"], data["llm"]["max_cost"]
    return data


def store_without_its_numbers(layout: str, where: Path) -> Path:
    """A fixture store whose own config sets none of the numbers (they come from the test's config)."""
    root = shutil.copytree(FIXTURES / layout, where, symlinks=True)
    (root / "memory-consolidate.json").unlink(missing_ok=True)  # bank
    crux = root / ".crux" / "crux-memories.json"
    if crux.exists():
        data = json.loads(crux.read_text())
        names = {path[-1] for path, _, _ in FIELDS if path[0] == "crux"} | {"typeTransitions", "referenceTracking"}
        data["cruxMemories"] = {k: v for k, v in data["cruxMemories"].items() if k not in names}
        crux.write_text(json.dumps(data))
    return root


@pytest.mark.parametrize("high", [False, True], ids=["lowest", "highest"])
@pytest.mark.parametrize("layout", ["bank", "claude", "crux", "zylos"])
def test_every_setting_at_an_end_of_its_range_runs_every_command(tmp_path, layout, high):
    root = store_without_its_numbers(layout, tmp_path / layout)
    config = tmp_path / "ends.json"
    config.write_text(json.dumps(settings_at(high)))
    Settings.model_validate(settings_at(high))  # the ends are in range
    for args in (("plan", "--json"), ("status",), ("run", "--if-due"), ("run", "--if-due"), ("apply", "--yes"), ("runs",)):
        res = run_cli(args[0], str(root), "--config", str(config), *args[1:])
        assert res.returncode == 0, (args, res.stderr)
        assert "internal error" not in res.stderr
    if not high:
        assert json.loads(run_cli("plan", str(root), "--json", "--config", str(config)).stdout)["now"] == "1970-01-01"


def test_a_configured_now_is_checked_too():
    with pytest.raises(ConfigError, match=r"^invalid setting now: must be a date from 1970-01-01"):
        build_settings({"now": "0001-01-01"}, {})
    assert build_settings({"now": NOW}, {}).now.isoformat() == NOW


def test_a_bank_config_out_of_range_is_a_config_error_naming_the_key(bank_store):
    (bank_store / "memory-consolidate.json").write_text(json.dumps({"interval_hours": 1e12, "max_supersedes_per_run": 4}))
    line = one_line_exit_2(run_cli("plan", str(bank_store), "--model", "none"))
    assert line.startswith(f"memconsolidate: {bank_store / 'memory-consolidate.json'}: interval_hours: Input should be less"), line


def test_the_highest_size_cap_is_not_memory_taken_up_front(tmp_path):
    # A file was read with one read(cap + 1), which allocates the whole cap before reading a byte: a
    # bank's file at 64 times the highest max_file_bytes raised MemoryError (the run: exit 1).
    import tracemalloc

    from pipeline.config import MAX_BYTES
    from pipeline.storage.files import read_bytes

    (tmp_path / "small.md").write_bytes(b"x" * 100)
    tracemalloc.start()
    try:
        assert read_bytes(tmp_path, tmp_path / "small.md", MAX_BYTES) == b"x" * 100
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, peak


def test_an_out_of_range_value_names_the_config_file_it_came_from(tmp_path):
    """A nightly log said "invalid setting max_file_bytes" with three files that could have given it
    (--config, the store's own, the user's): the error names the one that did."""
    store = claude_store(tmp_path / "s")
    own = store / ".memconsolidate.toml"
    own.write_text("max_file_bytes = -1\n")
    line = one_line_exit_2(run_cli("plan", str(store), "--model", "none"))
    assert line.startswith("memconsolidate: invalid setting max_file_bytes: "), line
    assert line.endswith(f"(in config {own})"), line


def test_a_value_an_option_overrides_is_not_blamed_on_the_config_file(tmp_path):
    store = claude_store(tmp_path / "s")
    (store / ".memconsolidate.toml").write_text("[llm]\nmax_calls = 5\n")
    line = one_line_exit_2(run_cli("plan", str(store), "--model", "none", "--max-calls", "-1"))
    assert line.startswith("memconsolidate: invalid --max-calls: "), line
    assert "in config" not in line, line


@pytest.mark.parametrize("toml, key", [
    ('[crux]\ntypePriority = ["core", 5]\n', "crux.typePriority.1"),  # an item of a list the file sets
    ('[crux.storage]\nindexFile = "index.txt"\n', "crux.storage"),  # a check of a table the file sets
])
def test_an_error_about_part_of_what_the_file_sets_names_the_file(tmp_path, toml, key):
    store = claude_store(tmp_path / "s")
    own = store / ".memconsolidate.toml"
    own.write_text(toml)
    line = one_line_exit_2(run_cli("plan", str(store), "--model", "none"))
    assert line.startswith(f"memconsolidate: invalid setting {key}: ") and line.endswith(f"(in config {own})"), line
