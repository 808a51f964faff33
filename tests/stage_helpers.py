"""Running the LLM stages in-process on a store, for the stage tests."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import Settings, build_settings
from pipeline.plan import build_plan
from pipeline.stages import stage_runner
from pipeline.layouts.registry import open_store

from helpers import NOW


def settings_for(model: str = "stub", **llm) -> Settings:
    # The stage tests judge what a stage proposes on small stores, not the blast cap (tests/test_blast_cap.py).
    overrides = {"now": NOW, "llm.model": model, "llm.no_cache": True, "max_retire_fraction": 1.0}
    return build_settings({}, {**overrides, **{f"llm.{k}": v for k, v in llm.items()}})


def plan_with(root: Path, settings: Settings, client=None, only: set[str] | None = None) -> dict:
    """The plan, with the LLM stages run through `client` (default: the settings' own)."""
    corpus, settings = open_store(root, settings)
    return build_plan(corpus, settings, stage_runner(settings, client=client, only=only)).to_json_dict()


def of_kind(plan: dict, kind: str) -> list[dict]:
    return [a for a in plan["actions"] if a["kind"] == kind]
