"""The import contracts in pyproject.toml ([tool.importlinter]): the layers hold, and the check
would see an upward import if one came in (run here in-process; .ci/run also runs `lint-imports`)."""

from __future__ import annotations

import copy
import shutil
import sys

import pytest

from helpers import REPO

importlinter = pytest.importorskip("importlinter")
from importlinter.application import use_cases  # noqa: E402
from importlinter.configuration import configure  # noqa: E402

configure()
use_cases._register_built_in_contract_types()  # what `lint-imports` does before it reads contracts


def _report(options):
    report = use_cases.create_report(options, cache_dir=None)
    return {contract.name: check.kept for contract, check in report.get_contracts_and_checks()}


def _options():
    return use_cases.read_user_options(config_filename=str(REPO / "pyproject.toml"))


def test_the_layers_hold():
    kept = _report(_options())
    assert len(kept) == 3 and all(kept.values()), kept


def _kept_with_import(tmp_path, monkeypatch, module: str, line: str) -> dict[str, bool]:
    """The contracts over a copy of the package in which `module` (a path) gains `line`."""
    probe = tmp_path / "pipeline_probe"
    shutil.copytree(REPO / "pipeline", probe, ignore=shutil.ignore_patterns("__pycache__"))
    target = probe / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    options = copy.deepcopy(_options())

    def renamed(value):
        if isinstance(value, str):
            return value.replace("pipeline", "pipeline_probe")
        if isinstance(value, list):
            return [renamed(v) for v in value]
        return value

    options.session_options.pop("root_package", None)
    options.session_options["root_packages"] = ["pipeline_probe"]
    options.contracts_options = [{k: renamed(v) for k, v in c.items()} for c in options.contracts_options]
    try:
        return _report(options)
    finally:
        for name in [m for m in sys.modules if m.startswith("pipeline_probe")]:
            del sys.modules[name]


LAYERS = "Layers: each imports only from the layers below it"
STAGES_READ_NOTHING = "The LLM stages read nothing from disk: what the plan gathered comes in as data"


def test_an_upward_import_breaks_the_layers(tmp_path, monkeypatch):
    kept = _kept_with_import(tmp_path, monkeypatch, "rules/outcome.py", "from ..plan import build_plan")
    assert kept[LAYERS] is False


def test_a_rule_that_scans_a_repository_breaks_the_layers(tmp_path, monkeypatch):
    kept = _kept_with_import(tmp_path, monkeypatch, "rules/staleness.py", "from ..evidence.repo_scan import scan_repos")
    assert kept[LAYERS] is False


def test_a_stage_that_reads_evidence_breaks_its_contract(tmp_path, monkeypatch):
    kept = _kept_with_import(tmp_path, monkeypatch, "stages/conflicts.py", "from ..evidence.context import load_context")
    assert kept[STAGES_READ_NOTHING] is False and kept[LAYERS] is True


def test_the_fleet_commands_do_not_import_the_cli(tmp_path, monkeypatch):
    kept = _kept_with_import(tmp_path, monkeypatch, "fleet/task.py", "from ..cli import app")
    assert kept[LAYERS] is False
