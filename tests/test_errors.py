"""One exception root: every error the package defines derives from MemconsolidateError, and the
command line turns each into one line on stderr and the exit code its class carries."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import typer

import pipeline
from pipeline.cli_errors import guarded
from pipeline.errors import ConfigError, MemconsolidateError, RunFailed, UsageError

# Not errors: control flow inside one module, never seen outside it.
INTERNAL = {"pipeline.llm.cache._PickledRow"}


def _own_exceptions():
    for info in pkgutil.walk_packages(pipeline.__path__, "pipeline."):
        if info.name.endswith("__main__"):  # runs the command line when imported
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                yield f"{info.name}.{name}", obj


def test_every_exception_of_the_package_has_the_one_root():
    found = dict(_own_exceptions())
    assert "pipeline.errors.UsageError" in found and "pipeline.llm.errors.StageCallError" in found
    # An OSError subclass (journal.ChangedMeanwhile) stays in the OS errors' family: every caller
    # handles it as one, and the CLI says it with os_reason.
    strays = [
        name for name, cls in found.items()
        if not issubclass(cls, (MemconsolidateError, OSError)) and name not in INTERNAL
    ]
    assert strays == []


@pytest.mark.parametrize(("exc", "code"), [(UsageError("bad"), 2), (ConfigError("bad"), 2), (RunFailed("bad"), 1), (MemconsolidateError("bad"), 1)])
def test_the_cli_maps_each_error_to_its_exit_code(exc, code, capsys):
    def body():
        raise exc

    with pytest.raises(typer.Exit) as caught:
        guarded(body)
    assert caught.value.exit_code == code
    assert capsys.readouterr().err == "memconsolidate: bad\n"
