"""memconsolidate: keep AI-agent memory stores healthy.

The public API (everything in `__all__`)::

    from pipeline import Settings, open_store, build_plan, apply_plan, undo, status

    corpus, settings = open_store("path/to/store", Settings(now=date(2026, 11, 29)))
    plan = build_plan(corpus, settings)           # deterministic pass; stages via `run_stages`
    result = apply_plan(corpus, plan, settings)   # the automatic actions, journaled, under the lock
    undo("path/to/store", result.run_id)

Names are loaded on first use (PEP 562), so `import pipeline.model` stays as light as it was and no
submodule imports this file's exports back in a cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    # entry points
    "open_store": "pipeline.api",
    "build_plan": "pipeline.api",
    "apply_plan": "pipeline.api",
    "select_actions": "pipeline.api",
    "undo": "pipeline.api",
    "status": "pipeline.api",
    "ApplyResult": "pipeline.api",
    # settings
    "Settings": "pipeline.config",
    "build_settings": "pipeline.config",
    "load_user_config": "pipeline.storage.config_file",
    # records
    "Memory": "pipeline.model",
    "Tracker": "pipeline.model",
    "IndexEntry": "pipeline.model",
    "Corpus": "pipeline.model",
    "Action": "pipeline.model",
    "Finding": "pipeline.model",
    "Plan": "pipeline.model",
    "StageError": "pipeline.model",
    "Stats": "pipeline.model",
    "RunRecord": "pipeline.journal",
    # kinds
    "ActionKind": "pipeline.kinds",
    "FindingKind": "pipeline.kinds",
    "StaleClass": "pipeline.kinds",
    # errors
    "MemconsolidateError": "pipeline.errors",
    "UsageError": "pipeline.errors",
    "ConfigError": "pipeline.errors",
    "RunFailed": "pipeline.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, eagerly
    from .api import ApplyResult, apply_plan, build_plan, open_store, select_actions, status, undo
    from .config import Settings, build_settings
    from .storage.config_file import load_user_config
    from .errors import ConfigError, MemconsolidateError, RunFailed, UsageError
    from .journal import RunRecord
    from .kinds import ActionKind, FindingKind, StaleClass
    from .model import Action, Corpus, Finding, IndexEntry, Memory, Plan, StageError, Stats, Tracker
