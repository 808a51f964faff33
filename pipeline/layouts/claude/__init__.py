"""The `claude` layout (Claude Code auto-memory folders): reader, writer and its own rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...config import ClaudeConfig, Settings
from ...kinds import ActionKind
from ...storage.text_edits import TEXT_EDIT_KINDS
from ...model import Action, Corpus, Finding
from ...rules.outcome import Outcome
from ..base import ModuleLayout
from . import decisions, index_reads, reader, rules, writer

if TYPE_CHECKING:
    from ...changes import ChangeSet


class ClaudeLayout(ModuleLayout):
    name = "claude"
    markers = reader.INDEX
    catch_all = True  # crux and zylos stores, and others, may hold a MEMORY.md too
    config_model = ClaudeConfig
    consolidation_style = "claude"
    staleness_without_repo = True  # each folder is checked against the repository holding its .claude/
    evergreen_without_frontmatter = True
    links_by_name = True  # `[[name]]` between topic files: 613 links in 5 of the 15 wild stores

    def stages(self, settings: Settings) -> frozenset[str]:
        return frozenset({"metadata"})

    def guard(self, outcome: Outcome, settings: Settings) -> Outcome:
        return rules.hand_overs(outcome)

    def before_cap(self, corpus: Corpus, actions: list[Action], live: list[str]) -> list[Action]:
        # What apply would skip every time (an index or a memory it never edits or moves) is not
        # proposed, and takes no slot of the retirement cap.
        return rules.without_what_apply_leaves(corpus, rules.without_unedited_indexes(corpus, actions))

    def after_cap(self, corpus: Corpus, actions: list[Action], live: list[str]) -> list[Action]:
        # Both depend on what the capped plan archives: a rebuild asked for only by files the run's
        # own merges and prunes archive is moot, so is an edit of a file they archive; beside a
        # retirement the cap holds back, both stay.
        if not any(a.kind in TEXT_EDIT_KINDS or a.kind == ActionKind.REBUILD_INDEX for a in actions):
            return actions
        archived = rules.archived_by_apply(corpus, actions)  # a text edit archives nothing: the same for both
        return rules.without_settled_drift(corpus, rules.without_edits_of_archived(actions, archived), archived)

    def depends_on(self, corpus: Corpus, action: Action) -> list[str]:
        return index_reads.depends_on(corpus, action)

    def explain(self, corpus: Corpus, actions: list[Action], settings: Settings) -> list[Action]:
        # A conflict the file times date carries its newer side: what `--resolve newer` archives; one
        # with a side apply never moves or notes says `--resolve` leaves it instead.
        dated = rules.conflicts_left(corpus, actions, decisions.newer_sides(corpus, actions))
        return rules.explain(corpus, dated, settings)

    def changes(self, corpus: Corpus, actions: list[Action], settings: Settings, run_id: str, resolve: str | None,
                findings: list[Finding] | None = None) -> ChangeSet:
        # The report's "Flagged for Review" lists the plan's findings.
        return writer.changes(corpus, actions, settings, run_id, resolve, findings=findings)


LAYOUT = ClaudeLayout(reader, writer, rules.rules)
