"""Prompts ship inside the wheel as `pipeline/prompts/*.md` and an installed package finds them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from openai_server import write_prompt

REPO = Path(__file__).resolve().parent.parent
NETWORK_TROUBLE = ("Could not find a version", "NewConnectionError", "Failed to establish", "Temporary failure in name resolution", "No matching distribution")


def test_pyproject_maps_the_prompts_folder_into_the_package():
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = data["tool"]["setuptools"]
    assert "packages" not in setuptools  # found by setup.py, never listed by hand
    assert '"pipeline.prompts"' in (REPO / "setup.py").read_text(encoding="utf-8")
    assert setuptools["package-dir"]["pipeline.prompts"] == "prompts"
    assert "*.md" in setuptools["package-data"]["pipeline.prompts"]


def test_pyproject_ships_the_eval_data_as_a_package():
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = data["tool"]["setuptools"]
    assert setuptools["package-dir"]["pipeline.evals"] == "evals"
    assert '"pipeline.evals"' in (REPO / "setup.py").read_text(encoding="utf-8")
    patterns = setuptools["package-data"]["pipeline.evals"]
    shipped = {p.relative_to(REPO / "evals").as_posix() for pat in patterns for p in (REPO / "evals").glob(pat)}
    data_files = {p.relative_to(REPO / "evals").as_posix() for p in (REPO / "evals").rglob("*")
                  if p.is_file() and p.suffix in (".jsonl", ".toml", ".md")}
    assert data_files and data_files <= shipped, sorted(data_files - shipped)


def test_the_source_tree_prompts_are_found_in_an_editable_install():
    from pipeline.llm.prompts import prompts_root

    assert Path(str(prompts_root())).resolve() == (REPO / "prompts").resolve()


def _wheel_file(names: set[str]) -> str:
    (found,) = (n for n in names if n.endswith(".dist-info/WHEEL"))
    return found


@pytest.mark.slow
def test_wheel_contains_the_prompts_and_the_installed_package_loads_them(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "pipeline", src / "pipeline", ignore=ignore)
    shutil.copytree(REPO / "prompts", src / "prompts", ignore=ignore)
    shutil.copytree(REPO / "evals", src / "evals", ignore=ignore)
    write_prompt(src / "prompts", "wheelprobe", version="7", text="Probe prompt.")

    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
        capture_output=True, text=True, timeout=600,
    )
    if build.returncode != 0 and any(s in build.stdout + build.stderr for s in NETWORK_TROUBLE):
        pytest.skip("building a wheel needs setuptools from the package index, which is unreachable")
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("memconsolidate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"pipeline/prompts/{p.name}" for p in (src / "prompts").glob("*.md")}
    assert "pipeline/prompts/wheelprobe.md" in expected and expected <= names
    # Every subpackage of the source tree is in the wheel: none was forgotten in a hand-written list.
    packages = {p.relative_to(src).as_posix() for p in (src / "pipeline").rglob("__init__.py")}
    assert len(packages) > 10 and packages <= names, sorted(packages - names)
    # the eval data ships too, so `memconsolidate eval` works outside a checkout
    assert {"pipeline/evals/thresholds.toml", "pipeline/evals/datasets/dates.jsonl",
            "pipeline/evals/recordings/conflicts.jsonl"} <= names

    # Installed as an installer installs a pure-Python wheel (Root-Is-Purelib): its files unpacked
    # into a site folder (what `pip install --target` does, without another pip start-up).
    assert "Root-Is-Purelib: true" in zipfile.ZipFile(wheel).read(_wheel_file(names)).decode()
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import pipeline, pipeline.llm.prompts as p\n"
        "print(pipeline.__file__)\n"
        "print(p.prompts_root())\n"
        "print(p.load_prompt('wheelprobe').version)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=outside, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    package_file, root, version = run.stdout.splitlines()
    assert package_file.startswith(str(site))  # the installed copy, not the source tree
    assert str(site / "pipeline" / "prompts") in root and str(REPO) not in root
    assert version == "7"
    scored = subprocess.run([sys.executable, "-m", "pipeline", "eval", "--stage", "dates", "--json"],
                            capture_output=True, text=True, cwd=outside, env=env, timeout=300)
    assert scored.returncode == 0, scored.stderr[-2000:]
    assert json.loads(scored.stdout)["stage"] == "dates"
