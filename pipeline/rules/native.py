"""Which form of the subject-pair search's inner loops runs: C or Python.

`pip install` builds `_pair_search.c` (an optional extension: an install without a C compiler goes on
without it). Each of its functions is the C form of a Python function that stays beside its caller as
the reference and the fallback (text.significant_tuples, subject_pairs.document_frequencies and
scored_pairs, hot_subjects.hot_signatures and bucket_neighbours); both give
the same values in the same order (tests/test_pair_search_native.py), so a plan's bytes never depend
on which one ran. MEMCONSOLIDATE_PURE_PYTHON=1 runs the Python forms (for a comparison or a bug hunt).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


def _compiled() -> ModuleType | None:
    if os.environ.get("MEMCONSOLIDATE_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(f"{__package__}._pair_search")
    except ImportError:
        return None


compiled = _compiled()


def preferred(reference: F) -> F:
    """The C form of `reference` (a function of the same name in _pair_search.c) when it is built,
    else `reference` itself."""
    if compiled is None:
        return reference
    fast: F = getattr(compiled, reference.__name__)
    return fast
