"""The stage runner is the one place stage failures are caught: a bug in one stage (or in the
heuristics it calls) costs that stage's proposals, is reported in the plan's errors, and the other
stages and the deterministic plan go on."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

import pipeline.stages as stages
from helpers import FIXTURES, NOW, REPO, copy_store
from stage_helpers import plan_with, settings_for


class _Broken:
    name = "broken"

    def applies(self, corpus, settings):
        return True

    def run(self, ctx, outcome):
        raise ValueError("a bug in a heuristic")


def test_a_stage_that_raises_is_an_error_in_the_plan_and_the_others_still_run(monkeypatch):
    honest = stages.all_stages()
    plain = plan_with(FIXTURES / "bank", settings_for("stub"))
    monkeypatch.setattr(stages, "all_stages", lambda: [_Broken(), *honest])
    monkeypatch.delenv("MEMCONSOLIDATE_DEBUG", raising=False)
    plan = plan_with(FIXTURES / "bank", settings_for("stub"))
    assert {"stage": "broken", "message": "internal error: ValueError: a bug in a heuristic"} in plan["errors"]
    assert plan["actions"] == plain["actions"] and plan["findings"] == plain["findings"]


def test_with_debug_set_the_bug_is_raised(monkeypatch):
    monkeypatch.setattr(stages, "all_stages", lambda: [_Broken()])
    monkeypatch.setenv("MEMCONSOLIDATE_DEBUG", "1")
    with pytest.raises(ValueError, match="a bug in a heuristic"):
        plan_with(FIXTURES / "bank", settings_for("stub"))


def test_each_entry_names_its_stage_and_registers_its_stub():
    from pipeline.llm.stub import STUBS

    for entry in stages.STAGES:
        assert entry.stage().name == entry.name
        assert entry.name in STUBS


# Plans a store in a fresh interpreter and says, after it, which stage modules were imported.
PLAN_AND_LIST_STAGES = (
    "import sys\n"
    "from pipeline.cli import main\n"
    "sys.argv = ['memconsolidate', 'plan', *sys.argv[1:]]\n"
    "try:\n    main()\n"
    "finally:\n    print(sorted(m for m in sys.modules if m.startswith('pipeline.stages.')), file=sys.stderr)\n"
)


def test_a_stage_that_cannot_apply_to_the_layout_is_never_imported(tmp_path):
    store = copy_store(FIXTURES / "bank", tmp_path / "bank")
    res = subprocess.run([sys.executable, "-c", PLAN_AND_LIST_STAGES, str(store), "--model", "stub", "--now", NOW, "--no-cache"],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stderr
    imported = set(ast.literal_eval(res.stderr.strip().splitlines()[-1]))
    assert {"pipeline.stages.reorder", "pipeline.stages.conflicts", "pipeline.stages.standing_rules"} <= imported
    # bank's layout names only the rules stage: metadata (and the crux layout it brings), split, compress stay out
    assert not imported & {"pipeline.stages.consolidate.stage", "pipeline.stages.split", "pipeline.stages.compress"}
