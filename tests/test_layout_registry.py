"""Layouts come from the registry: a fifth one, installed as a package with an entry point, is listed,
detected, planned, applied and undone without a line of the core knowing its name."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.config import Settings
from pipeline.errors import ConfigError, UsageError
from pipeline.layouts import registry
from pipeline.layouts.base import Layout
from pipeline.workflow import plan_store

REPO = Path(__file__).resolve().parent.parent
NOW = "2026-11-29"

NOTES_LAYOUT = '''
import hashlib

from pipeline.apply import ChangeSet
from pipeline.journal import Op
from pipeline.layouts.base import BaseLayout
from pipeline.model import Corpus, Memory


class NotesLayout(BaseLayout):
    """One memory per `*.note` file; duplicates are retired into `archive/<run>/`."""

    name = "notes"
    markers = "notes.layout"

    def detect(self, root):
        return (root / "notes.layout").is_file()

    def load(self, root, settings):
        corpus = Corpus(layout=self.name, root=str(root))
        for path in sorted(root.glob("*.note")):
            data = path.read_bytes()
            corpus.memories.append(Memory(key=path.name, layout=self.name, group="notes", body=data.decode("utf-8"),
                                          read_shas={path.name: hashlib.sha256(data).hexdigest()}))
        return corpus

    def changes(self, corpus, actions, settings, run_id, resolve, findings):
        out = ChangeSet()
        for action in actions:
            if action.kind != "merge_duplicate":
                out.skipped.append((action, "not handled by the notes layout"))
                continue
            for key in action.targets:
                if key != action.survivor:
                    out.ops.append(Op("move", key, dest=f"archive/{run_id}/{key}"))
            out.applied.append(action)
        return out


LAYOUT = NotesLayout()
'''


def install_plugin(site: Path, module: str, source: str, entry: str) -> None:
    """A distribution as pip would leave it: the module and a dist-info naming its entry point."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{entry}\n", encoding="utf-8")


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Install plugin distributions on a temporary sys.path entry; forget them afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    installed: list[str] = []

    def install(module: str, source: str, entry: str) -> None:
        install_plugin(site, module, source, entry)
        installed.append(module)
        registry.reset()

    yield install
    for module in installed:
        sys.modules.pop(module, None)
    registry.reset()


@pytest.fixture
def notes_store(tmp_path) -> Path:
    store = tmp_path / "store"
    store.mkdir()
    (store / "notes.layout").write_text("", encoding="utf-8")
    (store / "a.note").write_text("The build uses make, not ninja.\n", encoding="utf-8")
    (store / "b.note").write_text("The build uses make, not ninja.\n", encoding="utf-8")
    (store / "c.note").write_text("Deploys happen on Tuesdays.\n", encoding="utf-8")
    # claude's marker too: a layout with specific markers is tried before claude's catch-all one.
    (store / "MEMORY.md").write_text("- [c](c.note) — deploy day\n", encoding="utf-8")
    return store


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_builtins_are_layouts_in_detection_order_with_the_catch_all_last():
    assert registry.names()[:4] == ["crux", "claude", "zylos", "bank"]
    assert all(isinstance(layout, Layout) for layout in registry.builtins())
    assert [layout.name for layout in registry._detection_order()][:4] == ["crux", "zylos", "bank", "claude"]


def test_a_fifth_layout_installed_with_an_entry_point_is_detected_and_planned(plugins, notes_store):
    plugins("notes_layout", NOTES_LAYOUT, "notes = notes_layout:LAYOUT")

    assert registry.names()[-1] == "notes"
    corpus, _settings, plan = plan_store(str(notes_store), Settings(now=NOW, llm={"model": "none"}), say=lambda _m: None)

    assert corpus.layout == plan.layout == "notes"  # not claude, although the store holds a MEMORY.md
    assert [(a.kind, a.targets, a.survivor) for a in plan.actions] == [("merge_duplicate", ["a.note", "b.note"], "a.note")]


def test_the_command_line_plans_applies_and_undoes_a_plugin_store(plugins, notes_store):
    plugins("notes_layout", NOTES_LAYOUT, "notes = notes_layout:LAYOUT")
    before = {p.name: p.read_bytes() for p in notes_store.iterdir() if p.is_file()}

    planned = cli("plan", str(notes_store), "--layout", "notes", "--json", "--model", "none", "--now", NOW)
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.stdout)["layout"] == "notes"

    applied = cli("apply", str(notes_store), "--yes", "--model", "none", "--now", NOW)
    assert applied.exit_code == 0, applied.output
    assert not (notes_store / "b.note").exists()
    (archived,) = (notes_store / "archive").rglob("b.note")
    assert archived.read_bytes() == before["b.note"]

    undone = cli("undo", str(notes_store))
    assert undone.exit_code == 0, undone.output
    assert {p.name: p.read_bytes() for p in notes_store.iterdir() if p.is_file()} == before


