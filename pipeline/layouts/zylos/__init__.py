"""The `zylos` layout (tiered markdown): reader, writer and its own rules."""

from __future__ import annotations

from ...config import ZylosConfig
from ..base import ModuleLayout
from . import reader, rules, writer


class ZylosLayout(ModuleLayout):
    name = "zylos"
    markers = "identity.md + state.md"
    config_model = ZylosConfig


LAYOUT = ZylosLayout(reader, writer, rules.rules)
