"""The `crux` layout (CRUX memories): reader, writer and its own rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...config import CruxConfig, Settings
from ...kinds import ActionKind
from ...storage.since_plan import is_listing
from ...model import Action, Corpus, Memory
from ..base import REPORTS_DIR, ModuleLayout
from . import members, reader, rules, writer
from .rules.leftovers import without_stranded_members
from .rules.retire_order import least_valued_first


class CruxLayout(ModuleLayout):
    name = "crux"
    markers = reader.CONFIG_FILE
    config_model = CruxConfig
    consolidation_style = "crux"

    def stages(self, settings: Settings) -> frozenset[str]:
        crux = settings.crux
        # metadata consolidates and split splits only where the store enables consolidation.
        return frozenset({"rules"} | ({"metadata", "split"} if crux.enableMemoryConsolidation else set())
                         | ({"compress"} if crux.enableMemoryCompression else set()))

    def is_archived(self, m: Memory) -> bool:
        # A file in archived/ still typed as before is an archive the seed's file move cut short.
        return members.is_archived(m)

    def retire_first(self, corpus: Corpus, settings: Settings) -> Callable[[Action], Any]:
        # Under the cap, the lowest type and the longest unreferenced go first, the core waits.
        return least_valued_first(corpus, settings.crux, settings.now)

    def after_cap(self, corpus: Corpus, actions: list[Action], live: list[str]) -> list[Action]:
        # A leftover member's archive waits while its consolidated memory leaves or moves.
        return without_stranded_members(actions, live)

    def depends_on(self, corpus: Corpus, action: Action) -> list[str]:
        # The rebuilt index lists the memory files there are: a rebuild is judged on their folders'
        # listings too (reader.MemoryFolders.listings), so one added or removed since changes its fingerprint.
        return sorted(k for k in corpus.index_shas if is_listing(k)) if action.kind == ActionKind.REBUILD_INDEX else []

    def run_report(self, touched: list[str]) -> str | None:
        # The REM summary in the archive folder is crux's run report.
        reports = [p for p in touched if p.startswith(REPORTS_DIR)] or [p for p in touched if "/rem-" in p]
        return reports[0] if reports else None


LAYOUT = CruxLayout(reader, writer, rules.rules)