def test_a_broken_plugin_does_not_stop_a_builtin_store_and_is_one_line_where_it_is_needed(plugins, tmp_path):
    plugins("broken_layout", "raise RuntimeError('half installed')\n", "broken = broken_layout:LAYOUT")

    assert "broken" in registry.names()  # listed without being imported
    _corpus, _settings, plan = plan_store(str(REPO / "fixtures" / "crux"), Settings(now=NOW, llm={"model": "none"}), say=lambda _m: None)
    assert plan.layout == "crux"

    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("plan", str(empty), "--model", "none")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "memconsolidate: layout plugin 'broken' (broken_layout:LAYOUT) failed to load: RuntimeError: half installed"
    ]


def test_a_plugin_may_not_take_a_builtin_name_or_call_itself_another(plugins, notes_store):
    plugins("notes_layout", NOTES_LAYOUT, "crux = notes_layout:LAYOUT\nnotes2 = notes_layout:LAYOUT")

    assert registry.get("crux") is registry.builtins()[0]
    assert "notes2" in registry.names() and registry.names().count("crux") == 1
    with pytest.raises(ConfigError, match="calls itself 'notes'"):
        registry.get("notes2")
    with pytest.raises(ConfigError, match="name of a built-in layout"):
        registry.detect(notes_store)


def test_an_unknown_layout_is_refused_with_the_registered_names(plugins):
    plugins("notes_layout", NOTES_LAYOUT, "notes = notes_layout:LAYOUT")

    result = cli("plan", str(REPO / "fixtures" / "crux"), "--layout", "nope", "--model", "none")
    assert result.exit_code == 2
    assert "Input should be 'auto', 'crux', 'claude', 'zylos', 'bank' or 'notes'" in result.stderr
    with pytest.raises(UsageError, match="unknown layout 'nope'"):
        registry.get("nope")


def test_no_core_module_branches_on_a_layout_name():
    """Layout-specific behaviour is declared by the layout objects, not spelled out in the core."""
    branch = re.compile(r"""layout\s*(==|!=|in|not in)\s*[("'\[]""")
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted((REPO / "pipeline").rglob("*.py"))
        if "layouts" not in path.relative_to(REPO / "pipeline").parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if branch.search(line)
    ]
    assert offenders == []


def test_a_layout_that_keeps_no_read_hashes_gets_its_judged_actions_dropped_and_reported(plugins, notes_store):
    # A reader without `read_shas` would let apply act on content nobody can show was judged.
    plugins("notes_layout", NOTES_LAYOUT.replace("read_shas={path.name: hashlib.sha256(data).hexdigest()}", "read_shas={}"),
            "notes = notes_layout:LAYOUT")
    _corpus, _settings, plan = plan_store(str(notes_store), Settings(now=NOW, llm={"model": "none"}), say=lambda _m: None)

    assert plan.actions == []
    assert [(e.stage, e.message) for e in plan.errors] == [("plan", (
        "merge_duplicate of a.note, b.note dropped: the reader kept no hash of a.note, b.note, "
        "so apply could not tell whether it changed since the plan"))]
    before = {p.name: p.read_bytes() for p in notes_store.iterdir() if p.is_file()}
    applied = cli("apply", str(notes_store), "--yes", "--model", "none", "--now", NOW)
    assert applied.exit_code == 0, applied.output
    assert {p.name: p.read_bytes() for p in notes_store.iterdir() if p.is_file()} == before


def test_a_plugin_that_is_not_a_layout_is_told_what_it_lacks(plugins, tmp_path):
    plugins("half_layout", "class Half:\n    name = 'half'\n    markers = 'half.layout'\nLAYOUT = Half()\n", "half = half_layout:LAYOUT")
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("plan", str(empty), "--model", "none")
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("memconsolidate: layout plugin 'half' (half_layout:LAYOUT) is not a Layout: it lacks ")
    assert "links_by_name" in line and "detect" in line and "markers" not in line.split("lacks", 1)[1]


def test_a_layout_has_the_last_word_over_the_actions_the_retirement_cap_kept(plugins, notes_store):
    # `after_cap` (crux drops a leftover member's archive there): it sees what the cap kept, and the
    # plan keeps what it returns.
    hook = '''
    SEEN = []


    def after_cap(self, corpus, actions, live):
        SEEN.append(([a.kind for a in actions], live))
        return []


    NotesLayout.after_cap = after_cap
    '''
    plugins("notes_layout", NOTES_LAYOUT + textwrap.dedent(hook), "notes = notes_layout:LAYOUT")

    _corpus, _settings, plan = plan_store(str(notes_store), Settings(now=NOW, llm={"model": "none"}), say=lambda _m: None)
    capped = Settings(now=NOW, llm={"model": "none"}, max_retire_fraction=0)
    _corpus, _settings, held_back = plan_store(str(notes_store), capped, say=lambda _m: None)

    seen = sys.modules["notes_layout"].SEEN
    assert seen == [(["merge_duplicate"], ["a.note", "b.note", "c.note"]), ([], ["a.note", "b.note", "c.note"])]
    assert plan.actions == [] and held_back.actions == []
