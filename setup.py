"""Package list for setuptools; everything else is in pyproject.toml.

pyproject.toml can either list packages or find them, not both, and `pipeline.prompts` lives outside
`pipeline/` (the top-level `prompts/` folder, mapped in `[tool.setuptools.package-dir]`), where no
finder looks. So the packages under `pipeline/` are found, and a new subpackage cannot silently fall
out of the wheel, and the prompts package is added by name; so is `pipeline.evals` (the top-level
`evals/` folder: datasets, thresholds, recordings, as data).

The one C extension, the subject-pair search's inner loops (pipeline/rules/native.py), is declared
here too, where every setuptools reads it: optional, so an install without a C compiler goes on and
their Python forms run.
"""

from setuptools import Extension, find_packages, setup

setup(
    packages=[*find_packages(include=["pipeline", "pipeline.*"]), "pipeline.prompts", "pipeline.evals"],
    ext_modules=[Extension("pipeline.rules._pair_search", ["pipeline/rules/_pair_search.c"], optional=True)],
)
