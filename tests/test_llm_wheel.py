"""Prompts ship inside the wheel as `pipeline/prompts/*.md` and an installed package finds them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from openai_server import write_prompt

REPO = Path(__file__).resolve().parent.parent


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
    import pipeline
    from pipeline.llm.prompts import prompts_root

    # The tree the package is imported from (this checkout, or another one on PYTHONPATH beside an
    # editable install of this one): its prompts, not those of wherever the install points.
    tree = Path(pipeline.__file__).resolve().parent.parent
    assert (tree / "prompts").is_dir()
    assert Path(str(prompts_root())).resolve() == (tree / "prompts").resolve()


# What a wheel of this project holds besides its .dist-info: the tree setuptools' build_py writes
# (bdist_wheel runs build_py and packs its output as is; for this project the two file lists are
# identical). Built with the environment's setuptools in one process, not by pip in a build
# environment of its own (seconds of installing setuptools to build a few hundred files).
BUILD = (
    "import json, sys\n"
    "import setuptools  # noqa: F401 - its distutils\n"
    "from distutils.core import run_setup\n"
    "dist = run_setup('setup.py', ['-q', 'build_py', '--build-lib', sys.argv[1]])\n"
    "print(json.dumps({'name': dist.get_name(), 'ext_modules': bool(dist.has_ext_modules())}))\n"
)

# The installed package outside a checkout: where it loads from, its prompts, then `eval` as
# `python -m pipeline eval --stage dates --json` runs it (one interpreter for both).
INSTALLED = (
    "import runpy, sys\n"
    "import pipeline, pipeline.llm.prompts as p\n"
    "print(pipeline.__file__)\n"
    "print(p.prompts_root())\n"
    "print(p.load_prompt('wheelprobe').version)\n"
    "sys.argv = ['memconsolidate', 'eval', '--stage', 'dates', '--json']\n"
    "runpy.run_module('pipeline', run_name='__main__', alter_sys=True)\n"
)


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

    # installed as an installer installs a wheel: its files in a site folder (build_py: the Python files)
    site = tmp_path / "site"
    build = subprocess.run([sys.executable, "-c", BUILD, str(site)], capture_output=True, text=True, cwd=src, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    # One optional extension (the pair search's loops in C); build_py leaves it out, so the package
    # below runs their Python forms, as an install without a compiler does.
    assert json.loads(build.stdout.splitlines()[-1]) == {"name": "memconsolidate", "ext_modules": True}
    names = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    expected = {f"pipeline/prompts/{p.name}" for p in (src / "prompts").glob("*.md")}
    assert "pipeline/prompts/wheelprobe.md" in expected and expected <= names
    # Every subpackage of the source tree is in the wheel: none was forgotten in a hand-written list.
    packages = {p.relative_to(src).as_posix() for p in (src / "pipeline").rglob("__init__.py")}
    assert len(packages) > 10 and packages <= names, sorted(packages - names)
    # the eval data ships too, so `memconsolidate eval` works outside a checkout
    assert {"pipeline/evals/thresholds.toml", "pipeline/evals/datasets/dates.jsonl",
            "pipeline/evals/recordings/conflicts.jsonl"} <= names

    env = {**os.environ, "PYTHONPATH": str(site)}
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    run = subprocess.run([sys.executable, "-c", INSTALLED], capture_output=True, text=True, cwd=outside, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    package_file, root, version, scored = run.stdout.split("\n", 3)
    assert package_file.startswith(str(site))  # the installed copy, not the source tree
    assert str(site / "pipeline" / "prompts") in root and str(REPO) not in root
    assert version == "7"
    assert json.loads(scored)["stage"] == "dates"
