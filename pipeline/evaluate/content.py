"""Evals of the content-writing stages (metadata, split): filled in as those stages land."""

from __future__ import annotations

from typing import Any, Callable

CONTENT_STAGES: dict[str, Callable[..., tuple[dict[str, Any], list[str]]]] = {}
